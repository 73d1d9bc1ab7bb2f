#include "hub/ops/array.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "hub/graph/autodiff.h"
#include "hub/graph/session.h"
#include "hub/ops/state.h"
#include "op_attrs.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {

// Expects building `op` on a placeholder of `shape` to fail with InvalidArgument
// mentioning `needle`.
void expect_build_error(const std::string& op, const Shape& shape, const Attrs& attrs, const std::string& needle) {
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, shape, "x");
  try {
    s.op(op, {x}, attrs, "bad");
    FAIL("expected an error building " << op);
  } catch (const Error& e) {
    CHECK(e.code() == Code::kInvalidArgument);
    std::string m = e.what();
    CHECK_MESSAGE(m.find("'bad'") != std::string::npos, m);
    CHECK_MESSAGE(m.find(needle) != std::string::npos, m);
  }
}

// Independent reference: transpose by per-element index arithmetic.
template <class T>
std::vector<T> naive_transpose(const std::vector<T>& in, const Ints& dims, const Ints& perm) {
  int r = static_cast<int>(dims.size());
  Ints out_dims(r), strides(r, 1);
  for (int i = r - 2; i >= 0; --i) strides[i] = strides[i + 1] * dims[i + 1];
  for (int i = 0; i < r; ++i) out_dims[i] = dims[perm[i]];
  std::vector<T> out(in.size());
  Ints idx(r, 0);
  for (size_t o = 0; o < out.size(); ++o) {
    int64_t src = 0;
    for (int i = 0; i < r; ++i) src += idx[i] * strides[perm[i]];
    out[o] = in[src];
    for (int i = r - 1; i >= 0; --i) {
      if (++idx[i] < out_dims[i]) break;
      idx[i] = 0;
    }
  }
  return out;
}

}  // namespace

TEST_CASE("Reshape: hand values, -1, no copy") {
  Tensor x = make({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor y = run_op("Reshape", {x}, Attrs().set("shape", Ints{3, -1}))[0];
  expect_close(y, make({3, 2}, {1, 2, 3, 4, 5, 6}));
  CHECK(y.shares_storage_with(x));
  Tensor s = run_op("Reshape", {make({1}, {7})}, Attrs().set("shape", Ints{}))[0];
  CHECK(s.shape() == Shape{});
  expect_build_error("Reshape", {2, 3}, Attrs().set("shape", Ints{-1, -1}), "more than one -1");
  expect_build_error("Reshape", {2, 3}, Attrs().set("shape", Ints{4, -1}), "[4,-1]");
  expect_build_error("Reshape", {2, 3}, Attrs().set("shape", Ints{5}), "6 elements");
  check_gradients("Reshape", {random_tensor({2, 3, 2}, 1)}, Attrs().set("shape", Ints{4, -1}));
}

TEST_CASE("Reshape: unknown batch dim at build time") {
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, Shape{kUnknownDim, 2, 3}, "x");
  Output y = ops::reshape(s, x, {-1, 6});
  CHECK(g.spec(y).shape == Shape{kUnknownDim, 6});
  Output z = ops::squeeze(s, ops::expand_dims(s, y, 1), {1});
  CHECK(g.spec(z).shape == Shape{kUnknownDim, 6});
  // Gradient reshapes back with x's run-time shape.
  Output gy = ops::placeholder(s, DType::kFloat32, Shape{kUnknownDim, 6}, "gy");
  std::vector<Output> grads = gradients(s, z, {x}, gy);
  Session sess(g, nullptr);
  Tensor xv = random_tensor({4, 2, 3}, 2);
  Tensor gv = random_tensor({4, 6}, 3);
  auto out = sess.run({{x, xv}, {gy, gv}}, {z, grads[0]});
  CHECK(out[0].shape() == Shape{4, 6});
  CHECK(out[0].to_vector<float>() == xv.to_vector<float>());
  CHECK(out[1].shape() == Shape{4, 2, 3});
  CHECK(out[1].to_vector<float>() == gv.to_vector<float>());
  // A partial slice of an unknown dim has no static gradient: a clear error.
  Output part = ops::slice(s, x, {1, 0, 0}, {2, -1, -1});
  CHECK_THROWS_WITH_AS(gradients(s, part, {x}, ops::placeholder(s, DType::kFloat32, {2, 2, 3}, "gp")),
                       doctest::Contains("only partly sliced"), Error);
}

TEST_CASE("Reshape, Pad and Tile: a shape that overflows int64 is refused, not computed") {
  // The fuzzer's find: the product of the target's dims overflowed before it was compared.
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, Shape{kUnknownDim, 4}, "x");
  CHECK_THROWS_WITH_AS(ops::reshape(s, x, {int64_t{1} << 40, int64_t{1} << 40, -1}),
                       doctest::Contains("more elements than an int64 counts"), Error);
  CHECK_THROWS_WITH_AS(ops::reshape(s, ops::placeholder(s, DType::kFloat32, {2, 4}, "y"), {3281472595382772, 65540}),
                       doctest::Contains("more elements than an int64 counts"), Error);
  // Pad's (the fuzzer's find, through an ONNX Pad).
  CHECK_THROWS_WITH_AS(s.op("Pad", {x},
                            Attrs()
                                .set("paddings", std::vector<int64_t>{0, 0, int64_t{1} << 62, int64_t{1} << 62})
                                .set("mode", std::string("CONSTANT"))),
                       doctest::Contains("overflow an int64 dim"), Error);
  // Tile's output dims likewise.
  CHECK_THROWS_WITH_AS(s.op("Tile", {x}, Attrs().set("multiples", std::vector<int64_t>{1, int64_t{1} << 62})),
                       doctest::Contains("overflow an int64 dim"), Error);
}

TEST_CASE("ReshapeLike") {
  Tensor x = make({6}, {1, 2, 3, 4, 5, 6});
  Tensor like = make({3, 2}, {0, 0, 0, 0, 0, 0});
  Tensor y = run_op("ReshapeLike", {x, like})[0];
  expect_close(y, make({3, 2}, {1, 2, 3, 4, 5, 6}));
  CHECK(y.shares_storage_with(x));
  hub::testing::GradCheckOptions o;
  o.inputs = {0};
  check_gradients("ReshapeLike", {random_tensor({6}, 3), like}, {}, o);
}

TEST_CASE("DynamicReshape and DynamicSlice: run-time dims from reference inputs") {
  // x [2, 12] -> [r0's dim 1, -1, 2] with r0 [5, 3]: [3, 4, 2].
  const Tensor x = iota({2, 12}, 1);
  const Tensor r0 = random_tensor({5, 3}, 1);
  const Attrs reshape = Attrs().set("shape", Ints{0, -1, 2}).set("from", Ints{0, 1, 1});
  Tensor y = run_op("DynamicReshape", {x, r0}, reshape)[0];
  CHECK(y.shape() == Shape{3, 4, 2});
  CHECK(y.to_vector<float>() == x.to_vector<float>());
  CHECK(y.shares_storage_with(x));
  // Built with reference dims unknown: the output's dims are unknown until run time, where each
  // run's shapes give them.
  Graph g;
  Scope s(g);
  Output xp = ops::placeholder(s, DType::kFloat32, Shape{kUnknownDim, kUnknownDim, 4}, "x");
  Output b = s.op("DynamicReshape", {xp, xp},
                  Attrs().set("shape", Ints{0, 0, 2, 2}).set("from", Ints{0, 1, 0, 1, 1, 1}), "split");
  CHECK(g.spec(b).shape == Shape{kUnknownDim, kUnknownDim, 2, 2});
  Session session(g, nullptr);
  for (const Shape& shape : {Shape{2, 3, 4}, Shape{1, 7, 4}}) {
    const Tensor v = random_tensor(shape, 2);
    const Tensor got = session.run_one({{xp, v}}, b);
    CHECK(got.shape() == Shape{shape[0], shape[1], 2, 2});
    CHECK(got.to_vector<float>() == v.to_vector<float>());
  }
  hub::testing::GradCheckOptions o;
  o.inputs = {0};
  check_gradients("DynamicReshape", {random_tensor({2, 12}, 3), r0}, reshape, o);
  expect_build_error("DynamicReshape", {2, 12}, Attrs().set("shape", Ints{0, -1}).set("from", Ints{0, 1}),
                     "not a list of (position, input, dim)");
  expect_build_error("DynamicReshape", {2, 12}, Attrs().set("shape", Ints{0, -1}).set("from", Ints{0, 1, 0}),
                     "input 1 has no dim 0");  // no input 1
  // DynamicSlice: rows [1, r0's dim 0 = 5) of an [8, 3] x; a reference beyond x's dim clamps (ONNX's Slice).
  const Tensor t = iota({8, 3}, 0);
  const Attrs slice = Attrs().set("begin", Ints{1, 0}).set("size", Ints{0, -1}).set("from", Ints{0, 1, 0});
  Tensor z = run_op("DynamicSlice", {t, r0}, slice)[0];
  CHECK(z.shape() == Shape{4, 3});
  CHECK(z.to_vector<float>() == std::vector<float>{3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14});
  CHECK(run_op("DynamicSlice", {t, random_tensor({20, 1}, 4)}, slice)[0].shape() == Shape{7, 3});
  CHECK(run_op("DynamicSlice", {t, random_tensor({1, 1}, 5)}, slice)[0].shape() == Shape{0, 3});
}

