#include <doctest/doctest.h>

#include "hub/graph/autodiff.h"
#include "hub/graph/session.h"
#include "hub/ops/array.h"
#include "hub/ops/state.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {

using Ints = std::vector<int64_t>;

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
template <class T> std::vector<T> naive_transpose(const std::vector<T>& in, const Ints& dims, const Ints& perm) {
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
      {{5, 33, 17, 3}, {0, 3, 1, 2}},   // NHWC -> NCHW
      {{5, 3, 33, 17}, {0, 2, 3, 1}},   // NCHW -> NHWC
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
  expect_close(run_op("Pad", {make({2}, {5, 6})}, Attrs().set("paddings", Ints{2, 1}))[0],
               make({5}, {0, 0, 5, 6, 0}));
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
  expect_close(run_op("Concat", {a, c, a}, Attrs().set("axis", -1))[0],
               make({2, 5}, {1, 2, 7, 1, 2, 3, 4, 8, 3, 4}));
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
