// The CUDA kernels of hub/ops/elementwise.h against the reference: every
// broadcasting pattern (scalars, size-1 dims on either side, mutual
// broadcasts, ranks 1..8, empty and > 65536-element outputs), every dtype the
// reference takes, hand-computed special values, finite-difference gradients
// on the cuda backend, and the fallback past the kernels' merged-dim limit.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "../op_attrs.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {

struct ShapePair {
  Shape a, b;
};

// Same shapes (the float4 path with a 3-element tail), scalars on either
// side, size-1 dims, mutual broadcasts, ranks 5 and 6 with alternating
// broadcast dims, outputs over 65536 elements (dense, scalar, 2-d
// broadcast), and empty outputs.
const std::vector<ShapePair> kPairs = {{{7}, {7}},
                                       {{}, {}},
                                       {{}, {5}},
                                       {{6}, {}},
                                       {{1}, {1}},
                                       {{3, 1, 5}, {4, 1}},
                                       {{2, 3, 4, 5}, {3, 1, 5}},
                                       {{2, 1, 3, 1, 4}, {1, 5, 1, 6, 1}},
                                       {{2, 1, 2, 3, 1, 2}, {3, 2, 1, 1, 2}},
                                       {{300, 257}, {257}},
                                       {{70001}, {}},
                                       {{1000, 1}, {1, 70}},
                                       {{0, 3}, {3}},
                                       {{4, 0}, {1}}};

}  // namespace

TEST_CASE("cuda Add, Sub, Mul, Div, Maximum, Minimum: every broadcasting pattern and dtype, bitwise") {
  HUB_SKIP_UNLESS_CUDA();
  uint64_t seed = 1;
  for (DType dtype : kArith) {
    for (const ShapePair& p : kPairs) {
      INFO(dtype_name(dtype) << " " << p.a.to_string() << " (op) " << p.b.to_string());
      Tensor a = random_as(dtype, p.a, ++seed, -50, 50);
      Tensor b = random_as(dtype, p.b, ++seed, -50, 50);
      // Divisors away from zero (integers 1..8).
      Tensor d = random_as(dtype, p.b, ++seed, 1, 9);
      for (const char* op : {"Add", "Sub", "Mul", "Maximum", "Minimum"}) {
        INFO(op);
        compare_backends(op, {a, b}, {}, "cuda", 0, 0);
      }
      compare_backends("Div", {a, d}, {}, "cuda", 0, 0);
      // Ties for Maximum / Minimum.
      Tensor ta = small_ints(dtype, p.a, ++seed, -3, 4), tb = small_ints(dtype, p.b, ++seed, -3, 4);
      compare_backends("Maximum", {ta, tb}, {}, "cuda", 0, 0);
      compare_backends("Minimum", {ta, tb}, {}, "cuda", 0, 0);
    }
  }
}