TEST_CASE("DynamicRange: positions up to a reference's dim") {
  const Tensor ref = random_tensor({2, 7}, 6);
  auto range = [&](int64_t start, int64_t delta, DType dtype) {
    return run_op("DynamicRange", {ref},
                  Attrs().set("start", start).set("delta", delta).set("dtype", dtype).set("from", Ints{0, 0, 1}))[0];
  };
  CHECK(range(0, 1, DType::kInt64).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6});
  CHECK(range(1, 3, DType::kInt32).to_vector<int32_t>() == std::vector<int32_t>{1, 4});   // below 7
  CHECK(range(10, -2, DType::kFloat32).to_vector<float>() == std::vector<float>{10, 8});  // above 7
  CHECK(range(9, 1, DType::kInt64).shape() == Shape{0});
  expect_build_error("DynamicRange", {2, 7}, Attrs().set("delta", int64_t{0}).set("from", Ints{0, 0, 1}), "delta is 0");
  expect_build_error("DynamicRange", {2, 7}, Attrs().set("from", Ints{0, 0, 2}), "input 0 has no dim 2");
}

TEST_CASE("Squeeze and ExpandDims") {
  Tensor x = make({1, 2, 1, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(run_op("Squeeze", {x})[0].shape() == Shape{2, 3});
  CHECK(run_op("Squeeze", {x}, Attrs().set("axes", Ints{2}))[0].shape() == Shape{1, 2, 3});
  CHECK(run_op("Squeeze", {x}, Attrs().set("axes", Ints{-4}))[0].shape() == Shape{2, 1, 3});
  Tensor y = run_op("Squeeze", {x})[0];
  CHECK(y.shares_storage_with(x));
  CHECK(y.to_vector<float>() == x.to_vector<float>());
  expect_build_error("Squeeze", {1, 2}, Attrs().set("axes", Ints{1}), "not 1");
  expect_build_error("Squeeze", {1, 2}, Attrs().set("axes", Ints{2}), "out of range");
  expect_build_error("Squeeze", {kUnknownDim, 1}, {}, "pass axes");

  Tensor z = make({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(run_op("ExpandDims", {z}, Attrs().set("axis", 0))[0].shape() == Shape{1, 2, 3});
  CHECK(run_op("ExpandDims", {z}, Attrs().set("axis", 1))[0].shape() == Shape{2, 1, 3});
  CHECK(run_op("ExpandDims", {z}, Attrs().set("axis", 2))[0].shape() == Shape{2, 3, 1});
  CHECK(run_op("ExpandDims", {z}, Attrs().set("axis", -1))[0].shape() == Shape{2, 3, 1});
  CHECK(run_op("ExpandDims", {z}, Attrs().set("axis", -3))[0].shape() == Shape{1, 2, 3});
  CHECK(run_op("ExpandDims", {z}, Attrs().set("axis", 0))[0].shares_storage_with(z));
  expect_build_error("ExpandDims", {2, 3}, Attrs().set("axis", 3), "out of range");
  expect_build_error("ExpandDims", {2, 3}, Attrs().set("axis", -4), "out of range");
  check_gradients("Squeeze", {random_tensor({1, 3, 1}, 4)});
  check_gradients("ExpandDims", {random_tensor({3, 2}, 5)}, Attrs().set("axis", -2));
}

TEST_CASE("Transpose: hand values") {
  Tensor x = make({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_close(run_op("Transpose", {x}, Attrs().set("perm", Ints{1, 0}))[0], make({3, 2}, {1, 4, 2, 5, 3, 6}));
  // [2,2,2] with perm [2,0,1]: y[i][j][k] = x[j][k][i].
  Tensor c = make({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  expect_close(run_op("Transpose", {c}, Attrs().set("perm", Ints{2, 0, 1}))[0],
               make({2, 2, 2}, {0, 2, 4, 6, 1, 3, 5, 7}));
  expect_close(run_op("Transpose", {c}, Attrs().set("perm", Ints{0, 1, 2}))[0], c);
  expect_build_error("Transpose", {2, 3}, Attrs().set("perm", Ints{0, 0}), "not a permutation");
  expect_build_error("Transpose", {2, 3}, Attrs().set("perm", Ints{1, 0, 2}), "3 entries");
}

TEST_CASE("Transpose: against index arithmetic on larger tensors and dtypes") {
  struct Case {
    Ints dims, perm;
  };
  std::vector<Case> cases = {
      {{64, 96}, {1, 0}},
      {{5, 33, 17, 3}, {0, 3, 1, 2}},  // NHWC -> NCHW
      {{5, 3, 33, 17}, {0, 2, 3, 1}},  // NCHW -> NHWC
      {{7, 1, 9, 4}, {3, 2, 1, 0}},
      {{2, 3, 4, 5, 6}, {4, 0, 3, 1, 2}},
      {{3, 2, 2, 3, 2, 2, 3}, {6, 5, 4, 3, 2, 1, 0}},  // merged rank 7
      {{4, 5, 6}, {1, 2, 0}},
  };
  for (const Case& k : cases) {
    INFO("dims " << Shape(k.dims).to_string());
    Tensor x = random_tensor(Shape(k.dims), 7);
    Tensor y = run_op("Transpose", {x}, Attrs().set("perm", k.perm))[0];
    CHECK(y.to_vector<float>() == naive_transpose(x.to_vector<float>(), k.dims, k.perm));
    std::vector<int64_t> iv(x.num_elements());
    for (size_t i = 0; i < iv.size(); ++i) iv[i] = static_cast<int64_t>(i) * 3 - 11;
    Tensor xi = Tensor::from_vector<int64_t>(Shape(k.dims), iv);
    CHECK(run_op("Transpose", {xi}, Attrs().set("perm", k.perm))[0].to_vector<int64_t>() ==
          naive_transpose(iv, k.dims, k.perm));
    std::vector<uint8_t> bv(x.num_elements());
    for (size_t i = 0; i < bv.size(); ++i) bv[i] = static_cast<uint8_t>(i * 7);
    Tensor xb = Tensor::from_vector<uint8_t>(Shape(k.dims), bv);
    CHECK(run_op("Transpose", {xb}, Attrs().set("perm", k.perm))[0].to_vector<uint8_t>() ==
          naive_transpose(bv, k.dims, k.perm));
  }
  check_gradients("Transpose", {random_tensor({2, 3, 4}, 8)}, Attrs().set("perm", Ints{2, 0, 1}));
}

TEST_CASE("Pad: hand values and gradient") {
  Tensor x = make({2, 2}, {1, 2, 3, 4});
  expect_close(run_op("Pad", {x}, Attrs().set("paddings", Ints{1, 0, 0, 2}))[0],
               make({3, 4}, {0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0}));
  expect_close(run_op("Pad", {make({2}, {5, 6})}, Attrs().set("paddings", Ints{2, 1}))[0], make({5}, {0, 0, 5, 6, 0}));
  Tensor xi = Tensor::from_vector<int32_t>({1, 2}, {7, 8});
  CHECK(run_op("Pad", {xi}, Attrs().set("paddings", Ints{0, 1, 1, 0}))[0].to_vector<int32_t>() ==
        std::vector<int32_t>{0, 7, 8, 0, 0, 0});
  expect_build_error("Pad", {2, 2}, Attrs().set("paddings", Ints{1, 1}), "need 4 entries");
  expect_build_error("Pad", {2, 2}, Attrs().set("paddings", Ints{1, 1, -1, 0}), "negative");
  check_gradients("Pad", {random_tensor({2, 3, 2}, 9)}, Attrs().set("paddings", Ints{0, 1, 2, 0, 1, 1}));
}

TEST_CASE("Slice: hand values and gradient") {
  Tensor x = make({3, 4}, {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23});
  expect_close(run_op("Slice", {x}, Attrs().set("begin", Ints{1, 1}).set("size", Ints{2, -1}))[0],
               make({2, 3}, {11, 12, 13, 21, 22, 23}));
  expect_close(run_op("Slice", {x}, Attrs().set("begin", Ints{0, 2}).set("size", Ints{-1, 1}))[0],
               make({3, 1}, {2, 12, 22}));
  expect_close(run_op("Slice", {x}, Attrs().set("begin", Ints{2, 0}).set("size", Ints{1, 4}))[0],
               make({1, 4}, {20, 21, 22, 23}));
  CHECK(run_op("Slice", {x}, Attrs().set("begin", Ints{3, 0}).set("size", Ints{0, 4}))[0].num_elements() == 0);
  expect_build_error("Slice", {3, 4}, Attrs().set("begin", Ints{2, 0}).set("size", Ints{2, 1}), "out of range");
  expect_build_error("Slice", {3, 4}, Attrs().set("begin", Ints{0}).set("size", Ints{1}), "2 entries");
  check_gradients("Slice", {random_tensor({3, 4, 2}, 10)},
                  Attrs().set("begin", Ints{1, 0, 1}).set("size", Ints{2, 3, -1}));
}

TEST_CASE("Concat: hand values, dtypes and gradient") {
  Tensor a = make({2, 2}, {1, 2, 3, 4});
  Tensor b = make({1, 2}, {5, 6});
  Tensor c = make({2, 1}, {7, 8});
  expect_close(run_op("Concat", {a, b}, Attrs().set("axis", 0))[0], make({3, 2}, {1, 2, 3, 4, 5, 6}));
  expect_close(run_op("Concat", {a, c, a}, Attrs().set("axis", -1))[0], make({2, 5}, {1, 2, 7, 1, 2, 3, 4, 8, 3, 4}));
  Tensor i1 = Tensor::from_vector<int64_t>({2}, {1, 2}), i2 = Tensor::from_vector<int64_t>({1}, {3});
  CHECK(run_op("Concat", {i1, i2}, Attrs().set("axis", 0))[0].to_vector<int64_t>() == std::vector<int64_t>{1, 2, 3});
  {
    Graph g;
    Scope s(g);
    Output pa = ops::placeholder(s, DType::kFloat32, {2, 2}, "a");
    Output pb = ops::placeholder(s, DType::kFloat32, {3, 3}, "b");
    CHECK_THROWS_AS(ops::concat(s, {pa, pb}, 1), Error);
    Output pu = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 2}, "u");
    CHECK(g.spec(ops::concat(s, {pa, pu}, 0)).shape == Shape{kUnknownDim, 2});
    CHECK(g.spec(ops::concat(s, {pa, pu}, 1)).shape == Shape{2, 4});
  }
  check_gradients("Concat", {random_tensor({2, 3}, 11), random_tensor({2, 1}, 12), random_tensor({2, 2}, 13)},
                  Attrs().set("axis", 1));
  check_gradients("Concat", {random_tensor({1, 3}, 14), random_tensor({2, 3}, 15)}, Attrs().set("axis", 0));
}

namespace {

// Expects running `op` on `inputs` to fail with InvalidArgument naming the
// node ('op') and containing `needle`.
void expect_run_error(const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs,
                      const std::string& needle) {
  expect_error(
      Code::kInvalidArgument, [&] { run_op(op, inputs, attrs); }, needle);
  expect_error(
      Code::kInvalidArgument, [&] { run_op(op, inputs, attrs); }, "node 'op' (" + op + ")");
}

}  // namespace

TEST_CASE("Split: equal parts, sizes with -1, negative axis, dtypes") {
  Tensor x = make({2, 6}, {0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15});
  auto parts = run_op("Split", {x}, split_attrs(1, 3));
  REQUIRE(parts.size() == 3);
  expect_close(parts[0], make({2, 2}, {0, 1, 10, 11}));
  expect_close(parts[1], make({2, 2}, {2, 3, 12, 13}));
  expect_close(parts[2], make({2, 2}, {4, 5, 14, 15}));
  auto sized = run_op("Split", {x}, split_attrs(-1, 0, {1, -1, 2}));
  REQUIRE(sized.size() == 3);
  expect_close(sized[0], make({2, 1}, {0, 10}));
  expect_close(sized[1], make({2, 3}, {1, 2, 3, 11, 12, 13}));
  expect_close(sized[2], make({2, 2}, {4, 5, 14, 15}));
  auto rows = run_op("Split", {x}, split_attrs(-2, 2));
  expect_close(rows[1], make({1, 6}, {10, 11, 12, 13, 14, 15}));
  // A zero-sized part and an int64 input.
  auto z = run_op("Split", {Tensor::from_vector<int64_t>({3}, {7, 8, 9})}, split_attrs(0, 0, {0, 3}));
  CHECK(z[0].shape() == Shape{0});
  CHECK(z[1].to_vector<int64_t>() == std::vector<int64_t>{7, 8, 9});
}

TEST_CASE("Split: gradients (a part without a gradient contributes zeros)") {
  Tensor x = random_tensor({3, 5, 2}, 20);
  for (int out = 0; out < 3; ++out) {
    GradCheckOptions o;
    o.output = out;
    check_gradients("Split", {x}, split_attrs(1, 0, {2, -1, 1}), o);
  }
  check_gradients("Split", {x}, split_attrs(0, 3));
  // The gradient is a Concat of the output gradients, zeros where none flows.
  Graph g;
  Scope s(g);
  Output in = ops::placeholder(s, DType::kFloat32, {4, 2}, "x");
  std::vector<Output> p = ops::split(s, in, 0, 2);
  Output dx = gradients(s, p[1], {in})[0];
  CHECK(g.node(dx).op == "Concat");
  Session sess(g, nullptr);
  expect_close(sess.run_one({{in, random_tensor({4, 2}, 1)}}, dx), make({4, 2}, {0, 0, 0, 0, 1, 1, 1, 1}));
}

TEST_CASE("Split: bad attributes name the node and the values") {
  expect_build_error("Split", {2, 6}, split_attrs(1, 4), "does not divide into num_split = 4");
  expect_build_error("Split", {2, 6}, split_attrs(1, 2, {3, 3}), "exactly one of num_split > 0 and sizes");
  expect_build_error("Split", {2, 6}, split_attrs(1, 0), "exactly one of");
  expect_build_error("Split", {2, 6}, split_attrs(1, 0, {2, 2}), "do not add up to dim 6");
  expect_build_error("Split", {2, 6}, split_attrs(1, 0, {-1, -1}), "one -1");
  expect_build_error("Split", {2, 6}, split_attrs(1, 0, {7, -1}), "do not add up");
  expect_build_error("Split", {2, 6}, split_attrs(2, 2), "out of range");
  // An unknown dim is checked when the run's shape is known.
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {kUnknownDim}, "x");
  std::vector<Output> p = ops::split(s, x, 0, 2, {}, "cut");
  CHECK(g.spec(p[0]).shape == Shape{kUnknownDim});
  Session sess(g, nullptr);
  CHECK(sess.run({{x, make({4}, {1, 2, 3, 4})}}, {p[1]})[0].to_vector<float>() == std::vector<float>{3, 4});
  expect_error(
      Code::kInvalidArgument,
      [&] {
        sess.run({{x, make({3}, {1, 2, 3})}}, {p[1]});
      },
      "node 'cut' (Split): dim 3");
}

TEST_CASE("Gather: axis, index ranks, batch_dims, dtypes") {
  Tensor p = make({3, 2}, {1, 2, 3, 4, 5, 6});
  for (Tensor idx : {Tensor::from_vector<int32_t>({3}, {2, 0, 2}), Tensor::from_vector<int64_t>({3}, {2, 0, 2})})
    expect_close(run_op("Gather", {p, idx})[0], make({3, 2}, {5, 6, 1, 2, 5, 6}));
  // axis 1 with [2,1] indices: y [3, 2, 1], y[i][j][0] = p[i][idx[j][0]].
  expect_close(run_op("Gather", {p, Tensor::from_vector<int64_t>({2, 1}, {1, 0})}, Attrs().set("axis", -1))[0],
               make({3, 2, 1}, {2, 1, 4, 3, 6, 5}));
  // Negative indices count from the end (ONNX).
  expect_close(run_op("Gather", {p, Tensor::from_vector<int32_t>({2}, {-1, -3})})[0], make({2, 2}, {5, 6, 1, 2}));
  expect_close(run_op("GatherGrad", {make({2, 2}, {1, 2, 3, 4}), Tensor::from_vector<int32_t>({2}, {-1, 2}),
                                     make({3, 2}, {0, 0, 0, 0, 0, 0})})[0],
               make({3, 2}, {0, 0, 0, 0, 4, 6}));
  // A scalar index drops the axis.
  expect_close(run_op("Gather", {p, Tensor::scalar<int64_t>(1)})[0], make({2}, {3, 4}));
  // batch_dims 1: y[b][n] = q[b][idx[b][n]].
  Tensor q = make({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor bidx = Tensor::from_vector<int32_t>({2, 2}, {2, 0, 1, 1});
  expect_close(run_op("Gather", {q, bidx}, Attrs().set("axis", 1).set("batch_dims", 1))[0], make({2, 2}, {3, 1, 5, 5}));
  expect_close(run_op("Gather", {q, bidx}, Attrs().set("axis", 1).set("batch_dims", -1))[0],
               make({2, 2}, {3, 1, 5, 5}));
  // Integer params (a Shape -> Gather chain) and empty indices.
  Tensor shape = Tensor::from_vector<int64_t>({4}, {8, 224, 224, 3});
  CHECK(run_op("Gather", {shape, Tensor::from_vector<int64_t>({2}, {3, 0})})[0].to_vector<int64_t>() ==
        std::vector<int64_t>{3, 8});
  CHECK(run_op("Gather", {p, Tensor::zeros(DType::kInt64, {0})})[0].shape() == Shape{0, 2});
}

TEST_CASE("Gather: an out-of-range index names the node, the value and the position") {
  Tensor p = make({3, 2}, {1, 2, 3, 4, 5, 6});
  expect_run_error("Gather", {p, Tensor::from_vector<int64_t>({3}, {0, 3, 1})}, {},
                   "index 3 at flat position 1 of indices int64[3] is outside [-3, 3) for axis 0 of params [3,2]");
  expect_run_error("Gather", {p, Tensor::from_vector<int32_t>({1}, {-3})}, Attrs().set("axis", 1),
                   "index -3 at flat position 0 of indices int32[1] is outside [-2, 2)");
  expect_run_error("GatherGrad", {make({1, 2}, {1, 1}), Tensor::from_vector<int32_t>({1}, {5}), p}, {}, "index 5");
}

TEST_CASE("Gather and GatherGrad: scatter-add with repeated indices; gradients") {
  // g rows added at rows 2, 0, 2 of params' shape.
  Tensor g = make({3, 2}, {1, 1, 2, 2, 3, 3});
  Tensor idx = Tensor::from_vector<int64_t>({3}, {2, 0, 2});
  expect_close(run_op("GatherGrad", {g, idx, make({3, 2}, {0, 0, 0, 0, 0, 0})})[0], make({3, 2}, {2, 2, 0, 0, 4, 4}));
  GradCheckOptions o;
  o.inputs = {0};
  check_gradients("Gather", {random_tensor({4, 3}, 30), idx}, {}, o);
  check_gradients("Gather", {random_tensor({2, 5, 3}, 31), Tensor::from_vector<int32_t>({2, 2}, {4, 4, 0, 2})},
                  Attrs().set("axis", 1), o);
  check_gradients("Gather", {random_tensor({2, 3, 2}, 32), Tensor::from_vector<int32_t>({2, 3}, {2, 2, 0, 1, 0, 0})},
                  Attrs().set("axis", 1).set("batch_dims", 1), o);
  // A large inner dim spreads over threads by chunks.
  Tensor big = random_tensor({3, 9000}, 33);
  Tensor rep = Tensor::from_vector<int64_t>({4}, {1, 1, 0, 1});
  Tensor gb = random_tensor({4, 9000}, 34);
  Tensor dp = run_op("GatherGrad", {gb, rep, big}, {})[0];
  std::vector<float> gv = gb.to_vector<float>(), dv = dp.to_vector<float>();
  bool ok = true;
  for (int i = 0; i < 9000; ++i) {
    ok = ok && dv[i] == gv[2 * 9000 + i];
    ok = ok && std::abs(dv[9000 + i] - (gv[i] + gv[9000 + i] + gv[3 * 9000 + i])) < 1e-5f;
    ok = ok && dv[2 * 9000 + i] == 0;
  }
  CHECK(ok);
}

TEST_CASE("Gather: bad inputs") {
  Graph g;
  Scope s(g);
  Output p = ops::placeholder(s, DType::kFloat32, {3, 2}, "p");
  Output fi = ops::placeholder(s, DType::kFloat32, {2}, "fi");
  Output ii = ops::placeholder(s, DType::kInt64, {2}, "ii");
  Output bi = ops::placeholder(s, DType::kInt64, {4, 1}, "bi");
  expect_error(
      Code::kInvalidArgument, [&] { ops::gather(s, p, fi, 0, 0, "g1"); }, "indices must be int32 or int64");
  expect_error(
      Code::kInvalidArgument, [&] { ops::gather(s, p, ii, 2, 0, "g2"); }, "axis 2 out of range");
  expect_error(
      Code::kInvalidArgument, [&] { ops::gather(s, p, ii, 1, 2, "g3"); }, "batch_dims 2");
  expect_error(
      Code::kInvalidArgument, [&] { ops::gather(s, p, bi, 1, 1, "g4"); }, "batch dim 0 differs");
  expect_error(
      Code::kInvalidArgument, [&] { ops::gather(s, p, bi, 0, 1, "g5"); }, "not exceed axis 0");
}

namespace {

// Independent reference for slices without masks: Python's slice.indices
// per dim (negative indices + len, clamped to [0, len] or [-1, len-1]), then
// a loop over the selected indices.
std::vector<int64_t> python_slice(int64_t len, int64_t start, int64_t stop, int64_t step) {
  auto fix = [&](int64_t v) {
    if (v < 0) v += len;
    return step > 0 ? std::clamp<int64_t>(v, 0, len) : std::clamp<int64_t>(v, -1, len - 1);
  };
  std::vector<int64_t> out;
  for (int64_t i = fix(start), e = fix(stop); step > 0 ? i < e : i > e; i += step) out.push_back(i);
  return out;
}

Tensor naive_strided_slice(const Tensor& x, const Ints& begin, const Ints& end, const Ints& strides) {
  int r = x.rank();
  std::vector<std::vector<int64_t>> pick(r);
  Shape out;
  for (int d = 0; d < r; ++d) {
    pick[d] = python_slice(x.dim(d), begin[d], end[d], strides[d]);
    out.push_back(static_cast<int64_t>(pick[d].size()));
  }
  std::vector<float> xv = x.to_vector<float>(), v;
  std::vector<size_t> idx(r, 0);
  int64_t n = out.num_elements();
  for (int64_t k = 0; k < n; ++k) {
    int64_t flat = 0;
    for (int d = 0; d < r; ++d) flat = flat * x.dim(d) + pick[d][idx[d]];
    v.push_back(xv[flat]);
    for (int d = r - 1; d >= 0; --d) {
      if (++idx[d] < pick[d].size()) break;
      idx[d] = 0;
    }
  }
  return make(out, v);
}

}  // namespace

TEST_CASE("StridedSlice: Python slicing on one dim (negative indices, clamping, negative strides)") {
  Tensor x = make({6}, {0, 1, 2, 3, 4, 5});
  auto run = [&](const Attrs& a) { return run_op("StridedSlice", {x}, a)[0]; };
  expect_close(run(ss({0}, {0}, {-1}, 1, 1)), make({6}, {5, 4, 3, 2, 1, 0}));  // x[::-1]
  expect_close(run(ss({4}, {1}, {-2})), make({2}, {4, 2}));                    // x[4:1:-2]
  expect_close(run(ss({-2}, {0}, {1}, 0, 1)), make({2}, {4, 5}));              // x[-2:]
  expect_close(run(ss({1}, {100}, {1})), make({5}, {1, 2, 3, 4, 5}));          // x[1:100]
  expect_close(run(ss({-100}, {2}, {1})), make({2}, {0, 1}));                  // x[-100:2]
  expect_close(run(ss({5}, {-100}, {-1})), make({6}, {5, 4, 3, 2, 1, 0}));     // x[5:-100:-1]
  expect_close(run(ss({100}, {2}, {-2})), make({2}, {5, 3}));                  // x[100:2:-2]
  expect_close(run(ss({-1}, {-7}, {-3})), make({2}, {5, 2}));                  // x[-1:-7:-3]
  expect_close(run(ss({0}, {6}, {4})), make({2}, {0, 4}));                     // x[0:6:4]
  CHECK(run(ss({4}, {2}, {1})).shape() == Shape{0});                           // x[4:2]
  CHECK(run(ss({2}, {4}, {-1})).shape() == Shape{0});                          // x[2:4:-1]
  // INT64 extremes as ends (ONNX's "to the end" and "to the start").
  const int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  expect_close(run(ss({3}, {kMax}, {1})), make({3}, {3, 4, 5}));
  expect_close(run(ss({kMax}, {kMin}, {-2})), make({3}, {5, 3, 1}));
  // Shrink: x[2], x[-1] are scalars.
  expect_close(run(ss({2}, {3}, {1}, 0, 0, 0, 0, 1)), Tensor::scalar<float>(2));
  expect_close(run(ss({-1}, {0}, {1}, 0, 0, 0, 0, 1)), Tensor::scalar<float>(5));
}

TEST_CASE("StridedSlice: masks on a [3,2,3] tensor (TF's documented examples)") {
  // t[i][j][k] = i*2 + j + 1 for every k.
  Tensor t = make({3, 2, 3}, {1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6});
  auto run = [&](const Attrs& a) { return run_op("StridedSlice", {t}, a)[0]; };
  expect_close(run(ss({1, 0, 0}, {2, 1, 3}, {1, 1, 1})), make({1, 1, 3}, {3, 3, 3}));
  expect_close(run(ss({1, 0, 0}, {2, 2, 3}, {1, 1, 1})), make({1, 2, 3}, {3, 3, 3, 4, 4, 4}));
  expect_close(run(ss({1, -1, 0}, {2, -3, 3}, {1, -1, 1})), make({1, 2, 3}, {4, 4, 4, 3, 3, 3}));
  // t[..., 0]: an ellipsis then a shrunk dim -> [3, 2].
  expect_close(run(ss({0, 0}, {0, 1}, {1, 1}, 0, 0, 1, 0, 2)), make({3, 2}, {1, 2, 3, 4, 5, 6}));
  // t[1]: shrink the first entry, the implicit ellipsis keeps the rest -> [2, 3].
  expect_close(run(ss({1}, {2}, {1}, 0, 0, 0, 0, 1)), make({2, 3}, {3, 3, 3, 4, 4, 4}));
  // t[:, tf.newaxis, -1, ::2] -> [3, 1, 2]: new axis, shrink, masked begin/end with stride 2.
  expect_close(run(ss({0, 0, -1, 0}, {0, 0, 0, 0}, {1, 1, 1, 2}, 0b1001, 0b1001, 0, 0b0010, 0b0100)),
               make({3, 1, 2}, {2, 2, 4, 4, 6, 6}));
  // t[tf.newaxis, ..., tf.newaxis] -> [1, 3, 2, 3, 1]; new axes after the ellipsis take no input dims.
  CHECK(run(ss({0, 0, 0}, {0, 0, 0}, {1, 1, 1}, 0, 0, 0b010, 0b101)).shape() == Shape{1, 3, 2, 3, 1});
  // t[..., ::-1] reverses the last dim only.
  Tensor r = run(ss({0, 0}, {0, 0}, {1, -1}, 0b10, 0b10, 0b01));
  CHECK(r.shape() == Shape{3, 2, 3});
  // An ellipsis covering nothing: t[0, :, 1, ...].
  expect_close(run(ss({0, 0, 1, 0}, {0, 0, 0, 0}, {1, 1, 1, 1}, 0b0010, 0b0010, 0b1000, 0, 0b0101)), make({2}, {1, 2}));
}

TEST_CASE("StridedSlice: against Python slicing on random specs, dtypes") {
  Tensor x = random_tensor({5, 4, 7}, 40);
  uint64_t state = 12345;
  auto next = [&](int64_t lo, int64_t hi) {  // uniform in [lo, hi]
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(hi - lo + 1));
  };
  for (int trial = 0; trial < 200; ++trial) {
    Ints b, e, st;
    for (int d = 0; d < 3; ++d) {
      int64_t len = x.dim(d);
      b.push_back(next(-len - 3, len + 3));
      e.push_back(next(-len - 3, len + 3));
      int64_t s = next(-3, 3);
      st.push_back(s == 0 ? 1 : s);
    }
    INFO("begin " << Shape(b).to_string() << " end " << Shape(e).to_string() << " strides " << Shape(st).to_string());
    expect_close(run_op("StridedSlice", {x}, ss(b, e, st))[0], naive_strided_slice(x, b, e, st));
  }
  // int64 and uint8 elements move unchanged.
  Tensor xi = Tensor::from_vector<int64_t>({5}, {10, 11, 12, 13, 14});
  CHECK(run_op("StridedSlice", {xi}, ss({-1}, {0}, {-2}))[0].to_vector<int64_t>() == std::vector<int64_t>{14, 12});
  Tensor xb = Tensor::from_vector<uint8_t>({2, 2}, {1, 2, 3, 4});
  CHECK(run_op("StridedSlice", {xb}, ss({1}, {0}, {-1}, 0, 1))[0].to_vector<uint8_t>() ==
        std::vector<uint8_t>{3, 4, 1, 2});
}

TEST_CASE("StridedSlice expresses ONNX Slice (listed axes sliced, the others masked)") {
  // ONNX's backend cases on x [20, 10, 5], mapped as the importer does.
  Tensor x = random_tensor({20, 10, 5}, 42);
  const int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  // test_slice: starts [0, 0], ends [3, 10], axes [0, 1]; axis 2 masked.
  expect_close(run_op("StridedSlice", {x}, ss({0, 0, 0}, {3, 10, 0}, {1, 1, 1}, 0b100, 0b100))[0],
               naive_strided_slice(x, {0, 0, 0}, {3, 10, 5}, {1, 1, 1}));
  // test_slice_neg_steps: starts [20, 10, 4], ends [0, 0, 1], steps [-1, -3, -2].
  expect_close(run_op("StridedSlice", {x}, ss({20, 10, 4}, {0, 0, 1}, {-1, -3, -2}))[0],
               naive_strided_slice(x, {20, 10, 4}, {0, 0, 1}, {-1, -3, -2}));
  // test_slice_end_out_of_bounds / start_out_of_bounds on axis 1.
  expect_close(run_op("StridedSlice", {x}, ss({0, 1, 0}, {0, 1000, 0}, {1, 1, 1}, 0b101, 0b101))[0],
               naive_strided_slice(x, {0, 1, 0}, {20, 1000, 5}, {1, 1, 1}));
  CHECK(run_op("StridedSlice", {x}, ss({0, 1000, 0}, {0, 1000, 0}, {1, 1, 1}, 0b101, 0b101))[0].shape() ==
        Shape{20, 0, 5});
  // INT64_MAX / INT64_MIN ends: to the end, and backwards through element 0.
  expect_close(run_op("StridedSlice", {x}, ss({2, 0, -1}, {kMax, 0, kMin}, {1, 1, -1}, 0b010, 0b010))[0],
               naive_strided_slice(x, {2, 0, 4}, {20, 10, -6}, {1, 1, -1}));
  // An end clamped to -1 with a negative step is an end_mask bit (-1 would count from the end).
  expect_close(run_op("StridedSlice", {x}, ss({0, 0, 3}, {0, 0, 0}, {1, 1, -1}, 0b011, 0b111))[0],
               naive_strided_slice(x, {0, 0, 3}, {20, 10, -6}, {1, 1, -1}));
}

TEST_CASE("StridedSlice: gradients, and StridedSliceGrad scatters into x's shape") {
  Tensor x = random_tensor({4, 3, 5}, 41);
  check_gradients("StridedSlice", {x}, ss({3, 0, 1}, {0, 3, 5}, {-2, 1, 2}));
  check_gradients("StridedSlice", {x}, ss({0, 1}, {0, 2}, {1, 1}, 0, 0, 0b01, 0, 0b10));
  check_gradients("StridedSlice", {x}, ss({0, 0, -1}, {0, 0, 0}, {1, 1, -1}, 0b011, 0b111, 0, 0b010));
  // dy [2] of x[1:4:2] lands at 1 and 3.
  expect_close(run_op("StridedSliceGrad", {make({5}, {0, 0, 0, 0, 0}), make({2}, {7, 8})}, ss({1}, {4}, {2}))[0],
               make({5}, {0, 7, 0, 8, 0}));
}

TEST_CASE("StridedSlice: bad specs name the node and the values") {
  expect_build_error("StridedSlice", {4}, ss({0}, {1, 2}, {1}), "differ in length");
  expect_build_error("StridedSlice", {4}, ss({0}, {4}, {0}), "stride 0 for dim 0");
  expect_build_error("StridedSlice", {4}, ss({4}, {5}, {1}, 0, 0, 0, 0, 1), "index 4 (shrink_axis) is out of range");
  expect_build_error("StridedSlice", {4}, ss({1}, {0}, {-1}, 0, 0, 0, 0, 1), "needs a positive stride");
  expect_build_error("StridedSlice", {4}, ss({0, 0}, {1, 1}, {1, 1}), "indexes past the 1 dims");
  expect_build_error("StridedSlice", {4, 4}, ss({0, 0}, {1, 1}, {1, 1}, 0, 0, 0b11), "more than one bit");
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 4}, "x");
  CHECK(g.spec(ops::strided_slice(s, x, {0, 1}, {0, 3}, {1, 1}, {.begin = 1, .end = 1})).shape ==
        Shape{kUnknownDim, 2});
  CHECK(g.spec(ops::strided_slice(s, x, {2}, {3}, {1}, {.shrink_axis = 1})).shape == Shape{4});
  Session sess(g, nullptr);
  Output y = ops::strided_slice(s, x, {2}, {3}, {1}, {.shrink_axis = 1}, "pick");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        sess.run({{x, random_tensor({2, 4}, 1)}}, {y});
      },
      "node 'pick' (StridedSlice): index 2 (shrink_axis) is out of range for dim 0 of size 2");
}

namespace {

// Independent reference: each output index mapped back to x's per dim.
Tensor naive_pad(const Tensor& x, const Ints& p, const std::string& mode) {
  int r = x.rank();
  Shape out;
  for (int d = 0; d < r; ++d) out.push_back(x.dim(d) + p[2 * d] + p[2 * d + 1]);
  std::vector<float> xv = x.to_vector<float>(), v;
  std::vector<int64_t> idx(r, 0);
  for (int64_t k = 0; k < out.num_elements(); ++k) {
    int64_t flat = 0;
    for (int d = 0; d < r; ++d) {
      int64_t n = x.dim(d), i = idx[d] - p[2 * d];
      if (mode == "REFLECT") i = i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i;
      if (mode == "SYMMETRIC") i = i < 0 ? -i - 1 : i >= n ? 2 * n - 1 - i : i;
      if (mode == "EDGE") i = std::clamp<int64_t>(i, 0, n - 1);
      flat = flat * n + i;
    }
    v.push_back(xv[flat]);
    for (int d = r - 1; d >= 0; --d) {
      if (++idx[d] < out[d]) break;
      idx[d] = 0;
    }
  }
  return make(out, v);
}

}  // namespace

TEST_CASE("Pad modes: hand values (TF MirrorPad's documented examples, ONNX edge)") {
  Tensor v = make({3}, {1, 2, 3});
  expect_close(run_op("Pad", {v}, pad_attrs({2, 2}, "REFLECT"))[0], make({7}, {3, 2, 1, 2, 3, 2, 1}));
  expect_close(run_op("Pad", {v}, pad_attrs({2, 2}, "SYMMETRIC"))[0], make({7}, {2, 1, 1, 2, 3, 3, 2}));
  expect_close(run_op("Pad", {v}, pad_attrs({2, 3}, "EDGE"))[0], make({8}, {1, 1, 1, 2, 3, 3, 3, 3}));
  expect_close(run_op("Pad", {v}, pad_attrs({1, 2}, "CONSTANT", 7.5f))[0], make({6}, {7.5f, 1, 2, 3, 7.5f, 7.5f}));
  Tensor t = make({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_close(run_op("Pad", {t}, pad_attrs({1, 1, 2, 2}, "REFLECT"))[0],
               make({4, 7}, {6, 5, 4, 5, 6, 5, 4, 3, 2, 1, 2, 3, 2, 1, 6, 5, 4, 5, 6, 5, 4, 3, 2, 1, 2, 3, 2, 1}));
  expect_close(run_op("Pad", {t}, pad_attrs({1, 1, 2, 2}, "SYMMETRIC"))[0],
               make({4, 7}, {2, 1, 1, 2, 3, 3, 2, 2, 1, 1, 2, 3, 3, 2, 5, 4, 4, 5, 6, 6, 5, 5, 4, 4, 5, 6, 6, 5}));
  expect_close(run_op("Pad", {t}, pad_attrs({0, 1, 1, 0}, "EDGE"))[0],
               make({3, 4}, {1, 1, 2, 3, 4, 4, 5, 6, 4, 4, 5, 6}));
  // Other dtypes: the constant cast to int32; mirrored int64.
  Tensor xi = Tensor::from_vector<int32_t>({2}, {7, 8});
  CHECK(run_op("Pad", {xi}, pad_attrs({1, 1}, "CONSTANT", -3))[0].to_vector<int32_t>() ==
        std::vector<int32_t>{-3, 7, 8, -3});
  Tensor xl = Tensor::from_vector<int64_t>({3}, {1, 2, 3});
  CHECK(run_op("Pad", {xl}, pad_attrs({2, 0}, "REFLECT"))[0].to_vector<int64_t>() ==
        std::vector<int64_t>{3, 2, 1, 2, 3});
}

TEST_CASE("Pad modes: against per-element index mapping on 3-D and 4-D shapes") {
  struct Case {
    Shape x;
    Ints p;
  };
  std::vector<Case> cases = {{{3, 4, 5}, {2, 1, 0, 3, 4, 2}},
                             {{2, 5, 7, 3}, {0, 0, 3, 3, 2, 4, 0, 0}},
                             {{1, 4, 1}, {0, 0, 3, 2, 0, 0}},
                             {{6, 2, 2}, {5, 5, 1, 1, 1, 0}}};
  uint64_t seed = 60;
  for (const Case& k : cases) {
    Tensor x = random_tensor(k.x, ++seed);
    for (const char* mode : {"REFLECT", "SYMMETRIC", "EDGE"}) {
      bool fits = true;
      for (int d = 0; d < k.x.rank(); ++d) {
        int64_t limit = std::string(mode) == "REFLECT" ? k.x[d] - 1 : std::string(mode) == "SYMMETRIC" ? k.x[d] : 1000;
        fits = fits && std::max(k.p[2 * d], k.p[2 * d + 1]) <= limit;
      }
      if (!fits) continue;
      INFO(mode << " x " << k.x.to_string() << " paddings " << Shape(k.p).to_string());
      CHECK(run_op("Pad", {x}, pad_attrs(k.p, mode))[0].to_vector<float>() ==
            naive_pad(x, k.p, mode).to_vector<float>());
    }
  }
}

TEST_CASE("Pad modes: gradients fold border contributions back") {
  // Gradient of ones through [1, 2, 3] padded (2, 2): each x element collects
  // the border positions that copy it.
  Tensor ones = make({7}, {1, 1, 1, 1, 1, 1, 1});
  expect_close(run_op("PadGrad", {ones}, Attrs().set("paddings", Ints{2, 2}).set("mode", "REFLECT"))[0],
               make({3}, {2, 3, 2}));
  expect_close(run_op("PadGrad", {ones}, Attrs().set("paddings", Ints{2, 2}).set("mode", "SYMMETRIC"))[0],
               make({3}, {2, 3, 2}));
  expect_close(run_op("PadGrad", {ones}, Attrs().set("paddings", Ints{2, 2}).set("mode", "EDGE"))[0],
               make({3}, {3, 1, 3}));
  Tensor x = random_tensor({3, 4, 2}, 70);
  check_gradients("Pad", {x}, pad_attrs({2, 1, 0, 3, 1, 1}, "REFLECT"));
  check_gradients("Pad", {x}, pad_attrs({3, 2, 4, 0, 2, 2}, "SYMMETRIC"));
  check_gradients("Pad", {x}, pad_attrs({4, 1, 0, 5, 1, 3}, "EDGE"));
  check_gradients("Pad", {x}, pad_attrs({1, 0, 0, 2, 1, 1}, "CONSTANT", 3));
}

TEST_CASE("Pad modes: bad modes and paddings name the node and the values") {
  expect_build_error("Pad", {3}, pad_attrs({1, 1}, "WRAP"), "mode 'WRAP' is not one of CONSTANT, REFLECT");
  expect_build_error("Pad", {3, 2}, pad_attrs({0, 0, 2, 0}, "REFLECT"),
                     "REFLECT padding of dim 1 (size 2) by 2 before and 0 after exceeds what it allows (size - 1)");
  expect_build_error("Pad", {3}, pad_attrs({0, 4}, "SYMMETRIC"), "exceeds what it allows (size)");
  expect_build_error("Pad", {0, 2}, pad_attrs({1, 0, 0, 0}, "EDGE"), "a non-empty dim");
  expect_build_error("PadGrad", {5}, Attrs().set("paddings", Ints{1, 1}).set("mode", "CONSTANT"), "not one of REFLECT");
  expect_build_error("PadGrad", {1}, Attrs().set("paddings", Ints{1, 1}).set("mode", "EDGE"), "smaller than paddings");
  // Unpadded empty dims are fine in every mode; an unknown dim is checked at run time.
  CHECK(run_op("Pad", {Tensor::zeros(DType::kFloat32, {0, 2})}, pad_attrs({0, 0, 1, 1}, "REFLECT"))[0].shape() ==
        Shape{0, 4});
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {kUnknownDim}, "x");
  Output y = ops::pad(s, x, {2, 0}, ops::PadMode::kReflect, 0, "mirror");
  Session sess(g, nullptr);
  expect_close(sess.run_one({{x, make({3}, {1, 2, 3})}}, y), make({5}, {3, 2, 1, 2, 3}));
  expect_error(
      Code::kInvalidArgument,
      [&] {
        sess.run_one({{x, make({2}, {1, 2})}}, y);
      },
      "node 'mirror' (Pad): REFLECT padding of dim 0 (size 2)");
}

TEST_CASE("Tile: hand values, dtypes, empty multiples; gradient sums the copies") {
  Tensor x = make({2, 3}, {1, 2, 3, 4, 5, 6});
  auto tile = [](Ints m) { return Attrs().set("multiples", m); };
  expect_close(run_op("Tile", {x}, tile({2, 1}))[0], make({4, 3}, {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6}));
  expect_close(run_op("Tile", {x}, tile({1, 2}))[0], make({2, 6}, {1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}));
  expect_close(run_op("Tile", {make({1, 2}, {7, 8})}, tile({2, 2}))[0], make({2, 4}, {7, 8, 7, 8, 7, 8, 7, 8}));
  CHECK(run_op("Tile", {x}, tile({0, 3}))[0].shape() == Shape{0, 9});
  Tensor b = Tensor::from_vector<bool>({2}, {true, false});
  CHECK(run_op("Tile", {b}, tile({3}))[0].to_vector<bool>() ==
        std::vector<bool>{true, false, true, false, true, false});
  Tensor l = Tensor::from_vector<int64_t>({1, 2}, {-1, int64_t{1} << 40});
  CHECK(run_op("Tile", {l}, tile({2, 1}))[0].to_vector<int64_t>() ==
        std::vector<int64_t>{-1, int64_t{1} << 40, -1, int64_t{1} << 40});
  // TileGrad: [2,4] gradient of a [1,2] tiled [2,2]: column sums of the copies.
  expect_close(run_op("TileGrad", {make({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}), make({1, 2}, {0, 0})}, tile({2, 2}))[0],
               make({1, 2}, {16, 20}));
  expect_close(run_op("TileGrad", {Tensor::zeros(DType::kFloat32, {0, 3}), x}, tile({0, 1}))[0],
               make({2, 3}, {0, 0, 0, 0, 0, 0}));
  check_gradients("Tile", {random_tensor({2, 1, 3}, 80)}, tile({2, 3, 1}));
  expect_build_error("Tile", {2, 3}, tile({2}), "need 2 entries");
  expect_build_error("Tile", {2, 3}, tile({1, -1}), "negative");
}

TEST_CASE("GatherElements: along each axis, negative indices, smaller index dims, int64 data; gradient") {
  // ONNX's example: data [[1, 2], [3, 4]], indices [[0, 0], [1, 0]], axis 1 -> [[1, 1], [4, 3]].
  Tensor x = make({2, 2}, {1, 2, 3, 4});
  Tensor idx = Tensor::from_vector<int64_t>({2, 2}, {0, 0, 1, 0});
  expect_close(run_op("GatherElements", {x, idx}, Attrs().set("axis", 1))[0], make({2, 2}, {1, 1, 4, 3}));
  // Axis 0, a negative index and fewer columns than x: y[i][j] = x[idx[i][j]][j].
  Tensor x3 = make({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor i3 = Tensor::from_vector<int32_t>({2, 2}, {1, -1, 2, 0});
  expect_close(run_op("GatherElements", {x3, i3}, Attrs().set("axis", 0))[0], make({2, 2}, {4, 8, 7, 2}));
  Tensor l = Tensor::from_vector<int64_t>({2, 3}, {10, 11, 12, 13, 14, 15});
  CHECK(run_op("GatherElements", {l, Tensor::from_vector<int64_t>({2, 1}, {2, 0})}, Attrs().set("axis", -1))[0]
            .to_vector<int64_t>() == std::vector<int64_t>{12, 13});
  // Out of range: the node, the index and its position.
  expect_error(
      Code::kInvalidArgument,
      [&] {
        run_op("GatherElements", {x, Tensor::from_vector<int64_t>({1, 1}, {2})}, Attrs().set("axis", 1));
      },
      "index 2 at flat position 0");
  // Repeated indices accumulate in the gradient.
  auto g = run_op("GatherElementsGrad", {make({2, 2}, {1, 2, 3, 4}), idx, x}, Attrs().set("axis", 1));
  expect_close(g[0], make({2, 2}, {3, 0, 4, 3}));
  GradCheckOptions x_only;
  x_only.inputs = {0};
  check_gradients(
      "GatherElements",
      {random_tensor({3, 4, 2}, 31), Tensor::from_vector<int64_t>({3, 2, 2}, {0, 3, 1, 1, 2, 2, -1, 0, 3, 3, 0, 1})},
      Attrs().set("axis", 1), x_only);
  Graph graph;
  Scope s(graph);
  Output f = ops::placeholder(s, DType::kFloat32, {2, 3}, "f");
  CHECK_THROWS_AS(s.op("GatherElements", {f, ops::placeholder(s, DType::kInt64, {3}, "rank1")}, {}), Error);
  CHECK_THROWS_AS(
      s.op("GatherElements", {f, ops::placeholder(s, DType::kInt64, {2, 4}, "wide")}, Attrs().set("axis", 0)), Error);
}

TEST_CASE("GatherND: ONNX's examples, batch_dims, negative indices, errors; gradient") {
  const Tensor x = make({2, 2}, {0, 1, 2, 3});
  // Whole tuples pick elements; one-entry tuples pick rows.
  expect_close(run_op("GatherND", {x, Tensor::from_vector<int64_t>({2, 2}, {0, 0, 1, 1})})[0], make({2}, {0, 3}));
  expect_close(run_op("GatherND", {x, Tensor::from_vector<int64_t>({2, 1}, {1, 0})})[0], make({2, 2}, {2, 3, 0, 1}));
  const Tensor cube = Tensor::from_vector<int64_t>({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(run_op("GatherND", {cube, Tensor::from_vector<int32_t>({2, 2}, {0, 1, 1, 0})})[0].to_vector<int64_t>() ==
        std::vector<int64_t>{2, 3, 4, 5});
  // batch_dims 1: each batch's own tuple; -1 is the last row.
  const Attrs batch = Attrs().set("batch_dims", int64_t{1});
  CHECK(run_op("GatherND", {cube, Tensor::from_vector<int64_t>({2, 1}, {1, 0})}, batch)[0].to_vector<int64_t>() ==
        std::vector<int64_t>{2, 3, 4, 5});
  CHECK(run_op("GatherND", {cube, Tensor::from_vector<int64_t>({2, 1}, {-1, -2})}, batch)[0].to_vector<int64_t>() ==
        std::vector<int64_t>{2, 3, 4, 5});
  expect_error(
      Code::kInvalidArgument,
      [&] {
        run_op("GatherND", {x, Tensor::from_vector<int64_t>({1, 2}, {0, 2})});
      },
      "index 2 (entry 1 of tuple 0 of indices int64[1,2]) is outside [-2, 2) for dim 1 of [2,2]");
  Graph graph;
  Scope s(graph);
  Output f = ops::placeholder(s, DType::kFloat32, {2, 3}, "f");
  CHECK_THROWS_WITH_AS(s.op("GatherND", {f, ops::placeholder(s, DType::kInt64, {4, 3}, "long")}),
                       doctest::Contains("index 3 dims of x"), Error);
  GradCheckOptions x_only;
  x_only.inputs = {0};
  check_gradients("GatherND", {random_tensor({3, 4, 2}, 41), Tensor::from_vector<int64_t>({2, 2}, {0, 3, 2, -1})}, {},
                  x_only);
}

TEST_CASE("ScatterND: ONNX's example, every reduction over a repeated index, errors; gradients") {
  const Tensor data = make({8}, {1, 2, 3, 4, 5, 6, 7, 8});
  expect_close(
      run_op("ScatterND", {data, Tensor::from_vector<int64_t>({4, 1}, {4, 3, 1, 7}), make({4}, {9, 10, 11, 12})})[0],
      make({8}, {1, 11, 3, 10, 9, 6, 7, 12}));
  const Tensor four = make({4}, {1, 2, 3, 4});
  const Tensor twice = Tensor::from_vector<int64_t>({2, 1}, {1, 1});
  const Tensor up = make({2}, {10, -20});
  auto with = [](const char* r) { return Attrs().set("reduction", std::string(r)); };
  expect_close(run_op("ScatterND", {four, twice, up})[0], make({4}, {1, -20, 3, 4}));  // the last one wins
  expect_close(run_op("ScatterND", {four, twice, up}, with("add"))[0], make({4}, {1, -8, 3, 4}));
  expect_close(run_op("ScatterND", {four, twice, up}, with("mul"))[0], make({4}, {1, -400, 3, 4}));
  expect_close(run_op("ScatterND", {four, twice, up}, with("max"))[0], make({4}, {1, 10, 3, 4}));
  expect_close(run_op("ScatterND", {four, twice, up}, with("min"))[0], make({4}, {1, -20, 3, 4}));
  // Rows of a matrix, int32 data.
  const Tensor m = Tensor::from_vector<int32_t>({3, 2}, {1, 2, 3, 4, 5, 6});
  CHECK(run_op("ScatterND",
               {m, Tensor::from_vector<int64_t>({1, 1}, {-1}), Tensor::from_vector<int32_t>({1, 2}, {7, 8})})[0]
            .to_vector<int32_t>() == std::vector<int32_t>{1, 2, 3, 4, 7, 8});
  expect_error(
      Code::kInvalidArgument,
      [&] {
        run_op("ScatterND", {four, Tensor::from_vector<int64_t>({1, 1}, {4}), make({1}, {0})});
      },
      "index 4 (entry 0 of tuple 0");
  Graph graph;
  Scope s(graph);
  Output f = ops::placeholder(s, DType::kFloat32, {4}, "f");
  CHECK_THROWS_WITH_AS(s.op("ScatterND", {f, ops::placeholder(s, DType::kInt64, {2, 1}, "i"),
                                          ops::placeholder(s, DType::kFloat32, {3}, "u")}),
                       doctest::Contains("must be [2]"), Error);
  CHECK_THROWS_WITH_AS(
      s.op("ScatterND",
           {f, ops::placeholder(s, DType::kInt64, {2, 1}, "i2"), ops::placeholder(s, DType::kFloat32, {2}, "u2")},
           with("sum")),
      doctest::Contains("reduction 'sum' is not one of none, add, mul, max, min"), Error);
  GradCheckOptions data_and_updates;
  data_and_updates.inputs = {0, 2};
  const Tensor rows = Tensor::from_vector<int64_t>({2, 1}, {2, 0});
  check_gradients("ScatterND", {random_tensor({3, 4}, 42), rows, random_tensor({2, 4}, 43)}, {}, data_and_updates);
  check_gradients("ScatterND", {random_tensor({3, 4}, 44), rows, random_tensor({2, 4}, 45)}, with("add"),
                  data_and_updates);
}

TEST_CASE("ScatterElements: ONNX's examples, negative indices, reductions; gradients") {
  // Axis 0: updates[i][j] goes to row indices[i][j], column j.
  expect_close(run_op("ScatterElements",
                      {Tensor::zeros(DType::kFloat32, {3, 3}), Tensor::from_vector<int64_t>({2, 3}, {1, 0, 2, 0, 2, 1}),
                       make({2, 3}, {1.0f, 1.1f, 1.2f, 2.0f, 2.1f, 2.2f})})[0],
               make({3, 3}, {2.0f, 1.1f, 0, 1.0f, 0, 2.2f, 0, 2.1f, 1.2f}));
  const Tensor row = make({1, 5}, {1, 2, 3, 4, 5});
  const Attrs axis1 = Attrs().set("axis", int64_t{1});
  expect_close(run_op("ScatterElements",
                      {row, Tensor::from_vector<int64_t>({1, 2}, {1, 3}), make({1, 2}, {1.1f, 2.1f})}, axis1)[0],
               make({1, 5}, {1, 1.1f, 3, 2.1f, 5}));
  expect_close(run_op("ScatterElements",
                      {row, Tensor::from_vector<int32_t>({1, 2}, {1, -3}), make({1, 2}, {1.1f, 2.1f})}, axis1)[0],
               make({1, 5}, {1, 1.1f, 2.1f, 4, 5}));
  Attrs add = axis1;
  add.set("reduction", std::string("add"));
  expect_close(run_op("ScatterElements",
                      {row, Tensor::from_vector<int64_t>({1, 2}, {1, 1}), make({1, 2}, {1.1f, 2.1f})}, add)[0],
               make({1, 5}, {1, 5.2f, 3, 4, 5}));
  expect_error(
      Code::kInvalidArgument,
      [&] {
        run_op("ScatterElements", {row, Tensor::from_vector<int64_t>({1, 1}, {5}), make({1, 1}, {0})}, axis1);
      },
      "index 5 at flat position 0");
  GradCheckOptions data_and_updates;
  data_and_updates.inputs = {0, 2};
  const Tensor idx = Tensor::from_vector<int64_t>({2, 3}, {2, 0, 1, 0, 2, 3});  // distinct per row along axis 1
  check_gradients("ScatterElements", {random_tensor({2, 4}, 46), idx, random_tensor({2, 3}, 47)}, axis1,
                  data_and_updates);
  check_gradients("ScatterElements", {random_tensor({2, 4}, 48), idx, random_tensor({2, 3}, 49)}, add,
                  data_and_updates);
}

TEST_CASE("ReverseSequence: hand-worked, both axis orders, its own gradient, lengths checked") {
  // x [time 3, batch 2]: batch 0 reversed over 3 steps, batch 1 over 2.
  Tensor x = make({3, 2}, {1, 10, 2, 20, 3, 30});
  Attrs a = Attrs().set("batch_axis", int64_t{1}).set("time_axis", int64_t{0});
  Tensor y = run_op("ReverseSequence", {x, Tensor::from_vector<int64_t>({2}, {3, 2})}, a)[0];
  CHECK(y.to_vector<float>() == std::vector<float>{3, 20, 2, 10, 1, 30});
  // [batch 2, time 3, 2], int32 lengths 0 and 3.
  Tensor z = iota({2, 3, 2});
  Attrs b = Attrs().set("batch_axis", int64_t{0}).set("time_axis", int64_t{1});
  y = run_op("ReverseSequence", {z, Tensor::from_vector<int32_t>({2}, {0, 3})}, b)[0];
  CHECK(y.to_vector<float>() == std::vector<float>{0, 1, 2, 3, 4, 5, 10, 11, 8, 9, 6, 7});
  // d/dx sum(w * ReverseSequence(x)) = ReverseSequence(w): checked by finite differences.
  check_gradients("ReverseSequence", {random_tensor({3, 2, 2}, 3), Tensor::from_vector<int64_t>({2}, {2, 3})}, a);
  CHECK_THROWS_WITH_AS(run_op("ReverseSequence", {x, Tensor::from_vector<int64_t>({2}, {4, 1})}, a),
                       doctest::Contains("length 4 of batch element 0 is outside [0, 3]"), Error);
  CHECK_THROWS_WITH_AS(run_op("ReverseSequence", {x, Tensor::from_vector<int64_t>({3}, {1, 1, 1})}, a),
                       doctest::Contains("one entry per batch element"), Error);
}

TEST_CASE("DynamicStridedSlice: ONNX Slice bounds read at run time, hand-computed") {
  // x = 0..11 as [3, 4].
  std::vector<float> v(12);
  std::iota(v.begin(), v.end(), 0.0f);
  const Tensor x = make({3, 4}, v);
  auto slice = [&](std::vector<int64_t> starts, std::vector<int64_t> ends, Ints axes, Ints steps) {
    const auto k = static_cast<int64_t>(starts.size());
    return run_op("DynamicStridedSlice",
                  {x, Tensor::from_vector<int64_t>({k}, starts), Tensor::from_vector<int64_t>({k}, ends)},
                  Attrs().set("axes", axes).set("steps", steps))[0];
  };
  Tensor y = slice({1}, {2}, {0}, {1});  // row 1
  CHECK(y.shape() == Shape{1, 4});
  CHECK(y.to_vector<float>() == std::vector<float>{4, 5, 6, 7});
  y = slice({0, -1}, {100, -100}, {0, 1}, {2, -2});  // rows 0, 2; columns 3, 1
  CHECK(y.shape() == Shape{2, 2});
  CHECK(y.to_vector<float>() == std::vector<float>{3, 1, 11, 9});
  y = slice({0}, {-1}, {1}, {1});  // x[:, :-1]
  CHECK(y.to_vector<float>() == std::vector<float>{0, 1, 2, 4, 5, 6, 8, 9, 10});
  CHECK(slice({3}, {1}, {0}, {1}).shape() == Shape{0, 4});  // an empty range
  // int32 bounds too; the count must match the axes.
  y = run_op("DynamicStridedSlice",
             {x, Tensor::from_vector<int32_t>({1}, {-2}), Tensor::from_vector<int32_t>({1}, {4})},
             Attrs().set("axes", Ints{1}).set("steps", Ints{1}))[0];
  CHECK(y.to_vector<float>() == std::vector<float>{2, 3, 6, 7, 10, 11});
  CHECK_THROWS_WITH(run_op("DynamicStridedSlice",
                           {x, Tensor::from_vector<int64_t>({2}, {0, 0}), Tensor::from_vector<int64_t>({2}, {1, 1})},
                           Attrs().set("axes", Ints{1}).set("steps", Ints{1})),
                    doctest::Contains("1-D with 1 entries"));
  CHECK_THROWS_WITH(
      run_op("DynamicStridedSlice", {x, Tensor::from_vector<int64_t>({1}, {0}), Tensor::from_vector<int64_t>({1}, {1})},
             Attrs().set("axes", Ints{2}).set("steps", Ints{1})),
      doctest::Contains("are not distinct dims"));
}

TEST_CASE("ListSetItem: appends at the end, replaces a row, and an empty list takes the item's shape") {
  auto set = [](const Tensor& list, int64_t index, const Tensor& item) {
    return run_op("ListSetItem", {list, Tensor::scalar<int64_t>(index), item})[0];
  };
  // An empty list recorded as [0, 0, 2] (its batch unknown when it was reserved) takes [1, 3, 2].
  Tensor list = set(make({0, 0, 2}, {}), 0, make({3, 2}, {1, 2, 3, 4, 5, 6}));
  CHECK(list.shape() == Shape{1, 3, 2});
  list = set(list, 1, make({3, 2}, {7, 8, 9, 10, 11, 12}));
  CHECK(list.shape() == Shape{2, 3, 2});
  list = set(list, 0, make({3, 2}, {0, 0, 0, 0, 0, -1}));
  CHECK(list.to_vector<float>() == std::vector<float>{0, 0, 0, 0, 0, -1, 7, 8, 9, 10, 11, 12});
  CHECK_THROWS_WITH(set(list, 3, make({3, 2}, {1, 2, 3, 4, 5, 6})),
                    doctest::Contains("index 3 is outside a list of 2"));
  CHECK_THROWS_WITH(set(list, 1, make({2, 3}, {1, 2, 3, 4, 5, 6})), doctest::Contains("is not a row of the list"));
}
