#include "hub/ops/matmul.h"

#include <doctest/doctest.h>

#include <algorithm>

#include "hub/graph/autodiff.h"
#include "hub/graph/session.h"
#include "hub/ops/array.h"
#include "hub/ops/state.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {
Attrs mm(bool ta, bool tb) { return Attrs().set("transpose_a", ta).set("transpose_b", tb); }

// Independent reference: C[i][j] = sum_k op(a)[i][k] op(b)[k][j] in double.
Tensor naive_matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  int64_t m = ta ? a.dim(1) : a.dim(0), k = ta ? a.dim(0) : a.dim(1), n = tb ? b.dim(0) : b.dim(1);
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  std::vector<float> c(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t q = 0; q < k; ++q)
        s += static_cast<double>(ta ? pa[q * m + i] : pa[i * k + q]) * (tb ? pb[j * k + q] : pb[q * n + j]);
      c[i * n + j] = static_cast<float>(s);
    }
  return make({m, n}, c);
}

Attrs adj(bool ax, bool ay) { return Attrs().set("adj_x", ax).set("adj_y", ay); }

// Independent reference for BatchMatMul: per output batch index, the operands'
// batch indices by NumPy broadcasting (right-aligned; size 1 repeats), then
// naive_matmul on the two matrices.
Tensor naive_batch_matmul(const Tensor& x, const Tensor& y, bool ax, bool ay) {
  int r = std::max(x.rank(), y.rank());
  auto batch_dim = [r](const Tensor& t, int i) {  // i-th of r-2 output batch dims
    int j = i - (r - t.rank());
    return j < 0 ? int64_t{1} : t.dim(j);
  };
  std::vector<int64_t> out_batch;
  for (int i = 0; i < r - 2; ++i) out_batch.push_back(std::max(batch_dim(x, i), batch_dim(y, i)));
  auto matrix = [&](const Tensor& t, const std::vector<int64_t>& idx) {
    int64_t rows = t.dim(-2), cols = t.dim(-1), flat = 0;
    for (int i = 0; i < r - 2; ++i) {
      int64_t d = batch_dim(t, i);
      if (i >= r - t.rank()) flat = flat * d + (d == 1 ? 0 : idx[i]);
    }
    std::vector<float> v = t.to_vector<float>();
    return make({rows, cols}, std::vector<float>(v.begin() + flat * rows * cols, v.begin() + (flat + 1) * rows * cols));
  };
  std::vector<float> out;
  int64_t m = 0, n = 0, batches = 1;
  for (int64_t d : out_batch) batches *= d;
  for (int64_t b = 0; b < batches; ++b) {
    std::vector<int64_t> idx(out_batch.size());
    for (int64_t i = static_cast<int64_t>(out_batch.size()) - 1, rem = b; i >= 0; --i) {
      idx[i] = rem % out_batch[i];
      rem /= out_batch[i];
    }
    Tensor c = naive_matmul(matrix(x, idx), matrix(y, idx), ax, ay);
    m = c.dim(0), n = c.dim(1);
    std::vector<float> cv = c.to_vector<float>();
    out.insert(out.end(), cv.begin(), cv.end());
  }
  out_batch.push_back(m);
  out_batch.push_back(n);
  return make(Shape(out_batch), out);
}
}  // namespace

TEST_CASE("MatMul: hand values for every transpose combination") {
  Tensor a = make({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = make({3, 2}, {7, 8, 9, 10, 11, 12});
  // [1 2 3; 4 5 6] [7 8; 9 10; 11 12] = [58 64; 139 154]
  Tensor want = make({2, 2}, {58, 64, 139, 154});
  Tensor at = make({3, 2}, {1, 4, 2, 5, 3, 6});
  Tensor bt = make({2, 3}, {7, 9, 11, 8, 10, 12});
  expect_close(run_op("MatMul", {a, b}, mm(false, false))[0], want);
  expect_close(run_op("MatMul", {a, bt}, mm(false, true))[0], want);
  expect_close(run_op("MatMul", {at, b}, mm(true, false))[0], want);
  expect_close(run_op("MatMul", {at, bt}, mm(true, true))[0], want);
  for (const char* be : {"reference", "onednn"}) {
    INFO(be);
    expect_close(run_op("MatMul", {at, bt}, mm(true, true), be)[0], want);
  }
  // Empty inner dimension: zeros.
  expect_close(run_op("MatMul", {Tensor::zeros(DType::kFloat32, {2, 0}), Tensor::zeros(DType::kFloat32, {0, 3})})[0],
               Tensor::zeros(DType::kFloat32, {2, 3}));
}

TEST_CASE("MatMul: shape errors name the node and shapes") {
  Graph g;
  Scope s(g);
  Output a = ops::placeholder(s, DType::kFloat32, {2, 3}, "a");
  Output b = ops::placeholder(s, DType::kFloat32, {2, 3}, "b");
  try {
    ops::matmul(s, a, b, false, false, "prod");
    FAIL("expected an error");
  } catch (const Error& e) {
    std::string m = e.what();
    CHECK(e.code() == Code::kInvalidArgument);
    CHECK(m.find("'prod'") != std::string::npos);
    CHECK(m.find("[2,3]") != std::string::npos);
  }
  CHECK(g.spec(ops::matmul(s, a, b, false, true)).shape == Shape{2, 2});
  CHECK(g.spec(ops::matmul(s, a, b, true, false)).shape == Shape{3, 3});
  Output v = ops::placeholder(s, DType::kFloat32, {3}, "v");
  CHECK_THROWS_AS(ops::matmul(s, a, v), Error);
  Output u = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 3}, "u");
  CHECK(g.spec(ops::matmul(s, u, b, false, true)).shape == Shape{kUnknownDim, 2});
}

