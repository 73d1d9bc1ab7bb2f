// The CUDA kernels of hub/ops/math.h against the reference: unary math on
// every dtype and rank (with IEEE domain results by hand), Cast between every
// pair of dtypes, comparisons with ties, NaN and broadcasting, BroadcastTo and
// BroadcastLike (with reduced axes) on every element size, and
// finite-difference gradients on the cuda backend.
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

const DType kAll[] = {DType::kFloat32, DType::kInt32, DType::kInt64, DType::kUInt8, DType::kBool, DType::kInt8};

// Scalars, size-1 dims, ranks 1..5, a float4 tail, > 65536 elements, empty.
const std::vector<Shape> kMathShapes = {{}, {1}, {7}, {3, 1, 5}, {2, 3, 4, 5, 6}, {70001}, {0, 3}};

Attrs dtype_attr(DType d) { return Attrs().set("dtype", d); }

}  // namespace

TEST_CASE("cuda Neg, Square, Abs, Sign: every dtype and rank, bitwise") {
  HUB_SKIP_UNLESS_CUDA();
  uint64_t seed = 1;
  for (DType dtype : kArith) {
    for (const Shape& shape : kMathShapes) {
      INFO(dtype_name(dtype) << " " << shape.to_string());
      Tensor x = random_as(dtype, shape, ++seed, -50, 50);  // integers include zeros
      for (const char* op : {"Neg", "Square", "Abs", "Sign"}) {
        INFO(op);
        compare_backends(op, {x}, {}, "cuda", 0, 0);
      }
    }
  }
  Tensor x = make({6}, {-2.5f, -0.0f, 0, 3, kNaN, -kInf});
  compare_backends("Sign", {x}, {}, "cuda", 0, 0);
  expect_close(run_op("Sign", {x}, {}, "cuda")[0], make({6}, {-1, 0, 0, 1, 0, -1}), 0, 0);
  expect_close(run_op("Abs", {x}, {}, "cuda")[0], make({6}, {2.5f, 0, 0, 3, kNaN, kInf}), 0, 0);
  Tensor i = Tensor::from_vector<int64_t>({3}, {-(int64_t{1} << 33), 0, 5});
  CHECK(run_op("Abs", {i}, {}, "cuda")[0].to_vector<int64_t>() == std::vector<int64_t>{int64_t{1} << 33, 0, 5});
  CHECK(run_op("Sign", {i}, {}, "cuda")[0].to_vector<int64_t>() == std::vector<int64_t>{-1, 0, 1});
}

TEST_CASE("cuda Sqrt, Rsqrt, Exp, Log, Reciprocal: every rank, IEEE domain results") {
  HUB_SKIP_UNLESS_CUDA();
  struct Op {
    const char* name;
    float lo, hi;
  };
  const Op ops[] = {
      {"Sqrt", 0, 100}, {"Rsqrt", 1e-3f, 100}, {"Exp", -80, 80}, {"Log", 1e-3f, 1e3f}, {"Reciprocal", -4, 4}};
  uint64_t seed = 20;
  for (const Shape& shape : kMathShapes) {
    for (const Op& op : ops) {
      INFO(op.name << " " << shape.to_string());
      compare_backends(op.name, {random_tensor(shape, ++seed, op.lo, op.hi)}, {}, "cuda", 1e-6, 1e-5);
    }
  }
  expect_close(run_op("Sqrt", {make({4}, {-1, 0, 4, kInf})}, {}, "cuda")[0], make({4}, {kNaN, 0, 2, kInf}), 0, 0);
  expect_close(run_op("Log", {make({4}, {0, -1, 1, kInf})}, {}, "cuda")[0], make({4}, {-kInf, kNaN, 0, kInf}), 0, 0);
  expect_close(run_op("Reciprocal", {make({4}, {0, -0.0f, 4, kInf})}, {}, "cuda")[0],
               make({4}, {kInf, -kInf, 0.25f, 0}), 0, 0);
  expect_close(run_op("Exp", {make({3}, {0, -kInf, 1})}, {}, "cuda")[0], make({3}, {1, 0, std::exp(1.0f)}), 0, 1e-6);
  expect_close(run_op("Rsqrt", {make({2}, {4, 0.25f})}, {}, "cuda")[0], make({2}, {0.5f, 2}), 0, 1e-6);
}

