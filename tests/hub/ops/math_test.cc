#include "hub/ops/math.h"

#include <doctest/doctest.h>

#include <cmath>

#include "hub/graph/autodiff.h"
#include "hub/graph/session.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/state.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {
std::vector<bool> bools(const Tensor& t) {
  std::vector<bool> out;
  for (bool b : t.to_vector<bool>()) out.push_back(b);
  return out;
}
}  // namespace

TEST_CASE("unary math: hand-computed values") {
  const float e = 2.718281828f;
  expect_close(run_op("Neg", {make({3}, {-2, 0, 3})})[0], make({3}, {2, 0, -3}));
  expect_close(run_op("Square", {make({3}, {-2, 0.5f, 3})})[0], make({3}, {4, 0.25f, 9}));
  expect_close(run_op("Sqrt", {make({3}, {4, 0.25f, 9})})[0], make({3}, {2, 0.5f, 3}));
  expect_close(run_op("Rsqrt", {make({3}, {4, 0.25f, 1})})[0], make({3}, {0.5f, 2, 1}));
  expect_close(run_op("Exp", {make({3}, {0, 1, -1})})[0], make({3}, {1, e, 1 / e}));
  expect_close(run_op("Log", {make({3}, {1, e, 0.5f})})[0], make({3}, {0, 1, -0.6931472f}));
  expect_close(run_op("Abs", {make({3}, {-2, 0, 3})})[0], make({3}, {2, 0, 3}));
  expect_close(run_op("Sign", {make({3}, {-2, 0, 3})})[0], make({3}, {-1, 0, 1}));
  expect_close(run_op("Reciprocal", {make({3}, {2, -4, 0.5f})})[0], make({3}, {0.5f, -0.25f, 2}));
  // IEEE edge cases.
  std::vector<float> edge = run_op("Log", {make({1}, {0})})[0].to_vector<float>();
  CHECK(std::isinf(edge[0]));
  CHECK(edge[0] < 0);
  CHECK(std::isnan(run_op("Sqrt", {make({1}, {-1})})[0].to_vector<float>()[0]));
  // Integer variants.
  Tensor i = Tensor::from_vector<int32_t>({3}, {-3, 0, 4});
  CHECK(run_op("Square", {i})[0].to_vector<int32_t>() == std::vector<int32_t>{9, 0, 16});
  CHECK(run_op("Abs", {i})[0].to_vector<int32_t>() == std::vector<int32_t>{3, 0, 4});
  CHECK(run_op("Neg", {i})[0].to_vector<int32_t>() == std::vector<int32_t>{3, 0, -4});
  Tensor l = Tensor::from_vector<int64_t>({2}, {-5, 7});
  CHECK(run_op("Sign", {l})[0].to_vector<int64_t>() == std::vector<int64_t>{-1, 1});
}

