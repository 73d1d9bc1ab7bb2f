// The CUDA reduction kernels (hub/ops/cuda/reduction.cu) against the
// reference: every axis combination of awkward shapes, every dtype, empty
// tensors and empty reductions, axes long enough to be split across blocks,
// ties and NaN for ArgMax/TopK, gradients through the CUDA kernels, and the
// nodes the kernels leave to the CPU.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {

Attrs red(std::vector<int64_t> axes, bool keep = false) { return Attrs().set("axes", axes).set("keep_dims", keep); }

std::string str(const std::vector<int64_t>& v) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < v.size(); ++i) s << (i ? "," : "") << v[i];
  s << "]";
  return s.str();
}

// Integers uniform in [lo, hi], deterministic for the seed.
template <class T>
Tensor random_ints(const Shape& shape, uint64_t seed, int lo, int hi) {
  Tensor f = random_tensor(shape, seed, static_cast<float>(lo), static_cast<float>(hi + 1));
  Tensor t(dtype_of<T>, shape);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<T>()[i] = static_cast<T>(std::floor(f.data<float>()[i]));
  return t;
}

// Every subset of x's dims (odd dims named by negative axes), keep_dims
// alternating; the empty subset is the attribute's default, "all dims".
std::vector<std::vector<int64_t>> axis_subsets(int rank) {
  std::vector<std::vector<int64_t>> subsets;
  for (int mask = 0; mask < (1 << rank); ++mask) {
    std::vector<int64_t> axes;
    for (int d = 0; d < rank; ++d)
      if (mask >> d & 1) axes.push_back(d % 2 ? d - rank : d);
    subsets.push_back(axes);
  }
  return subsets;
}

const char* const kReductions[] = {"Sum", "Mean", "Max", "Min", "Prod"};

}  // namespace

TEST_CASE("cuda Sum, Mean, Max, Min, Prod: every axis combination of awkward shapes, float32") {
  HUB_SKIP_UNLESS_CUDA();
  uint64_t seed = 1;
  for (const Shape& shape : {Shape{}, Shape{7}, Shape{1}, Shape{3, 1, 5}, Shape{2, 3, 4, 5}, Shape{5, 1, 7, 1, 3}}) {
    Tensor x = random_tensor(shape, seed++, -2.0f, 2.0f);
    Tensor positive = random_tensor(shape, seed++, 0.5f, 1.5f);  // products neither vanish nor explode
    int case_number = 0;
    for (const std::vector<int64_t>& axes : axis_subsets(shape.rank())) {
      const bool keep = case_number++ % 2 == 1;
      for (const char* op : kReductions) {
        INFO(op << " of " << x.spec_string() << " over " << str(axes) << (keep ? ", keep_dims" : ""));
        compare_backends(op, {std::string(op) == "Prod" ? positive : x}, red(axes, keep), "cuda");
      }
    }
  }
  // Duplicated and mixed-sign axes; only size-1 dims reduced (nothing to do).
  Tensor x = random_tensor({4, 1, 6, 1}, 99);
  for (const std::vector<int64_t>& axes :
       std::vector<std::vector<int64_t>>{{1, -3, 1}, {0, -4}, {1, 3}, {-1}, {2, -2, 0}}) {
    for (const char* op : kReductions) {
      INFO(op << " over " << str(axes));
      compare_backends(op, {x}, red(axes), "cuda");
      compare_backends(op, {x}, red(axes, true), "cuda");
    }
  }
  // A row of -inf: Max is -inf (the kernels' identity must not leak out).
  const float inf = std::numeric_limits<float>::infinity();
  compare_backends("Max", {make({2, 3}, {-inf, -inf, -inf, 1, -inf, 2})}, red({1}), "cuda");
  compare_backends("Min", {make({2, 3}, {inf, inf, inf, 1, inf, 2})}, red({1}), "cuda");
}