TEST_CASE("cuda Erf, rounding, trigonometric and hyperbolic functions: every rank, against the reference") {
  HUB_SKIP_UNLESS_CUDA();
  struct Op {
    const char* name;
    float lo, hi;
  };
  // Inside each domain, away from Tan's poles.
  const Op ops[] = {{"Erf", -4, 4},     {"Floor", -50, 50}, {"Ceil", -50, 50},       {"Round", -50, 50},
                    {"Sin", -10, 10},   {"Cos", -10, 10},   {"Tan", -1.5f, 1.5f},    {"Asin", -1, 1},
                    {"Acos", -1, 1},    {"Atan", -20, 20},  {"Sinh", -10, 10},       {"Cosh", -10, 10},
                    {"Asinh", -20, 20}, {"Acosh", 1, 20},   {"Atanh", -0.99f, 0.99f}};
  uint64_t seed = 40;
  for (const Shape& shape : kMathShapes) {
    for (const Op& op : ops) {
      INFO(op.name << " " << shape.to_string());
      compare_backends(op.name, {random_tensor(shape, ++seed, op.lo, op.hi)}, {}, "cuda", 1e-5, 1e-5);
    }
  }
  // Halves to even; exact integers and infinities unchanged.
  expect_close(run_op("Round", {make({6}, {0.5f, 1.5f, 2.5f, -0.5f, -2.5f, kInf})}, {}, "cuda")[0],
               make({6}, {0, 2, 2, 0, -2, kInf}), 0, 0);
  expect_close(run_op("Floor", {make({3}, {-1.5f, 2, -kInf})}, {}, "cuda")[0], make({3}, {-2, 2, -kInf}), 0, 0);
  expect_close(run_op("Ceil", {make({3}, {-1.5f, 2, kInf})}, {}, "cuda")[0], make({3}, {-1, 2, kInf}), 0, 0);
  CHECK(std::isnan(run_op("Asin", {make({1}, {2})}, {}, "cuda")[0].to_vector<float>()[0]));
  CHECK(std::isinf(run_op("Atanh", {make({1}, {1})}, {}, "cuda")[0].to_vector<float>()[0]));
}

TEST_CASE("cuda LogicalNot, LogicalAnd, LogicalOr and bool Equal/NotEqual: broadcasting") {
  HUB_SKIP_UNLESS_CUDA();
  Tensor a = Tensor::from_vector<bool>({2, 2}, {true, true, false, false});
  Tensor b = Tensor::from_vector<bool>({2}, {true, false});
  for (const char* op : {"LogicalAnd", "LogicalOr", "Equal", "NotEqual"}) {
    INFO(op);
    compare_backends(op, {a, b}, {}, "cuda", 0, 0);
  }
  compare_backends("LogicalNot", {a}, {}, "cuda", 0, 0);
  CHECK(run_op("LogicalAnd", {a, b}, {}, "cuda")[0].to_vector<bool>() == std::vector<bool>{true, false, false, false});
  CHECK(run_op("NotEqual", {a, b}, {}, "cuda")[0].to_vector<bool>() == std::vector<bool>{false, true, true, false});
  Tensor big = Tensor::from_vector<bool>({70001}, std::vector<bool>(70001, true));
  compare_backends("LogicalOr", {big, Tensor::from_vector<bool>({1}, {false})}, {}, "cuda", 0, 0);
}

