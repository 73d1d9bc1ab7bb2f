#include <doctest/doctest.h>

#include "hub/graph/session.h"
#include "hub/ops/matmul.h"
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