TEST_CASE("MatMul: gradients for every transpose combination") {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      INFO("transpose_a " << ta << " transpose_b " << tb);
      Tensor a = random_tensor(ta ? Shape{3, 2} : Shape{2, 3}, 21);
      Tensor b = random_tensor(tb ? Shape{4, 3} : Shape{3, 4}, 22);
      check_gradients("MatMul", {a, b}, mm(ta, tb));
      hub::testing::GradCheckOptions on_onednn;
      on_onednn.backend = "onednn";
      check_gradients("MatMul", {a, b}, mm(ta, tb), on_onednn);
    }
}

TEST_CASE("MatMul: reference and onednn against a naive product on awkward shapes") {
  struct Case {
    int64_t m, k, n;
  };
  std::vector<Case> cases = {{1, 1, 1}, {1, 17, 9}, {9, 17, 1}, {1, 5, 1}, {7, 13, 5}, {33, 1, 31}, {65, 129, 63}};
  uint64_t seed = 100;
  for (const Case& c : cases)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        INFO("m " << c.m << " k " << c.k << " n " << c.n << " ta " << ta << " tb " << tb);
        Tensor a = random_tensor(ta ? Shape{c.k, c.m} : Shape{c.m, c.k}, seed++);
        Tensor b = random_tensor(tb ? Shape{c.n, c.k} : Shape{c.k, c.n}, seed++);
        expect_close(run_op("MatMul", {a, b}, mm(ta, tb))[0], naive_matmul(a, b, ta, tb), 1e-4, 1e-4);
        compare_backends("MatMul", {a, b}, mm(ta, tb), "onednn", 1e-4, 1e-4);
      }
}

TEST_CASE("MatMul: the onednn kernel is the one that runs") {
  Graph g;
  Scope s(g);
  Output a = ops::placeholder(s, DType::kFloat32, {3, 4}, "a");
  Output b = ops::placeholder(s, DType::kFloat32, {4, 5}, "b");
  Output c = ops::matmul(s, a, b);
  Session sess(g, nullptr, {&find_backend("onednn")});
  Tensor av = random_tensor({3, 4}, 1), bv = random_tensor({4, 5}, 2);
  Tensor out = sess.run_one({{a, av}, {b, bv}}, c);
  CHECK(sess.last_kernels().at("MatMul") == "onednn");
  expect_close(out, naive_matmul(av, bv, false, false), 1e-5, 1e-5);
  // Same shape again: the cached primitive, new data.
  Tensor bv2 = random_tensor({4, 5}, 3);
  expect_close(sess.run_one({{a, av}, {b, bv2}}, c), naive_matmul(av, bv2, false, false), 1e-5, 1e-5);
}