TEST_CASE("cuda Cast: every pair of dtypes, static_cast rules") {
  HUB_SKIP_UNLESS_CUDA();
  // Source values inside both dtypes' ranges (out-of-range casts are undefined).
  auto range = [](DType d, float* lo, float* hi) {
    switch (d) {
      case DType::kUInt8:
        *lo = std::max(*lo, 0.0f), *hi = std::min(*hi, 255.0f);
        break;
      case DType::kInt8:
        *lo = std::max(*lo, -128.0f), *hi = std::min(*hi, 127.0f);
        break;
      case DType::kBool:
        *lo = std::max(*lo, 0.0f), *hi = std::min(*hi, 2.0f);
        break;
      default:
        break;
    }
  };
  uint64_t seed = 40;
  for (DType from : kAll) {
    for (DType to : kAll) {
      float lo = -1000, hi = 1000;
      range(from, &lo, &hi);
      range(to, &lo, &hi);
      for (const Shape& shape : {Shape{}, Shape{5}, Shape{3, 1, 4}, Shape{70001}, Shape{0, 2}}) {
        INFO(dtype_name(from) << " -> " << dtype_name(to) << " " << shape.to_string());
        Tensor x = random_tensor(shape, ++seed, lo, hi);
        float* p = x.data<float>();
        for (int64_t i = 0; i < x.num_elements(); i += 3) p[i] = 0;  // zeros for the bool results
        if (from != DType::kFloat32) x = cast(x, from);
        compare_backends("Cast", {x}, dtype_attr(to), "cuda", 0, 0);
      }
    }
  }
  Tensor f = make({7}, {-2.7f, -0.5f, 0, 0.5f, 2.7f, 255, kNaN});
  CHECK(run_op("Cast", {f}, dtype_attr(DType::kBool), "cuda")[0].to_vector<bool>() ==
        std::vector<bool>{true, true, false, true, true, true, true});
  Tensor g = make({6}, {-2.7f, -0.5f, 0, 0.5f, 2.7f, 255});
  CHECK(run_op("Cast", {g}, dtype_attr(DType::kInt32), "cuda")[0].to_vector<int32_t>() ==
        std::vector<int32_t>{-2, 0, 0, 0, 2, 255});
  Tensor big = Tensor::from_vector<int64_t>({2}, {(int64_t{1} << 24) + 1, (int64_t{1} << 32) + 7});
  CHECK(run_op("Cast", {big}, dtype_attr(DType::kInt32), "cuda")[0].to_vector<int32_t>() ==
        std::vector<int32_t>{(1 << 24) + 1, 7});
  compare_backends("Cast", {big}, dtype_attr(DType::kFloat32), "cuda", 0, 0);  // rounds to nearest even
}

TEST_CASE("cuda Equal, NotEqual, Greater, GreaterEqual, Less, LessEqual: ties, NaN, broadcasting, every dtype") {
  HUB_SKIP_UNLESS_CUDA();
  struct Pair {
    Shape a, b;
  };
  const std::vector<Pair> pairs = {
      {{7}, {7}},          {{}, {5}},     {{3, 1, 5}, {4, 1}}, {{2, 1, 3, 1, 4}, {1, 5, 1, 6, 1}},
      {{300, 257}, {257}}, {{70001}, {}}, {{0, 3}, {3}}};
  const char* const ops[] = {"Equal", "NotEqual", "Greater", "GreaterEqual", "Less", "LessEqual"};
  uint64_t seed = 60;
  for (DType dtype : {DType::kFloat32, DType::kInt32, DType::kInt64, DType::kUInt8}) {
    for (const Pair& p : pairs) {
      INFO(dtype_name(dtype) << " " << p.a.to_string() << " vs " << p.b.to_string());
      Tensor a = small_ints(dtype, p.a, ++seed, 0, 4), b = small_ints(dtype, p.b, ++seed, 0, 4);
      for (const char* op : ops) {
        INFO(op);
        compare_backends(op, {a, b}, {}, "cuda", 0, 0);
      }
    }
  }
  Tensor x = make({4}, {kNaN, kNaN, 1, -kInf});
  Tensor y = make({4}, {kNaN, 1, 1, kInf});
  for (const char* op : ops) compare_backends(op, {x, y}, {}, "cuda", 0, 0);
  CHECK(run_op("Equal", {x, y}, {}, "cuda")[0].to_vector<bool>() == std::vector<bool>{false, false, true, false});
  CHECK(run_op("NotEqual", {x, y}, {}, "cuda")[0].to_vector<bool>() == std::vector<bool>{true, true, false, true});
  CHECK(run_op("LessEqual", {x, y}, {}, "cuda")[0].to_vector<bool>() == std::vector<bool>{false, false, true, true});
}