TEST_CASE("unary math: erf, rounding, trigonometric and hyperbolic functions") {
  const float pi = 3.14159265f;
  // Reference values: erf from Abramowitz and Stegun's table, the rest exact or from their definitions.
  expect_close(run_op("Erf", {make({4}, {0, 0.5f, 1, -2})})[0], make({4}, {0, 0.5204999f, 0.8427008f, -0.9953223f}));
  expect_close(run_op("Floor", {make({4}, {-1.5f, 2.7f, 3, -0.2f})})[0], make({4}, {-2, 2, 3, -1}));
  expect_close(run_op("Ceil", {make({4}, {-1.5f, 2.1f, 3, -0.2f})})[0], make({4}, {-1, 3, 3, 0}));
  // Halves go to the even neighbour (ONNX Round, TF Round).
  expect_close(run_op("Round", {make({7}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.6f, -2.4f})})[0],
               make({7}, {0, 2, 2, 0, -2, 3, -2}));
  expect_close(run_op("Sin", {make({3}, {0, pi / 6, pi / 2})})[0], make({3}, {0, 0.5f, 1}));
  expect_close(run_op("Cos", {make({3}, {0, pi / 3, pi})})[0], make({3}, {1, 0.5f, -1}));
  expect_close(run_op("Tan", {make({2}, {0, pi / 4})})[0], make({2}, {0, 1}));
  expect_close(run_op("Asin", {make({3}, {0, 0.5f, -1})})[0], make({3}, {0, pi / 6, -pi / 2}));
  expect_close(run_op("Acos", {make({3}, {1, 0.5f, -1})})[0], make({3}, {0, pi / 3, pi}));
  expect_close(run_op("Atan", {make({2}, {1, -1})})[0], make({2}, {pi / 4, -pi / 4}));
  const float e = 2.718281828f;
  expect_close(run_op("Sinh", {make({2}, {0, 1})})[0], make({2}, {0, (e - 1 / e) / 2}));
  expect_close(run_op("Cosh", {make({2}, {0, 1})})[0], make({2}, {1, (e + 1 / e) / 2}));
  expect_close(run_op("Asinh", {make({2}, {0, (e - 1 / e) / 2})})[0], make({2}, {0, 1}));
  expect_close(run_op("Acosh", {make({2}, {1, (e + 1 / e) / 2})})[0], make({2}, {0, 1}));
  expect_close(run_op("Atanh", {make({2}, {0, 0.5f})})[0], make({2}, {0, 0.5493061f}));
  // Outside the domain: NaN; at Atanh's pole: inf.
  CHECK(std::isnan(run_op("Asin", {make({1}, {2})})[0].to_vector<float>()[0]));
  CHECK(std::isnan(run_op("Acosh", {make({1}, {0.5f})})[0].to_vector<float>()[0]));
  CHECK(std::isinf(run_op("Atanh", {make({1}, {1})})[0].to_vector<float>()[0]));
}

TEST_CASE("unary math: float-only ops reject integers, naming the node") {
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kInt32, {2}, "x");
  try {
    ops::sqrt(s, x, "root");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kInvalidArgument);
    CHECK(std::string(e.what()).find("'root'") != std::string::npos);
    CHECK(std::string(e.what()).find("int32") != std::string::npos);
  }
}

TEST_CASE("unary math: gradients match finite differences") {
  Tensor any = random_tensor({2, 3}, 11);
  Tensor pos = random_tensor({2, 3}, 12, 0.5f, 2.0f);
  Tensor away = make({2, 3}, {-1.5f, -0.7f, -0.2f, 0.3f, 0.9f, 1.4f});  // no zero for Abs
  check_gradients("Neg", {any});
  check_gradients("Square", {any});
  check_gradients("Exp", {any});
  check_gradients("Abs", {away});
  check_gradients("Sign", {away});  // zero almost everywhere
  GradCheckOptions fine;
  fine.step = 1e-3;
  for (std::string op : {"Sqrt", "Rsqrt", "Log", "Reciprocal"}) {
    INFO(op);
    check_gradients(op, {pos}, {}, fine);
  }
  check_gradients("Cast", {any}, Attrs().set("dtype", DType::kFloat32));
  for (std::string op : {"Erf", "Sin", "Cos", "Tan", "Atan", "Sinh", "Cosh", "Asinh"}) {
    INFO(op);
    check_gradients(op, {any}, {}, fine);
  }
  Tensor inside = random_tensor({2, 3}, 13, -0.8f, 0.8f);  // Asin, Acos, Atanh: |x| < 1
  for (std::string op : {"Asin", "Acos", "Atanh"}) {
    INFO(op);
    check_gradients(op, {inside}, {}, fine);
  }
  check_gradients("Acosh", {random_tensor({2, 3}, 14, 1.2f, 3.0f)}, {}, fine);
  // Piecewise constant: zero away from the steps.
  Tensor between = make({2, 3}, {-1.7f, -0.8f, -0.2f, 0.3f, 1.2f, 2.2f});
  for (std::string op : {"Floor", "Ceil", "Round"}) {
    INFO(op);
    check_gradients(op, {between}, {}, fine);
  }
}