TEST_CASE_TEMPLATE("cuda Sum, Mean, Max, Min, Prod: integers are exact", T, int32_t, int64_t) {
  HUB_SKIP_UNLESS_CUDA();
  for (const Shape& shape : {Shape{5}, Shape{3, 1, 4}, Shape{2, 3, 5}}) {
    Tensor x = random_ints<T>(shape, 7, -50, 50);
    Tensor small = random_ints<T>(shape, 8, -3, 3);  // products of at most 30 stay in range
    for (const std::vector<int64_t>& axes : axis_subsets(shape.rank()))
      for (const char* op : kReductions) {
        INFO(op << " of " << x.spec_string() << " over " << str(axes));
        compare_backends(op, {std::string(op) == "Prod" ? small : x}, red(axes), "cuda", 0, 0);
      }
  }
  // Mean truncates toward zero, as TF.
  Tensor x = Tensor::from_vector<T>({2, 3}, {1, 2, 2, -1, -2, -2});
  compare_backends("Mean", {x}, red({1}), "cuda", 0, 0);
  // Large int64 values are summed exactly.
  if constexpr (std::is_same_v<T, int64_t>)
    compare_backends("Sum", {Tensor::from_vector<int64_t>({3}, {int64_t{1} << 40, 1, -(int64_t{1} << 41)})}, red({}),
                     "cuda", 0, 0);
}

TEST_CASE("cuda Sum, Mean, Max, Min, Prod: empty tensors and empty reductions") {
  HUB_SKIP_UNLESS_CUDA();
  // Reducing an empty axis gives the identity: Sum 0, Mean NaN, Max lowest,
  // Min highest, Prod 1; an empty output is no work at all.
  for (const char* op : kReductions) {
    INFO(op);
    compare_backends(op, {Tensor(DType::kFloat32, {0, 3})}, red({0}), "cuda", 0, 0);
    compare_backends(op, {Tensor(DType::kFloat32, {2, 0, 3})}, red({1}, true), "cuda", 0, 0);
    compare_backends(op, {Tensor(DType::kFloat32, {0})}, red({}), "cuda", 0, 0);
    if (std::string(op) != "Mean") {
      compare_backends(op, {Tensor(DType::kInt32, {0, 3})}, red({0}), "cuda", 0, 0);
      compare_backends(op, {Tensor(DType::kInt64, {4, 0})}, red({-1}), "cuda", 0, 0);
    }
  }
  // An empty output (a kept dim of size 0 after the reduced one).
  for (const char* op : kReductions) {
    INFO(op);
    compare_backends(op, {Tensor(DType::kFloat32, {3, 0})}, red({0}), "cuda", 0, 0);
  }
  // An integer mean of nothing has no value: the same error as the reference.
  expect_error(
      Code::kInvalidArgument,
      [] {
        run_op("Mean", {Tensor(DType::kInt32, {0, 3})}, red({0}), "cuda");
      },
      "empty axis");
}

TEST_CASE("cuda Sum, Mean, Max, Min, Prod: long axes split across blocks, many outputs") {
  HUB_SKIP_UNLESS_CUDA();
  // Positive values, so a sum's rounding is relative to its size.
  struct Case {
    Shape shape;
    std::vector<int64_t> axes;
  };
  const std::vector<Case> cases = {
      {{300001}, {}},            // one long row: segments, then their combination
      {{3, 70001}, {1}},         // a few long rows
      {{70001, 3}, {0}},         // a few long columns (inner 3)
      {{2, 40001, 5}, {1}},      // columns with an outer dim
      {{1031, 257}, {0}},        // many columns, reduced dim longer than a block
      {{257, 1031}, {1}},        // many rows longer than a block
      {{70001, 2}, {1}},         // many short rows
      {{65, 33, 129}, {0, 2}},   // two reduced runs: two passes
      {{9, 17, 33, 65}, {1, 3}}  // two reduced runs with kept dims between and before
  };
  for (const Case& c : cases) {
    Tensor x = random_tensor(c.shape, 5, 0.0f, 1.0f);
    for (const char* op : {"Sum", "Mean", "Max", "Min"}) {
      INFO(op << " of " << x.spec_string() << " over " << str(c.axes));
      compare_backends(op, {x}, red(c.axes), "cuda", 1e-3, 1e-4);
    }
  }
  // Products of values near 1 over a long axis.
  compare_backends("Prod", {random_tensor({3, 4097}, 6, 0.99f, 1.01f)}, red({1}), "cuda", 1e-5, 1e-4);
  compare_backends("Prod", {random_tensor({4097, 5}, 7, 0.99f, 1.01f)}, red({0}), "cuda", 1e-5, 1e-4);
  // int32 over a long axis, exactly.
  compare_backends("Sum", {random_ints<int32_t>({3, 100003}, 8, -1000, 1000)}, red({1}), "cuda", 0, 0);
  compare_backends("Max", {random_ints<int64_t>({100003, 3}, 9, -100000, 100000)}, red({0}), "cuda", 0, 0);
}