TEST_CASE("cuda BroadcastTo, BroadcastLike: every element size, both-way broadcasts, reduced axes, aliasing") {
  HUB_SKIP_UNLESS_CUDA();
  struct To {
    Shape x;
    std::vector<int64_t> shape;
  };
  const std::vector<To> to_cases = {{{3, 1}, {2, 3, 4}}, {{}, {5}},    {{1, 4}, {3, 1}},
                                    {{2, 3}, {2, 3}},    {{2, 3}, {}}, {{3, 1, 2}, {2, 1, 4, 1}},
                                    {{257}, {300, 257}}, {{1}, {0}},   {{1, 1}, {70001, 1}}};
  struct Like {
    Shape x, like;
    std::vector<int64_t> axes;
  };
  const std::vector<Like> like_cases = {{{3}, {4, 3}, {}},       {{4}, {4, 5}, {1}},        {{3}, {2, 3, 4}, {0, 2}},
                                        {{4}, {4, 5}, {-1}},     {{4}, {4, 1}, {1}},        {{2, 3}, {2, 3}, {}},
                                        {{257}, {300, 257}, {}}, {{300}, {300, 257}, {-1}}, {{2}, {0, 2}, {}},
                                        {{}, {2, 3}, {}},        {{1, 3}, {2, 1, 3}, {}}};
  uint64_t seed = 80;
  for (DType dtype : kAll) {
    for (const To& k : to_cases) {
      INFO(dtype_name(dtype) << " " << k.x.to_string() << " to " << Shape(k.shape).to_string());
      compare_backends("BroadcastTo", {small_ints(dtype, k.x, ++seed, 0, 4)}, Attrs().set("shape", k.shape), "cuda", 0,
                       0);
    }
    for (const Like& k : like_cases) {
      INFO(dtype_name(dtype) << " " << k.x.to_string() << " like " << k.like.to_string() << " reduced_axes "
                             << Shape(k.axes).to_string());
      compare_backends("BroadcastLike", {small_ints(dtype, k.x, ++seed, 0, 4), random_tensor(k.like, ++seed)},
                       Attrs().set("reduced_axes", k.axes), "cuda", 0, 0);
    }
  }
  expect_close(run_op("BroadcastLike", {make({2}, {1, 2}), random_tensor({2, 3}, 1)},
                      Attrs().set("reduced_axes", std::vector<int64_t>{1}), "cuda")[0],
               make({2, 3}, {1, 1, 1, 2, 2, 2}), 0, 0);
  expect_close(
      run_op("BroadcastTo", {make({3}, {1, 2, 3})}, Attrs().set("shape", std::vector<int64_t>{2, 1}), "cuda")[0],
      make({2, 3}, {1, 2, 3, 1, 2, 3}), 0, 0);
}

TEST_CASE("cuda math gradients match finite differences") {
  HUB_SKIP_UNLESS_CUDA();
  GradCheckOptions o;
  o.step = 1e-3;
  o.backend = "cuda";
  // Away from 0 (Abs, Sign) and inside each domain.
  Tensor x = make({2, 3}, {-1.3f, -0.4f, 0.6f, 1.1f, -2.2f, 0.9f});
  Tensor pos = make({2, 3}, {0.4f, 0.9f, 1.5f, 2.2f, 3.1f, 0.7f});
  for (const char* op : {"Neg", "Square", "Abs", "Sign", "Exp", "Reciprocal"}) {
    INFO(op);
    check_gradients(op, {x}, {}, o);
  }
  for (const char* op : {"Sqrt", "Rsqrt", "Log"}) {
    INFO(op);
    check_gradients(op, {pos}, {}, o);
  }
  Tensor unit = make({2, 3}, {-0.7f, -0.3f, 0.2f, 0.45f, 0.6f, -0.85f});  // Asin, Acos, Atanh: |x| < 1
  for (const char* op : {"Erf", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Atanh"}) {
    INFO(op);
    check_gradients(op, {unit}, {}, o);
  }
  check_gradients("Acosh", {make({2, 3}, {1.2f, 1.5f, 2, 2.5f, 3, 4})}, {}, o);
  for (const char* op : {"Floor", "Ceil", "Round"}) {  // zero away from the steps
    INFO(op);
    check_gradients(op, {make({2, 3}, {-1.7f, -0.8f, -0.2f, 0.3f, 1.2f, 2.2f})}, {}, o);
  }
  check_gradients("Cast", {x}, dtype_attr(DType::kFloat32), o);
  check_gradients("BroadcastTo", {make({3, 1}, {0.5f, -1, 2})}, Attrs().set("shape", std::vector<int64_t>{2, 3, 4}), o);
  GradCheckOptions x_only = o;
  x_only.inputs = {0};  // `like` gets no gradient
  check_gradients("BroadcastLike", {make({2}, {0.5f, -1}), random_tensor({2, 3}, 2)},
                  Attrs().set("reduced_axes", std::vector<int64_t>{1}), x_only);
  check_gradients("BroadcastLike", {make({3}, {0.5f, -1, 2}), random_tensor({2, 3}, 3)}, {}, x_only);
}