TEST_CASE("BatchMatMul: hand values, adjoints, broadcast batch dims") {
  // Batch 0: [1 2 3; 4 5 6]; batch 1: [1 0 0; 0 1 0]. y = [7 8; 9 10; 11 12] shared.
  Tensor x = make({2, 2, 3}, {1, 2, 3, 4, 5, 6, 1, 0, 0, 0, 1, 0});
  Tensor y = make({3, 2}, {7, 8, 9, 10, 11, 12});
  Tensor want = make({2, 2, 2}, {58, 64, 139, 154, 7, 8, 9, 10});
  // The same operands stored transposed.
  Tensor xt = make({2, 3, 2}, {1, 4, 2, 5, 3, 6, 1, 0, 0, 1, 0, 0});
  Tensor yt = make({2, 3}, {7, 9, 11, 8, 10, 12});
  for (const char* b : {"reference", "onednn"}) {
    INFO(b);
    expect_close(run_op("BatchMatMul", {x, y}, {}, b)[0], want);
    expect_close(run_op("BatchMatMul", {x, yt}, adj(false, true), b)[0], want);
    expect_close(run_op("BatchMatMul", {xt, y}, adj(true, false), b)[0], want);
    expect_close(run_op("BatchMatMul", {xt, yt}, adj(true, true), b)[0], want);
    // y with a batch of 1 broadcasts the same way as y without batch dims.
    expect_close(run_op("BatchMatMul", {x, make({1, 3, 2}, {7, 8, 9, 10, 11, 12})}, {}, b)[0], want);
    // Rank 2 is MatMul.
    expect_close(run_op("BatchMatMul", {make({2, 3}, {1, 2, 3, 4, 5, 6}), y}, {}, b)[0],
                 make({2, 2}, {58, 64, 139, 154}));
  }
  // Empty batch and empty inner dimension.
  CHECK(run_op("BatchMatMul", {Tensor::zeros(DType::kFloat32, {0, 2, 3}), y})[0].shape() == Shape{0, 2, 2});
  expect_close(
      run_op("BatchMatMul", {Tensor::zeros(DType::kFloat32, {2, 2, 0}), Tensor::zeros(DType::kFloat32, {0, 3})})[0],
      Tensor::zeros(DType::kFloat32, {2, 2, 3}));
}

TEST_CASE("BatchMatMul: both backends against a naive product on awkward shapes") {
  struct Case {
    Shape x, y;  // as stored without adjoints: [.., M, K], [.., K, N]
  };
  std::vector<Case> cases = {{{1, 1, 1}, {1, 1, 1}},   {{3, 1, 2, 5}, {4, 5, 3}}, {{2, 1, 7}, {7, 1}},
                             {{5, 4}, {3, 1, 4, 6}},   {{1, 3, 4}, {2, 1, 4, 2}}, {{2, 3, 1, 17, 9}, {3, 1, 9, 4}},
                             {{7, 1, 13}, {1, 13, 5}}, {{2, 33, 65}, {2, 65, 31}}};
  uint64_t seed = 300;
  for (const Case& k : cases)
    for (bool ax : {false, true})
      for (bool ay : {false, true}) {
        auto stored = [](const Shape& s, bool t) {
          Shape o = s;
          if (t) o.set_dim(s.rank() - 1, s[s.rank() - 2]), o.set_dim(s.rank() - 2, s[s.rank() - 1]);
          return o;
        };
        Tensor x = random_tensor(stored(k.x, ax), ++seed);
        Tensor y = random_tensor(stored(k.y, ay), ++seed);
        INFO("x " << x.shape().to_string() << " y " << y.shape().to_string() << " adj " << ax << ay);
        expect_close(run_op("BatchMatMul", {x, y}, adj(ax, ay))[0], naive_batch_matmul(x, y, ax, ay), 1e-4, 1e-4);
        compare_backends("BatchMatMul", {x, y}, adj(ax, ay), "onednn", 1e-4, 1e-4);
      }
}

TEST_CASE("BatchMatMul: gradients sum over broadcast batch dims, every adjoint combination") {
  for (bool ax : {false, true})
    for (bool ay : {false, true}) {
      INFO("adj_x " << ax << " adj_y " << ay);
      // x batch [2, 1], y batch [3]: both broadcast; y also has fewer dims.
      Tensor x = random_tensor(ax ? Shape{2, 1, 3, 2} : Shape{2, 1, 2, 3}, 61);
      Tensor y = random_tensor(ay ? Shape{3, 4, 3} : Shape{3, 3, 4}, 62);
      for (const char* b : {"reference", "onednn"}) {
        INFO(b);
        GradCheckOptions o;
        o.backend = b;
        check_gradients("BatchMatMul", {x, y}, adj(ax, ay), o);
      }
    }
}

TEST_CASE("BatchMatMul: ONNX MatMul with 1-D operands through ExpandDims and Squeeze") {
  Graph g;
  Scope s(g);
  Output v = ops::placeholder(s, DType::kFloat32, {3}, "v");
  Output m = ops::placeholder(s, DType::kFloat32, {2, 3, 2}, "m");
  Output w = ops::placeholder(s, DType::kFloat32, {2}, "w");
  // v [3] @ m [2,3,2] -> [2,2]: v as [1,3], squeeze dim -2.
  Output vm = ops::squeeze(s, ops::batch_matmul(s, ops::expand_dims(s, v, 0), m), {-2});
  // m [2,3,2] @ w [2] -> [2,3]: w as [2,1], squeeze dim -1.
  Output mw = ops::squeeze(s, ops::batch_matmul(s, m, ops::expand_dims(s, w, -1)), {-1});
  CHECK(g.spec(vm).shape == Shape{2, 2});
  CHECK(g.spec(mw).shape == Shape{2, 3});
  Session sess(g, nullptr);
  auto out = sess.run(
      {{v, make({3}, {1, 2, 3})}, {m, make({2, 3, 2}, {1, 0, 0, 1, 1, 1, 2, 2, 2, 2, 2, 2})}, {w, make({2}, {10, 1})}},
      {vm, mw});
  // [1 2 3] [1 0; 0 1; 1 1] = [4 5]; [1 2 3] 2*ones = [12 12].
  expect_close(out[0], make({2, 2}, {4, 5, 12, 12}));
  // [1 0; 0 1; 1 1] [10; 1] = [10 1 11]; 2*ones [10; 1] = 22s.
  expect_close(out[1], make({2, 3}, {10, 1, 11, 22, 22, 22}));
}