TEST_CASE("cuda Sum, Mean, Max, Min, Prod, L2Loss: gradients through the CUDA kernels") {
  HUB_SKIP_UNLESS_CUDA();
  const GradCheckOptions o = on_cuda({.step = 1e-3});
  Tensor x = random_tensor({2, 3, 4}, 11);
  check_gradients("Sum", {x}, red({0, 2}), o);
  check_gradients("Mean", {x}, red({-1}, true), o);
  check_gradients("Max", {x}, red({1}), o);
  check_gradients("Min", {x}, red({0, 2}, true), o);
  check_gradients("Prod", {random_tensor({2, 3, 4}, 12, 0.5f, 1.5f)}, red({0, 2}), o);
  check_gradients("L2Loss", {x}, {}, o);
}

TEST_CASE("cuda ProdGrad: the reference's products bit for bit, exact with zeros") {
  HUB_SKIP_UNLESS_CUDA();
  struct Case {
    Shape x;
    std::vector<int64_t> axes;
    bool keep;
  };
  const std::vector<Case> cases = {
      {{4, 5}, {1}, false},       {{4, 5}, {0}, true},
      {{3, 4, 5}, {0, 2}, false}, {{2, 3, 4, 5}, {1, 3}, true},
      {{2, 3, 4, 5}, {}, false},  {{3, 1, 5}, {1}, false},
      {{7}, {}, false},           {{2, 3, 2, 3, 2, 3, 2}, {0, 2, 4, 6}, false},  // four reduced runs
      {{1031, 70}, {1}, false},                                                  // many groups (> 65536 elements)
  };
  uint64_t seed = 20;
  for (const Case& c : cases) {
    Tensor x = random_tensor(c.x, seed++, -2.0f, 2.0f);
    float* px = x.data<float>();
    for (int64_t i = 0; i < x.num_elements(); i += 3) px[i] = 0.0f;  // groups with one zero and with several
    Tensor y = run_op("Prod", {x}, red(c.axes, c.keep))[0];
    Tensor g = random_tensor(y.shape(), seed++);
    INFO("ProdGrad of " << x.spec_string() << " over " << str(c.axes) << (c.keep ? ", keep_dims" : ""));
    compare_backends("ProdGrad", {g, x}, red(c.axes, c.keep), "cuda", 0, 0);
  }
  // A few long groups would leave the GPU idle (one thread walks a group): the CPU runs them.
  Tensor x = random_tensor({3, 5000}, 30, 0.9f, 1.1f);
  CHECK(backend_used("ProdGrad", {random_tensor({3}, 31), x}, red({1}), "cuda") == "reference");
  // So do more than four reduced runs (the kernel's fixed-size odometer).
  Tensor x9 = random_tensor({2, 2, 2, 2, 2, 2, 2, 2, 2}, 32);
  CHECK(backend_used("ProdGrad", {random_tensor({2, 2, 2, 2}, 33), x9}, red({0, 2, 4, 6, 8}), "cuda") == "reference");
  // Empty x: nothing to write.
  compare_backends("ProdGrad", {Tensor(DType::kFloat32, {3}), Tensor(DType::kFloat32, {3, 0})}, red({1}), "cuda");
}

