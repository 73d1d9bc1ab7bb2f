#include "hub/ops/elementwise.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "hub/graph/autodiff.h"
#include "hub/graph/session.h"
#include "hub/ops/state.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

TEST_CASE("binary ops: hand-computed broadcasting") {
  Tensor a = make({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor row = make({3}, {10, 20, 30});
  Tensor col = make({2, 1}, {100, 200});
  expect_close(run_op("Add", {a, row})[0], make({2, 3}, {11, 22, 33, 14, 25, 36}));
  expect_close(run_op("Sub", {a, col})[0], make({2, 3}, {-99, -98, -97, -196, -195, -194}));
  expect_close(run_op("Mul", {col, row})[0], make({2, 3}, {1000, 2000, 3000, 2000, 4000, 6000}));
  expect_close(run_op("Div", {a, Tensor::scalar<float>(2)})[0], make({2, 3}, {0.5, 1, 1.5, 2, 2.5, 3}));
  expect_close(run_op("Maximum", {a, Tensor::scalar<float>(3.5f)})[0], make({2, 3}, {3.5, 3.5, 3.5, 4, 5, 6}));
  expect_close(run_op("Minimum", {row, a})[0], make({2, 3}, {1, 2, 3, 4, 5, 6}));
  // Middle-axis broadcast: [2,1,2] + [1,3,1] -> [2,3,2]
  Tensor x = make({2, 1, 2}, {1, 2, 3, 4});
  Tensor y = make({1, 3, 1}, {10, 20, 30});
  expect_close(run_op("Add", {x, y})[0], make({2, 3, 2}, {11, 12, 21, 22, 31, 32, 13, 14, 23, 24, 33, 34}));
}

TEST_CASE("binary ops: integer dtypes") {
  Tensor a = Tensor::from_vector<int32_t>({3}, {7, -8, 9});
  Tensor b = Tensor::from_vector<int32_t>({3}, {2, 2, 2});
  CHECK(run_op("Div", {a, b})[0].to_vector<int32_t>() == std::vector<int32_t>{3, -4, 4});
  CHECK(run_op("Mul", {a, b})[0].to_vector<int32_t>() == std::vector<int32_t>{14, -16, 18});
}

TEST_CASE("issue13: integer division by zero is an error naming the node; MIN / -1 wraps (x86 trapped on both)") {
  const int32_t min32 = std::numeric_limits<int32_t>::min();
  const int64_t min64 = std::numeric_limits<int64_t>::min();
  for (const char* op : {"Div", "Mod"}) {
    INFO(op);
    expect_error(
        Code::kInvalidArgument,
        [&] {
          run_op(op, {Tensor::from_vector<int64_t>({3}, {1, 2, 3}), Tensor::from_vector<int64_t>({3}, {1, 0, 3})});
        },
        std::string("(") + op + "): integer division by zero (divisor int64[3] is 0 at flat position 1)");
    // A float divisor of 0 is IEEE's business: inf and NaN, no error.
    CHECK(std::isinf(run_op("Div", {Tensor::scalar<float>(1), Tensor::scalar<float>(0)})[0].data<float>()[0]));
  }
  CHECK(run_op("Div", {Tensor::from_vector<int32_t>({2}, {min32, 7}), Tensor::scalar<int32_t>(-1)})[0]
            .to_vector<int32_t>() == std::vector<int32_t>{min32, -7});
  CHECK(run_op("Div", {Tensor::from_vector<int64_t>({1}, {min64}), Tensor::from_vector<int64_t>({1}, {-1})})[0]
            .to_vector<int64_t>() == std::vector<int64_t>{min64});
  CHECK(run_op("Mod", {Tensor::from_vector<int64_t>({1}, {min64}), Tensor::from_vector<int64_t>({1}, {-1})})[0]
            .to_vector<int64_t>() == std::vector<int64_t>{0});
}

TEST_CASE("Mod: the divisor's sign (Python's %) or, truncating, the dividend's (C's fmod); hand-computed") {
  const Attrs truncate = Attrs().set("truncate", true);
  // 7 mod 3 = 1; -7 mod 3 = 2 (floor) or -1 (truncate); 7 mod -3 = -2 or 1; -7 mod -3 = -1 either way; 6 mod 3 = 0.
  Tensor a = Tensor::from_vector<int32_t>({5}, {7, -7, 7, -7, 6});
  Tensor b = Tensor::from_vector<int32_t>({5}, {3, 3, -3, -3, 3});
  CHECK(run_op("Mod", {a, b})[0].to_vector<int32_t>() == std::vector<int32_t>{1, 2, -2, -1, 0});
  CHECK(run_op("Mod", {a, b}, truncate)[0].to_vector<int32_t>() == std::vector<int32_t>{1, -1, 1, -1, 0});
  // int64, broadcast over a scalar divisor.
  CHECK(run_op("Mod", {Tensor::from_vector<int64_t>({3}, {-1, 10, -12}), Tensor::scalar<int64_t>(5)})[0]
            .to_vector<int64_t>() == std::vector<int64_t>{4, 0, 3});
  // Floats: 5.5 mod 2 = 1.5; -5.5 mod 2 = 0.5 (floor) or -1.5; 5.5 mod -2 = -0.5 or 1.5; broadcast rows.
  Tensor fa = make({2, 2}, {5.5f, -5.5f, 5.5f, -0.75f});
  Tensor fb = make({2, 1}, {2, -2});
  expect_close(run_op("Mod", {fa, fb})[0], make({2, 2}, {1.5f, 0.5f, -0.5f, -0.75f}));
  expect_close(run_op("Mod", {fa, fb}, truncate)[0], make({2, 2}, {1.5f, -1.5f, 1.5f, -0.75f}));
  // The gradient: 1 for a, -floor(a / b) (or the truncated quotient) for b; inputs away from the jumps.
  Tensor ga = make({2, 3}, {2.3f, -2.3f, 4.1f, -0.7f, 7.9f, -6.2f});
  Tensor gb = make({3}, {1.5f, -1.7f, 2.6f});
  check_gradients("Mod", {ga, gb});
  check_gradients("Mod", {ga, gb}, truncate);
}

TEST_CASE("binary ops: incompatible shapes name the node and both shapes") {
  Graph g;
  Scope s(g);
  auto a = s.op("Placeholder", {}, Attrs().set("dtype", DType::kFloat32).set("shape", Shape{2, 3}), "a");
  auto b = s.op("Placeholder", {}, Attrs().set("dtype", DType::kFloat32).set("shape", Shape{4}), "b");
  try {
    s.op("Add", {a, b}, {}, "sum");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kInvalidArgument);
    std::string m = e.what();
    CHECK(m.find("'sum'") != std::string::npos);
    CHECK(m.find("[2,3]") != std::string::npos);
    CHECK(m.find("[4]") != std::string::npos);
  }
}

TEST_CASE("binary ops: gradients match finite differences") {
  Tensor a = random_tensor({2, 3, 4}, 1);
  Tensor b = random_tensor({3, 1}, 2, 0.5f, 1.5f);  // away from zero for Div
  Tensor pos = random_tensor({2, 3, 4}, 3, 0.5f, 1.5f);
  for (std::string op : {"Add", "Sub", "Mul", "Div"}) {
    INFO(op);
    check_gradients(op, {a, b});
    check_gradients(op, {b, pos});
  }
  // Max/Min: keep |a-b| well above the finite-difference step.
  Tensor c = make({2, 2}, {0.1f, 0.9f, -0.5f, 0.3f});
  Tensor d = make({2}, {0.5f, -0.2f});
  check_gradients("Maximum", {c, d});
  check_gradients("Minimum", {c, d});
}

TEST_CASE("AddN and ReduceToLike") {
  Tensor a = make({2}, {1, 2}), b = make({2}, {3, 4}), c = make({2}, {5, 6});
  expect_close(run_op("AddN", {a, b, c})[0], make({2}, {9, 12}));
  Tensor g = make({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_close(run_op("ReduceToLike", {g, make({3}, {0, 0, 0})})[0], make({3}, {5, 7, 9}));
  expect_close(run_op("ReduceToLike", {g, make({2, 1}, {0, 0})})[0], make({2, 1}, {6, 15}));
  expect_close(run_op("ReduceToLike", {g, Tensor::scalar<float>(0)})[0], Tensor::scalar<float>(21));
  check_gradients("AddN", {random_tensor({3, 2}, 5), random_tensor({3, 2}, 6)});
}

TEST_CASE("Identity: y = x, gradient passes through") {
  Tensor x = make({2, 2}, {1, -2, 3.5f, 0});
  expect_close(run_op("Identity", {x})[0], x);
  check_gradients("Identity", {random_tensor({2, 3}, 5)});
}

TEST_CASE("StopGradient: y = x; autodiff stops there") {
  // L = x * x + StopGradient(x * x): dL/dx = 2x, the stopped term adds nothing.
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {3}, "x");
  Output sq = ops::mul(s, x, x);
  Output y = ops::add(s, sq, ops::stop_gradient(s, sq));
  Output dx = gradients(s, y, {x})[0];
  Session session(g, nullptr);
  std::vector<Tensor> out = session.run({{x, make({3}, {1, -2, 3})}}, {y, dx});
  expect_close(out[0], make({3}, {2, 8, 18}), 0, 0);
  expect_close(out[1], make({3}, {2, -4, 6}), 0, 0);
  // Only through StopGradient: no path, no gradient.
  CHECK_FALSE(gradients(s, ops::stop_gradient(s, x), {x}, ops::constant(s, make({3}, {1, 1, 1})))[0].valid());
}

TEST_CASE("Pow: hand-computed, std::pow's special cases, broadcasting") {
  // 2^3, (-2)^3 (negative base, integral exponent), 4^0.5, 0^0 = 1, 9^-0.5,
  // (-8)^(1/3) = NaN (no real root through pow), 0^-1 = inf.
  Tensor a = make({7}, {2, -2, 4, 0, 9, -8, 0});
  Tensor b = make({7}, {3, 3, 0.5f, 0, -0.5f, 1.0f / 3, -1});
  expect_close(run_op("Pow", {a, b})[0],
               make({7}, {8, -8, 2, 1, 1.0f / 3, std::nanf(""), std::numeric_limits<float>::infinity()}));
  // Squares of negatives through a broadcast scalar exponent; a row of exponents.
  Tensor x = make({2, 3}, {-3, -1, 0, 1, 2, 3});
  expect_close(run_op("Pow", {x, Tensor::scalar<float>(2)})[0], make({2, 3}, {9, 1, 0, 1, 4, 9}));
  expect_close(run_op("Pow", {make({2, 1}, {2, 3}), make({3}, {0, 1, 2})})[0], make({2, 3}, {1, 2, 4, 1, 3, 9}));
  expect_close(run_op("Pow", {Tensor::scalar<float>(2), make({3}, {-1, 0, 10})})[0], make({3}, {0.5f, 1, 1024}));
}

TEST_CASE("PowGrad: d/da = g b a^(b-1); d/db = g a^b ln a for a > 0, 0 for a <= 0 (TF)") {
  Tensor g = make({5}, {1, 1, 1, 1, 2});
  Tensor a = make({5}, {2, -2, 0, 4, 0});
  Tensor b = make({5}, {3, 2, 2, 0.5f, -1});
  auto d = run_op("PowGrad", {g, a, b});
  // da: 3*2^2, 2*(-2), 2*0, 0.5*4^-0.5, 2*(-1)*0^-2 = -inf.
  expect_close(d[0], make({5}, {12, -4, 0, 0.25f, -std::numeric_limits<float>::infinity()}));
  // db: 8 ln 2, 0 (a < 0), 0 (a = 0), 2 ln 4, 0 (a = 0 with a^b = inf: still 0).
  expect_close(d[1], make({5}, {5.54517744f, 0, 0, 2.77258872f, 0}));
  // a and b broadcast to g's shape.
  auto e = run_op("PowGrad", {make({2, 2}, {1, 1, 1, 1}), make({2, 1}, {1, 2}), make({2}, {2, 3})});
  expect_close(e[0], make({2, 2}, {2, 3, 4, 12}));
  expect_close(e[1], make({2, 2}, {0, 0, 4 * 0.69314718f, 8 * 0.69314718f}));
  // Large enough for several threads (the outputs were once allocated inside
  // the parallel loop, a race that lost whole chunks): every element checked.
  const int64_t n = 70001;
  Tensor ga = random_tensor({n}, 1), aa = random_tensor({n}, 2, 0.5f, 2.0f), ba = random_tensor({n}, 3);
  auto big = run_op("PowGrad", {ga, aa, ba});
  for (int64_t k = 0; k < n; k += 997) {
    const double gk = ga.data<float>()[k], ak = aa.data<float>()[k], bk = ba.data<float>()[k];
    CHECK(big[0].data<float>()[k] == doctest::Approx(gk * bk * std::pow(ak, bk - 1)).epsilon(1e-4));
    CHECK(big[1].data<float>()[k] == doctest::Approx(gk * std::pow(ak, bk) * std::log(ak)).epsilon(1e-4));
  }
  auto empty = run_op("PowGrad", {Tensor(DType::kFloat32, {0, 2}), Tensor(DType::kFloat32, {0, 2}), make({2}, {1, 2})});
  CHECK(empty[0].shape() == Shape{0, 2});
  CHECK(empty[1].shape() == Shape{0, 2});
}

TEST_CASE("Pow: gradients match finite differences, summed over broadcast dims") {
  Tensor a = random_tensor({2, 3, 4}, 7, 0.5f, 2.0f);
  Tensor b = random_tensor({3, 1}, 8, -1.5f, 2.5f);
  check_gradients("Pow", {a, b}, {}, GradCheckOptions{.step = 1e-3});
  check_gradients("Pow", {b.clone(), a}, {}, GradCheckOptions{.step = 1e-3});
  // Negative bases with an integral exponent: d/da only (d/db is 0 by convention).
  GradCheckOptions only_a;
  only_a.step = 1e-3;
  only_a.inputs = {0};
  check_gradients("Pow", {random_tensor({3, 2}, 9, -2.0f, -0.5f), make({2}, {2, 3})}, {}, only_a);
}

TEST_CASE("Pow: bad input") {
  Graph g;
  Scope s(g);
  auto i = ops::placeholder(s, DType::kInt32, {2}, "i");
  auto f = ops::placeholder(s, DType::kFloat32, {2}, "f");
  auto f3 = ops::placeholder(s, DType::kFloat32, {3}, "f3");
  expect_error(
      Code::kInvalidArgument, [&] { ops::pow(s, i, i, "p"); }, "node 'p' (Pow)");
  expect_error(
      Code::kInvalidArgument, [&] { ops::pow(s, f, f3, "q"); }, "[3]");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        s.op("PowGrad", {f3, f, f}, {}, "r");
      },
      "broadcast shape [2]");
}