TEST_CASE("BatchMatMul: bad shapes name the node and the shapes") {
  Graph g;
  Scope s(g);
  auto ph = [&](Shape sh, const char* name) { return ops::placeholder(s, DType::kFloat32, sh, name); };
  Output a = ph({2, 2, 3}, "a"), v = ph({3}, "v"), b = ph({3, 2, 4}, "b"), c = ph({2, 4, 2}, "c");
  expect_error(
      Code::kInvalidArgument, [&] { ops::batch_matmul(s, a, v, false, false, "bm1"); },
      "node 'bm1' (BatchMatMul): x float32[2,2,3] and y float32[3] need rank >= 2");
  expect_error(
      Code::kInvalidArgument, [&] { ops::batch_matmul(s, a, c, false, false, "bm2"); }, "inner dimensions differ");
  expect_error(
      Code::kInvalidArgument, [&] { ops::batch_matmul(s, a, b, true, false, "bm3"); }, "do not broadcast");
  Output i = ops::placeholder(s, DType::kInt32, {2, 2}, "i");
  expect_error(
      Code::kInvalidArgument, [&] { ops::batch_matmul(s, i, i, false, false, "bm4"); }, "'bm4'");
  // Unknown batch and matrix dims pass through.
  Output u = ph({kUnknownDim, 1, kUnknownDim, 3}, "u");
  CHECK(g.spec(ops::batch_matmul(s, u, ph({5, 3, 2}, "y5"))).shape == Shape{kUnknownDim, 5, kUnknownDim, 2});
}

TEST_CASE("BiasAdd and BiasAddGrad: hand values and gradients") {
  Tensor v = make({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor bias = make({3}, {10, 20, 30});
  expect_close(run_op("BiasAdd", {v, bias})[0], make({2, 3}, {11, 22, 33, 14, 25, 36}));
  Tensor v4 = make({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  expect_close(run_op("BiasAdd", {v4, make({2}, {-1, 1})})[0], make({1, 2, 2, 2}, {0, 3, 2, 5, 4, 7, 6, 9}));
  expect_close(run_op("BiasAddGrad", {v4})[0], make({2}, {16, 20}));
  expect_close(run_op("BiasAddGrad", {v})[0], make({3}, {5, 7, 9}));
  {
    Graph g;
    Scope s(g);
    Output x = ops::placeholder(s, DType::kFloat32, {2, 3}, "x");
    Output b4 = ops::placeholder(s, DType::kFloat32, {4}, "b4");
    CHECK_THROWS_AS(ops::bias_add(s, x, b4), Error);
  }
  check_gradients("BiasAdd", {random_tensor({2, 3, 4}, 31), random_tensor({4}, 32)});
  check_gradients("BiasAddGrad", {random_tensor({3, 2, 5}, 33)});
}

TEST_CASE("BiasAddGrad: large input (parallel partial sums) against a double-precision sum") {
  Tensor g = random_tensor({517, 129}, 41);
  Tensor got = run_op("BiasAddGrad", {g})[0];
  std::vector<float> want(129);
  const float* pg = g.data<float>();
  for (int c = 0; c < 129; ++c) {
    double s = 0;
    for (int r = 0; r < 517; ++r) s += pg[r * 129 + c];
    want[c] = static_cast<float>(s);
  }
  expect_close(got, make({129}, want), 1e-4, 1e-4);
  Tensor big = random_tensor({300, 7, 64}, 42);
  Tensor bias = random_tensor({64}, 43);
  Tensor out = run_op("BiasAdd", {big, bias})[0];
  const float* po = out.data<float>();
  const float* pb = big.data<float>();
  const float* pbias = bias.data<float>();
  bool ok = true;
  for (int64_t i = 0; i < big.num_elements(); ++i) ok = ok && po[i] == pb[i] + pbias[i % 64];
  CHECK(ok);
}