TEST_CASE("cuda ArgMax: every axis, ties to the first, NaN as the reference, every dtype, long axes") {
  HUB_SKIP_UNLESS_CUDA();
  auto arg = [](int64_t axis) { return Attrs().set("axis", axis); };
  // Values from a small set, so ties are common.
  Tensor f = random_ints<int32_t>({5, 1, 7, 3}, 40, -3, 3);
  Tensor x(DType::kFloat32, f.shape());
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = static_cast<float>(f.data<int32_t>()[i]);
  Tensor l = random_ints<int64_t>(f.shape(), 41, -3, 3);
  for (int64_t axis : {0, 1, 2, 3, -1, -3})
    for (const Tensor& t : {x, f, l}) {
      INFO("ArgMax of " << t.spec_string() << " along " << axis);
      compare_backends("ArgMax", {t}, arg(axis), "cuda", 0, 0);
    }
  compare_backends("ArgMax", {make({1}, {4})}, arg(0), "cuda", 0, 0);
  compare_backends("ArgMax", {Tensor(DType::kFloat32, {0, 4})}, arg(1), "cuda", 0, 0);
  // The reference scans with `>` from the first element: a NaN there wins,
  // a NaN later never does; a row of -inf gives 0.
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  Tensor odd = make({5, 3}, {nan, 1, 2, 1, nan, 3, 1, nan, 0, -inf, -inf, -inf, nan, nan, nan});
  compare_backends("ArgMax", {odd}, arg(1), "cuda", 0, 0);
  compare_backends("ArgMax", {odd}, arg(0), "cuda", 0, 0);
  // Long axes (split into segments) and many outputs, with ties across segments.
  Tensor big = random_ints<int32_t>({3, 200003}, 42, -1000, 1000);
  compare_backends("ArgMax", {big}, arg(1), "cuda", 0, 0);
  compare_backends("ArgMax", {random_tensor({100003, 3}, 43)}, arg(0), "cuda", 0, 0);
  compare_backends("ArgMax", {random_tensor({257, 1031}, 44)}, arg(-1), "cuda", 0, 0);
}

TEST_CASE("cuda TopK and TopKGrad: ties to the lower index, every dtype, small k on the GPU") {
  HUB_SKIP_UNLESS_CUDA();
  auto top = [](int64_t k) { return Attrs().set("k", k); };
  Tensor ties = random_ints<int32_t>({6, 37}, 50, 0, 5);
  Tensor tf(DType::kFloat32, ties.shape());
  for (int64_t i = 0; i < tf.num_elements(); ++i) tf.data<float>()[i] = static_cast<float>(ties.data<int32_t>()[i]);
  for (int64_t k : {0, 1, 3, 12, 37}) {
    INFO("k = " << k);
    compare_backends("TopK", {tf}, top(k), "cuda", 0, 0);
    compare_backends("TopK", {ties}, top(k), "cuda", 0, 0);
    compare_backends("TopK", {random_ints<int64_t>({2, 3, 37}, 51, -1000, 1000)}, top(k), "cuda", 0, 0);
  }
  compare_backends("TopK", {random_tensor({300, 1031}, 52)}, top(5), "cuda", 0, 0);   // many rows
  compare_backends("TopK", {random_tensor({2, 100003}, 53)}, top(64), "cuda", 0, 0);  // long rows, k at the limit
  compare_backends("TopK", {random_tensor({4}, 54)}, top(2), "cuda", 0, 0);
  compare_backends("TopK", {Tensor(DType::kFloat32, {0, 5})}, top(2), "cuda", 0, 0);
  // NaN ranks above every number, NaNs in index order, on both sides.
  Tensor nans = random_tensor({5, 300}, 56);
  for (int64_t i = 0; i < nans.num_elements(); i += 7) nans.data<float>()[i] = kNaN;
  for (int64_t k : {1, 10, 64}) compare_backends("TopK", {nans}, top(k), "cuda", 0, 0);
  // k above the limit: the CPU's partial sort.
  CHECK(backend_used("TopK", {random_tensor({2, 100}, 55)}, top(65), "cuda") == "reference");

  // TopKGrad: gradients to the picks; repeated indices accumulate in order.
  Tensor x = random_tensor({3, 10}, 56);
  Tensor g = random_tensor({3, 4}, 57);
  Tensor idx = Tensor::from_vector<int32_t>({3, 4}, {1, 9, 0, 4, 7, 7, 2, 7, 0, 1, 2, 3});
  compare_backends("TopKGrad", {g, idx, x}, {}, "cuda", 0, 0);
  Tensor xi = random_ints<int64_t>({3, 10}, 58, -5, 5), gi = random_ints<int64_t>({3, 4}, 59, -5, 5);
  compare_backends("TopKGrad", {gi, idx, xi}, {}, "cuda", 0, 0);
  Tensor xb = random_tensor({300, 1031}, 60);
  std::vector<Tensor> picked = run_op("TopK", {xb}, top(5));
  compare_backends("TopKGrad", {random_tensor({300, 5}, 61), picked[1], xb}, {}, "cuda", 0, 0);
  compare_backends("TopKGrad", {Tensor(DType::kFloat32, {3, 0}), Tensor(DType::kInt32, {3, 0}), x}, {}, "cuda", 0, 0);

  // Gradient of TopK's values (distinct values, so finite differences keep the order).
  Tensor distinct = make({2, 5}, {0.1f, 0.9f, 0.5f, 0.3f, 0.7f, 0.6f, 0.2f, 0.8f, 0.4f, 0.0f});
  check_gradients("TopK", {distinct}, top(3), on_cuda({.step = 1e-3}));
}

