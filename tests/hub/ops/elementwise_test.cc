#include <doctest/doctest.h>

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
  expect_close(run_op("Add", {x, y})[0],
               make({2, 3, 2}, {11, 12, 21, 22, 31, 32, 13, 14, 23, 24, 33, 34}));
}

TEST_CASE("binary ops: integer dtypes") {
  Tensor a = Tensor::from_vector<int32_t>({3}, {7, -8, 9});
  Tensor b = Tensor::from_vector<int32_t>({3}, {2, 2, 2});
  CHECK(run_op("Div", {a, b})[0].to_vector<int32_t>() == std::vector<int32_t>{3, -4, 4});
  CHECK(run_op("Mul", {a, b})[0].to_vector<int32_t>() == std::vector<int32_t>{14, -16, 18});
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