TEST_CASE("cuda Add, Div, Maximum, Minimum: hand-computed values, integer truncation and NaN") {
  HUB_SKIP_UNLESS_CUDA();
  Tensor a = make({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor row = make({3}, {10, 20, 30});
  Tensor col = make({2, 1}, {100, 200});
  expect_close(run_op("Add", {a, row}, {}, "cuda")[0], make({2, 3}, {11, 22, 33, 14, 25, 36}), 0, 0);
  expect_close(run_op("Sub", {a, col}, {}, "cuda")[0], make({2, 3}, {-99, -98, -97, -196, -195, -194}), 0, 0);
  expect_close(run_op("Mul", {col, row}, {}, "cuda")[0], make({2, 3}, {1000, 2000, 3000, 2000, 4000, 6000}), 0, 0);
  // Integer division truncates toward zero.
  Tensor n = Tensor::from_vector<int32_t>({4}, {7, -7, 7, -7});
  Tensor m = Tensor::from_vector<int32_t>({4}, {2, 2, -2, -2});
  CHECK(run_op("Div", {n, m}, {}, "cuda")[0].to_vector<int32_t>() == std::vector<int32_t>{3, -3, -3, 3});
  Tensor n64 = Tensor::from_vector<int64_t>({2}, {int64_t{1} << 40, -(int64_t{1} << 40)});
  CHECK(run_op("Mul", {n64, Tensor::scalar<int64_t>(3)}, {}, "cuda")[0].to_vector<int64_t>() ==
        std::vector<int64_t>{3 * (int64_t{1} << 40), -3 * (int64_t{1} << 40)});
  // std::max / std::min: a where either is NaN (as the reference's Eigen max/min).
  Tensor x = make({4}, {kNaN, 1, kNaN, -kInf});
  Tensor y = make({4}, {1, kNaN, kNaN, kInf});
  compare_backends("Maximum", {x, y}, {}, "cuda", 0, 0);
  compare_backends("Minimum", {x, y}, {}, "cuda", 0, 0);
  compare_backends("Div", {make({3}, {1, -1, 0}), make({3}, {0, 0, 0})}, {}, "cuda", 0, 0);
  std::vector<float> mx = run_op("Maximum", {x, y}, {}, "cuda")[0].to_vector<float>();
  CHECK(std::isnan(mx[0]));
  CHECK(mx[1] == 1);
  CHECK(mx[3] == kInf);
}

TEST_CASE("cuda Pow, PowGrad: std::pow's special cases and broadcasting") {
  HUB_SKIP_UNLESS_CUDA();
  // (-8)^(1/3) NaN, (-2)^3 = -8, 0^0 = 1, 0^-1 = inf, 0^2 = 0, 2^0.5, 4^-0.5, 1^NaN = 1, (-1)^inf = 1.
  Tensor a = make({9}, {-8, -2, 0, 0, 0, 2, 4, 1, -1});
  Tensor b = make({9}, {1.0f / 3, 3, 0, -1, 2, 0.5f, -0.5f, kNaN, kInf});
  compare_backends("Pow", {a, b}, {}, "cuda", 0, 1e-6);
  std::vector<float> p = run_op("Pow", {a, b}, {}, "cuda")[0].to_vector<float>();
  CHECK(std::isnan(p[0]));
  CHECK(p[1] == -8);
  CHECK(p[2] == 1);
  CHECK(p[3] == kInf);
  CHECK(p[7] == 1);
  CHECK(p[8] == 1);
  // PowGrad's second output is 0 where a <= 0 (TF's mask), even where a^b is inf.
  Tensor g = random_tensor({9}, 3, 0.5f, 1.5f);
  compare_backends("PowGrad", {g, a, b}, {}, "cuda", 1e-6, 1e-5);
  std::vector<float> db = run_op("PowGrad", {g, a, b}, {}, "cuda")[1].to_vector<float>();
  for (int i : {0, 1, 2, 3, 4, 8}) CHECK(db[i] == 0);

  struct Case {
    Shape a, b;
  };
  const std::vector<Case> cases = {{{4, 1, 3}, {5, 1}}, {{}, {6}},        {{2, 3}, {2, 3}},
                                   {{300, 257}, {257}}, {{1, 70001}, {}}, {{0, 2}, {2}}};
  uint64_t seed = 10;
  for (const Case& k : cases) {
    INFO(k.a.to_string() << " ^ " << k.b.to_string());
    Tensor base = random_tensor(k.a, ++seed, 0.2f, 3.0f);
    Tensor signed_base = random_tensor(k.a, ++seed, -2.0f, 3.0f);  // negative bases: NaN for fractional b
    Tensor exponent = random_tensor(k.b, ++seed, -2.0f, 2.0f);
    Tensor grad = random_tensor(broadcast_shapes(k.a, k.b), ++seed);
    compare_backends("Pow", {base, exponent}, {}, "cuda", 1e-6, 1e-5);
    compare_backends("Pow", {signed_base, exponent}, {}, "cuda", 1e-6, 1e-5);
    compare_backends("PowGrad", {grad, base, exponent}, {}, "cuda", 1e-6, 1e-5);
    compare_backends("PowGrad", {grad, signed_base, exponent}, {}, "cuda", 1e-6, 1e-5);
  }
}

TEST_CASE("cuda MaximumGrad, MinimumGrad: ties send the gradient to a, every dtype and broadcast") {
  HUB_SKIP_UNLESS_CUDA();
  Tensor g = make({4}, {1, 2, 3, 4});
  Tensor a = make({4}, {1, 2, 3, 0});
  Tensor b = make({4}, {2, 2, 2, 2});
  auto mx = run_op("MaximumGrad", {g, a, b}, {}, "cuda");
  expect_close(mx[0], make({4}, {0, 2, 3, 0}), 0, 0);
  expect_close(mx[1], make({4}, {1, 0, 0, 4}), 0, 0);
  auto mn = run_op("MinimumGrad", {g, a, b}, {}, "cuda");
  expect_close(mn[0], make({4}, {1, 2, 0, 4}), 0, 0);
  expect_close(mn[1], make({4}, {0, 0, 3, 0}), 0, 0);

  struct Case {
    Shape g, a, b;
  };
  const std::vector<Case> cases = {
      {{3, 4, 5}, {4, 1}, {3, 1, 5}}, {{7}, {7}, {}},    {{}, {}, {}}, {{2, 1, 3, 6}, {2, 1, 3, 1}, {6}},
      {{300, 257}, {300, 1}, {257}},  {{0, 4}, {4}, {1}}};
  uint64_t seed = 40;
  for (DType dtype : kArith) {
    for (const Case& k : cases) {
      INFO(dtype_name(dtype) << " g " << k.g.to_string() << " a " << k.a.to_string() << " b " << k.b.to_string());
      Tensor gg = random_as(dtype, k.g, ++seed, -20, 20);
      Tensor aa = small_ints(dtype, k.a, ++seed, -3, 4), bb = small_ints(dtype, k.b, ++seed, -3, 4);
      compare_backends("MaximumGrad", {gg, aa, bb}, {}, "cuda", 0, 0);
      compare_backends("MinimumGrad", {gg, aa, bb}, {}, "cuda", 0, 0);
    }
  }
}

TEST_CASE("cuda AddN: 1 to 33 inputs (several launches), every dtype, bitwise") {
  HUB_SKIP_UNLESS_CUDA();
  uint64_t seed = 70;
  for (DType dtype : kArith) {
    for (int count : {1, 2, 3, 16, 17, 33}) {
      INFO(dtype_name(dtype) << ", " << count << " inputs");
      std::vector<Tensor> xs;
      for (int i = 0; i < count; ++i) xs.push_back(random_as(dtype, {5, 7}, ++seed, -100, 100));
      compare_backends("AddN", xs, {}, "cuda", 0, 0);
    }
    std::vector<Tensor> big, empty;
    for (int i = 0; i < 3; ++i) {
      big.push_back(random_as(dtype, {70001}, ++seed, -100, 100));
      empty.push_back(random_as(dtype, {0, 3}, ++seed, -1, 1));
    }
    compare_backends("AddN", big, {}, "cuda", 0, 0);
    compare_backends("AddN", empty, {}, "cuda", 0, 0);
  }
  expect_close(run_op("AddN", {make({2}, {1, 2}), make({2}, {10, 20}), make({2}, {100, 200})}, {}, "cuda")[0],
               make({2}, {111, 222}), 0, 0);
}

TEST_CASE("cuda Identity, StopGradient, ZerosLike, OnesLike: every dtype") {
  HUB_SKIP_UNLESS_CUDA();
  uint64_t seed = 90;
  for (DType dtype : {DType::kFloat32, DType::kInt32, DType::kInt64, DType::kUInt8, DType::kBool, DType::kInt8}) {
    for (const Shape& shape : {Shape{}, Shape{2, 3}, Shape{0, 4}, Shape{70001}}) {
      INFO(dtype_name(dtype) << " " << shape.to_string());
      Tensor x = small_ints(dtype, shape, ++seed, -3, 4);
      for (const char* op : {"Identity", "StopGradient", "ZerosLike", "OnesLike"}) {
        INFO(op);
        compare_backends(op, {x}, {}, "cuda", 0, 0);
      }
    }
  }
  expect_close(run_op("OnesLike", {make({3}, {-1, 0, 7})}, {}, "cuda")[0], make({3}, {1, 1, 1}), 0, 0);
  expect_close(run_op("ZerosLike", {make({3}, {-1, kNaN, 7})}, {}, "cuda")[0], make({3}, {0, 0, 0}), 0, 0);
}

TEST_CASE("cuda Add: rank 8 alternating broadcasts run on the GPU; past 8 merged dims the CPU does") {
  HUB_SKIP_UNLESS_CUDA();
  Tensor a8 = random_tensor({2, 1, 2, 1, 2, 1, 2, 1}, 1);
  Tensor b8 = random_tensor({1, 3, 1, 2, 1, 3, 1, 2}, 2);
  compare_backends("Add", {a8, b8}, {}, "cuda", 0, 0);
  Tensor a9 = random_tensor({2, 1, 2, 1, 2, 1, 2, 1, 2}, 3);
  Tensor b9 = random_tensor({1, 2, 1, 2, 1, 2, 1, 2, 1}, 4);
  CHECK(backend_used("Add", {a9, b9}, {}, "cuda") == "reference");
  expect_close(run_op("Add", {a9, b9}, {}, "cuda")[0], run_op("Add", {a9, b9})[0], 0, 0);
  // Size-1 dims merge away: rank 9 with few distinct patterns stays on the GPU.
  Tensor c9 = random_tensor({2, 1, 3, 4, 1, 1, 2, 5, 1}, 5);
  Tensor d9 = random_tensor({1, 1, 1, 1, 1, 1, 2, 5, 3}, 6);
  compare_backends("Mul", {c9, d9}, {}, "cuda", 0, 0);
}

TEST_CASE("cuda element-wise gradients match finite differences") {
  HUB_SKIP_UNLESS_CUDA();
  GradCheckOptions o;
  o.step = 1e-3;
  o.backend = "cuda";
  // Operands at least 0.1 apart, so Maximum / Minimum have no tie within a step.
  Tensor a = make({2, 3}, {-1.2f, 0.4f, 2.1f, 0.9f, -0.3f, 1.6f});
  Tensor b = make({3}, {0.5f, -0.8f, 1.3f});
  Tensor col = make({2, 1}, {0.7f, -1.1f});
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Maximum", "Minimum"}) {
    INFO(op);
    check_gradients(op, {a, b}, {}, o);
    check_gradients(op, {col, b}, {}, o);
  }
  Tensor base = make({2, 3}, {0.5f, 1.2f, 2.0f, 0.8f, 1.7f, 1.1f});
  check_gradients("Pow", {base, b}, {}, o);
  check_gradients("Pow", {base, make({}, {2.5f})}, {}, o);
  check_gradients("AddN", {a, random_tensor({2, 3}, 7), random_tensor({2, 3}, 8)}, {}, o);
  check_gradients("Identity", {a}, {}, o);
}