TEST_CASE("cuda L2Loss: scalar, empty, awkward and long inputs") {
  HUB_SKIP_UNLESS_CUDA();
  compare_backends("L2Loss", {Tensor::scalar<float>(3.0f)}, {}, "cuda", 0, 0);
  compare_backends("L2Loss", {Tensor(DType::kFloat32, {0, 3})}, {}, "cuda", 0, 0);
  compare_backends("L2Loss", {random_tensor({7}, 70)}, {}, "cuda");
  compare_backends("L2Loss", {random_tensor({3, 5, 7}, 71)}, {}, "cuda");
  compare_backends("L2Loss", {random_tensor({300001}, 72)}, {}, "cuda", 1e-3, 1e-4);
}

TEST_CASE("cuda ReduceToLike: sums over the broadcast dims, in any dtype") {
  HUB_SKIP_UNLESS_CUDA();
  Tensor x = random_tensor({4, 3, 5}, 80);
  for (const Shape& like : {Shape{}, Shape{1}, Shape{5}, Shape{3, 1}, Shape{1, 5}, Shape{3, 5}, Shape{4, 1, 1},
                            Shape{4, 1, 5}, Shape{1, 3, 1}, Shape{1, 1, 1}, Shape{4, 3, 5}}) {
    INFO("x " << x.spec_string() << " like " << like.to_string());
    compare_backends("ReduceToLike", {x, Tensor::zeros(DType::kFloat32, like)}, {}, "cuda");
    compare_backends("ReduceToLike", {random_ints<int32_t>(x.shape(), 81, -9, 9), Tensor::zeros(DType::kInt32, like)},
                     {}, "cuda", 0, 0);
  }
  Tensor big = random_tensor({65, 129, 33}, 82, 0.0f, 1.0f);
  for (const Shape& like : {Shape{129, 1}, Shape{33}, Shape{65, 1, 33}, Shape{}})
    compare_backends("ReduceToLike", {big, Tensor::zeros(DType::kFloat32, like)}, {}, "cuda", 1e-3, 1e-4);
  compare_backends("ReduceToLike", {random_ints<int64_t>({2, 0, 3}, 83, -9, 9), Tensor::zeros(DType::kInt64, {1, 3})},
                   {}, "cuda", 0, 0);
}