TEST_CASE("Cast between dtypes") {
  Tensor f = make({4}, {1.7f, -1.7f, 0.0f, 2.0f});
  CHECK(run_op("Cast", {f}, Attrs().set("dtype", DType::kInt32))[0].to_vector<int32_t>() ==
        std::vector<int32_t>{1, -1, 0, 2});
  CHECK(run_op("Cast", {f}, Attrs().set("dtype", DType::kInt64))[0].to_vector<int64_t>() ==
        std::vector<int64_t>{1, -1, 0, 2});
  CHECK(bools(run_op("Cast", {f}, Attrs().set("dtype", DType::kBool))[0]) ==
        std::vector<bool>{true, true, false, true});
  Tensor b = Tensor::from_vector<bool>({3}, {true, false, true});
  expect_close(run_op("Cast", {b}, Attrs().set("dtype", DType::kFloat32))[0], make({3}, {1, 0, 1}));
  Tensor u = Tensor::from_vector<uint8_t>({3}, {0, 200, 255});
  CHECK(run_op("Cast", {u}, Attrs().set("dtype", DType::kInt32))[0].to_vector<int32_t>() ==
        std::vector<int32_t>{0, 200, 255});
  Tensor small = Tensor::from_vector<int32_t>({2}, {3, 250});
  CHECK(run_op("Cast", {small}, Attrs().set("dtype", DType::kUInt8))[0].to_vector<uint8_t>() ==
        std::vector<uint8_t>{3, 250});
  Tensor big = Tensor::from_vector<int64_t>({2}, {int64_t{1} << 40, -3});
  expect_close(run_op("Cast", {big}, Attrs().set("dtype", DType::kFloat32))[0], make({2}, {1099511627776.0f, -3}));
  // Same dtype: the values pass through.
  expect_close(run_op("Cast", {f}, Attrs().set("dtype", DType::kFloat32))[0], f);
}

TEST_CASE("Cast: no gradient through an integer cast") {
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {2}, "x");
  Output y = ops::cast(s, ops::cast(s, x, DType::kInt32), DType::kFloat32);
  Output direct = ops::cast(s, x, DType::kFloat32);
  Output sum = ops::add(s, y, direct);
  // Only the float32 -> float32 cast carries a gradient: d sum / dx = 1.
  std::vector<Output> gy = gradients(s, y, {x});
  CHECK_FALSE(gy[0].valid());
  std::vector<Output> gs = gradients(s, sum, {x});
  REQUIRE(gs[0].valid());
  Session session(g, nullptr);
  expect_close(session.run({{x, make({2}, {0.3f, 2.7f})}}, {gs[0]})[0], make({2}, {1, 1}));
}

TEST_CASE("comparisons broadcast and produce bool") {
  Tensor a = make({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = make({3}, {1, 5, 7});
  CHECK(bools(run_op("Equal", {a, b})[0]) == std::vector<bool>{1, 0, 0, 0, 1, 0});
  CHECK(bools(run_op("NotEqual", {a, b})[0]) == std::vector<bool>{0, 1, 1, 1, 0, 1});
  CHECK(bools(run_op("Greater", {a, b})[0]) == std::vector<bool>{0, 0, 0, 1, 0, 0});
  CHECK(bools(run_op("GreaterEqual", {a, b})[0]) == std::vector<bool>{1, 0, 0, 1, 1, 0});
  CHECK(bools(run_op("Less", {a, b})[0]) == std::vector<bool>{0, 1, 1, 0, 0, 1});
  CHECK(bools(run_op("LessEqual", {a, b})[0]) == std::vector<bool>{1, 1, 1, 0, 1, 1});
  Tensor out = run_op("Less", {make({2, 1}, {2, 5}), Tensor::scalar<float>(3)})[0];
  CHECK(out.dtype() == DType::kBool);
  CHECK(out.shape() == Shape{2, 1});
  CHECK(bools(out) == std::vector<bool>{true, false});
  Tensor i = Tensor::from_vector<int64_t>({1, 3}, {1, 2, 3});
  Tensor j = Tensor::from_vector<int64_t>({2, 1}, {2, 3});
  CHECK(bools(run_op("Equal", {i, j})[0]) == std::vector<bool>{0, 1, 0, 0, 0, 1});
  Tensor u = Tensor::from_vector<uint8_t>({2}, {4, 9});
  CHECK(bools(run_op("Greater", {u, Tensor::scalar<uint8_t>(5)})[0]) == std::vector<bool>{false, true});
}

TEST_CASE("logical ops and bool equality broadcast") {
  Tensor a = Tensor::from_vector<bool>({2, 2}, {true, true, false, false});
  Tensor b = Tensor::from_vector<bool>({2}, {true, false});
  CHECK(bools(run_op("LogicalNot", {a})[0]) == std::vector<bool>{0, 0, 1, 1});
  CHECK(bools(run_op("LogicalAnd", {a, b})[0]) == std::vector<bool>{1, 0, 0, 0});
  CHECK(bools(run_op("LogicalOr", {a, b})[0]) == std::vector<bool>{1, 1, 1, 0});
  CHECK(bools(run_op("NotEqual", {a, b})[0]) == std::vector<bool>{0, 1, 1, 0});  // exclusive or
  CHECK(bools(run_op("Equal", {a, b})[0]) == std::vector<bool>{1, 0, 0, 1});
  Graph g;
  Scope s(g);
  Output f = ops::placeholder(s, DType::kFloat32, {2}, "f");
  Output t = ops::placeholder(s, DType::kBool, {2}, "t");
  CHECK_THROWS_AS(ops::logical_and(s, f, f), Error);
  CHECK_THROWS_AS(ops::greater(s, t, t), Error);  // ordering is not defined on bool
}

TEST_CASE("Select: broadcasts condition and both branches, any dtype, gradient to the chosen branch") {
  Tensor cond = Tensor::from_vector<bool>({2, 1}, {true, false});
  Tensor x = make({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor y = make({3}, {-1, -2, -3});
  expect_close(run_op("Select", {cond, x, y})[0], make({2, 3}, {1, 2, 3, -1, -2, -3}));
  Tensor every = Tensor::from_vector<bool>({3}, {false, true, false});
  expect_close(run_op("Select", {every, x, Tensor::scalar<float>(0)})[0], make({2, 3}, {0, 2, 0, 0, 5, 0}));
  Tensor ix = Tensor::from_vector<int64_t>({2}, {7, 8}), iy = Tensor::from_vector<int64_t>({2}, {-7, -8});
  CHECK(run_op("Select", {Tensor::from_vector<bool>({2}, {false, true}), ix, iy})[0].to_vector<int64_t>() ==
        std::vector<int64_t>{-7, 8});
  check_gradients("Select", {cond, x, y});
  check_gradients("Select", {every, random_tensor({2, 3}, 15), random_tensor({2, 1}, 16)});
  Graph g;
  Scope s(g);
  Output c = ops::placeholder(s, DType::kBool, {2}, "c");
  Output fx = ops::placeholder(s, DType::kFloat32, {2}, "fx");
  Output ify = ops::placeholder(s, DType::kInt32, {2}, "iy");
  CHECK_THROWS_AS(ops::select(s, c, fx, ify), Error);  // branches differ in dtype
  CHECK_THROWS_AS(ops::select(s, fx, fx, fx), Error);  // condition not bool
  CHECK_THROWS_AS(ops::select(s, c, fx, ops::placeholder(s, DType::kFloat32, {3}, "three")), Error);
}

TEST_CASE("comparisons: mismatched dtypes or shapes are rejected") {
  Graph g;
  Scope s(g);
  Output a = ops::placeholder(s, DType::kFloat32, {2, 3}, "a");
  Output b = ops::placeholder(s, DType::kInt32, {3}, "b");
  Output c = ops::placeholder(s, DType::kFloat32, {4}, "c");
  CHECK_THROWS_AS(ops::equal(s, a, b), Error);
  try {
    ops::less(s, a, c, "cmp");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kInvalidArgument);
    CHECK(std::string(e.what()).find("'cmp'") != std::string::npos);
    CHECK(std::string(e.what()).find("[4]") != std::string::npos);
  }
}

TEST_CASE("BroadcastLike: plain and with reduced axes") {
  Tensor like = Tensor::zeros(DType::kFloat32, {2, 3});
  expect_close(run_op("BroadcastLike", {make({3}, {1, 2, 3}), like})[0], make({2, 3}, {1, 2, 3, 1, 2, 3}));
  expect_close(run_op("BroadcastLike", {make({2, 1}, {1, 2}), like})[0], make({2, 3}, {1, 1, 1, 2, 2, 2}));
  expect_close(
      run_op("BroadcastLike", {make({2}, {1, 2}), like}, Attrs().set("reduced_axes", std::vector<int64_t>{1}))[0],
      make({2, 3}, {1, 1, 1, 2, 2, 2}));
  expect_close(
      run_op("BroadcastLike", {make({2}, {1, 2}), like}, Attrs().set("reduced_axes", std::vector<int64_t>{-1}))[0],
      make({2, 3}, {1, 1, 1, 2, 2, 2}));
  // [2,4] reduced over axes 0 and 2 -> [3]
  Tensor like3 = Tensor::zeros(DType::kFloat32, {2, 3, 2});
  expect_close(run_op("BroadcastLike", {make({3}, {1, 2, 3}), like3},
                      Attrs().set("reduced_axes", std::vector<int64_t>{0, 2}))[0],
               make({2, 3, 2}, {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  expect_close(run_op("BroadcastLike", {Tensor::scalar<float>(7), like})[0], make({2, 3}, {7, 7, 7, 7, 7, 7}));
  // like's dtype does not matter.
  Tensor ilike = Tensor::from_vector<int32_t>({2, 2}, {0, 0, 0, 0});
  expect_close(run_op("BroadcastLike", {make({2}, {4, 5}), ilike})[0], make({2, 2}, {4, 5, 4, 5}));

  GradCheckOptions first;
  first.inputs = {0};
  check_gradients("BroadcastLike", {random_tensor({3}, 1), like}, {}, first);
  check_gradients("BroadcastLike", {random_tensor({2, 1}, 2), like}, {}, first);
  check_gradients("BroadcastLike", {random_tensor({3}, 3), like3},
                  Attrs().set("reduced_axes", std::vector<int64_t>{0, 2}), first);
}

TEST_CASE("BroadcastLike: incompatible shapes are rejected") {
  Graph g;
  Scope s(g);
  Output like = ops::placeholder(s, DType::kFloat32, {2, 3}, "like");
  CHECK_THROWS_AS(ops::broadcast_like(s, ops::placeholder(s, DType::kFloat32, {4}, "a"), like), Error);
  CHECK_THROWS_AS(ops::broadcast_like(s, ops::placeholder(s, DType::kFloat32, {2, 2, 3}, "b"), like), Error);
  CHECK_THROWS_AS(ops::broadcast_like(s, ops::placeholder(s, DType::kFloat32, {2}, "c"), like, {5}), Error);
  // With an unknown batch dim the result takes like's (partial) shape.
  Output p = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 3}, "p");
  Output y = ops::broadcast_like(s, ops::placeholder(s, DType::kFloat32, {3}, "d"), p);
  CHECK(g.spec(y).shape == Shape{kUnknownDim, 3});
}

TEST_CASE("BroadcastTo: NumPy broadcasting both ways (ONNX Expand, TF BroadcastTo), dtypes, gradient") {
  auto to = [](std::vector<int64_t> shape) { return Attrs().set("shape", shape); };
  expect_close(run_op("BroadcastTo", {make({3}, {1, 2, 3})}, to({2, 3}))[0], make({2, 3}, {1, 2, 3, 1, 2, 3}));
  expect_close(run_op("BroadcastTo", {make({2, 1}, {1, 2})}, to({2, 1, 3}))[0],
               make({2, 2, 3}, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2}));
  // ONNX Expand: a 1 in `shape` keeps x's dim; a shorter `shape` aligns right.
  expect_close(run_op("BroadcastTo", {make({2, 1}, {1, 2})}, to({1, 3}))[0], make({2, 3}, {1, 1, 1, 2, 2, 2}));
  expect_close(run_op("BroadcastTo", {make({2, 1}, {1, 2})}, to({1}))[0], make({2, 1}, {1, 2}));
  Tensor b = Tensor::from_vector<bool>({2, 1}, {true, false});
  CHECK(run_op("BroadcastTo", {b}, to({2, 2}))[0].to_vector<bool>() == std::vector<bool>{true, true, false, false});
  Tensor i = Tensor::from_vector<int64_t>({1}, {9});
  CHECK(run_op("BroadcastTo", {i}, to({3}))[0].to_vector<int64_t>() == std::vector<int64_t>{9, 9, 9});
  check_gradients("BroadcastTo", {random_tensor({3, 1}, 90)}, to({2, 3, 4}));
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {3}, "x");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        ops::broadcast_to(s, x, {2, 4}, "bt");
      },
      "node 'bt' (BroadcastTo)");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        ops::broadcast_to(s, x, {-1, 3}, "bt2");
      },
      "negative dim");
}
