// The CUDA softmax family (hub/ops/cuda/softmax.cu) against the reference:
// Softmax and LogSoftmax (cuDNN) on every axis, the cross-entropy row kernels
// on short, long and many rows, the sparse kernel's NaN rows for labels
// outside [0, C), OneHot, and gradients through the CUDA kernels.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {

Attrs axis_attr(int64_t axis) { return Attrs().set("axis", axis); }

// Rows that are probability distributions (what the dense labels should be).
Tensor distributions(int64_t rows, int64_t classes, uint64_t seed) {
  Tensor t = random_tensor({rows, classes}, seed, 0.0f, 1.0f);
  float* p = t.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    float sum = 0.0f;
    for (int64_t c = 0; c < classes; ++c) sum += p[r * classes + c];
    for (int64_t c = 0; c < classes; ++c) p[r * classes + c] /= sum;
  }
  return t;
}

// Class ids uniform in [0, classes), deterministic for the seed.
template <class T>
Tensor class_ids(int64_t rows, int64_t classes, uint64_t seed) {
  Tensor f = random_tensor({rows}, seed, 0.0f, static_cast<float>(classes));
  Tensor t(dtype_of<T>, {rows});
  for (int64_t r = 0; r < rows; ++r)
    t.data<T>()[r] = std::min<T>(static_cast<T>(f.data<float>()[r]), static_cast<T>(classes - 1));
  return t;
}

// [rows, classes] shapes: one class, odd, longer than a block, many rows, long rows.
const std::vector<std::pair<int64_t, int64_t>> kRowShapes = {{1, 1}, {3, 7}, {5, 1031}, {70001, 3}, {2, 70001}};

}  // namespace

TEST_CASE("cuda Softmax, LogSoftmax: every axis of awkward shapes, stable for large logits") {
  HUB_SKIP_UNLESS_CUDA();
  uint64_t seed = 1;
  for (const Shape& shape : {Shape{7}, Shape{1}, Shape{1, 1}, Shape{3, 1, 5}, Shape{2, 3, 4, 5}}) {
    Tensor x = random_tensor(shape, seed++, -4.0f, 4.0f);
    for (int64_t axis = -shape.rank(); axis < shape.rank(); ++axis)
      for (const char* op : {"Softmax", "LogSoftmax"}) {
        INFO(op << " of " << x.spec_string() << " along " << axis);
        compare_backends(op, {x}, axis_attr(axis), "cuda", 1e-5, 1e-5);
      }
  }
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    INFO(op);
    Tensor big = random_tensor({513, 1031}, 10, -4.0f, 4.0f);
    compare_backends(op, {big}, axis_attr(-1), "cuda", 1e-5, 1e-4);
    compare_backends(op, {big}, axis_attr(0), "cuda", 1e-5, 1e-4);
    compare_backends(op, {random_tensor({2, 70001}, 11, -4.0f, 4.0f)}, axis_attr(1), "cuda", 1e-5, 1e-4);
    compare_backends(op, {random_tensor({70001, 3}, 12, -4.0f, 4.0f)}, axis_attr(-1), "cuda", 1e-5, 1e-4);
    compare_backends(op, {make({2, 3}, {1000, 1001, 1002, -1000, -999, -998})}, axis_attr(-1), "cuda", 1e-5, 1e-5);
    compare_backends(op, {Tensor(DType::kFloat32, {0, 5})}, axis_attr(-1), "cuda");
    compare_backends(op, {Tensor(DType::kFloat32, {3, 0})}, axis_attr(0), "cuda");
  }
  check_gradients("Softmax", {random_tensor({3, 4}, 13, -2.0f, 2.0f)}, axis_attr(-1), on_cuda());
  check_gradients("LogSoftmax", {random_tensor({3, 4}, 14, -2.0f, 2.0f)}, axis_attr(0), on_cuda());
  check_gradients("Softmax", {random_tensor({2, 3, 2}, 15, -2.0f, 2.0f)}, axis_attr(1), on_cuda());
}

TEST_CASE("cuda SoftmaxCrossEntropyWithLogits: loss and backprop on short, long and many rows") {
  HUB_SKIP_UNLESS_CUDA();
  uint64_t seed = 20;
  for (const auto& [rows, classes] : kRowShapes) {
    Tensor logits = random_tensor({rows, classes}, seed++, -4.0f, 4.0f);
    INFO("logits " << logits.spec_string());
    compare_backends("SoftmaxCrossEntropyWithLogits", {logits, distributions(rows, classes, seed++)}, {}, "cuda", 1e-5,
                     1e-4);
    // Labels that are not distributions are computed all the same.
    compare_backends("SoftmaxCrossEntropyWithLogits", {logits, random_tensor({rows, classes}, seed++)}, {}, "cuda",
                     1e-5, 1e-4);
  }
  compare_backends("SoftmaxCrossEntropyWithLogits",
                   {make({2, 3}, {1001, 1002, 1003, -1000, 0, 1000}), make({2, 3}, {0, 0, 1, 0.5f, 0.5f, 0})}, {},
                   "cuda", 1e-4, 1e-5);
  // No classes: the loss is an empty sum; no rows: nothing to do.
  compare_backends("SoftmaxCrossEntropyWithLogits", {Tensor(DType::kFloat32, {3, 0}), Tensor(DType::kFloat32, {3, 0})},
                   {}, "cuda", 0, 0);
  compare_backends("SoftmaxCrossEntropyWithLogits", {Tensor(DType::kFloat32, {0, 4}), Tensor(DType::kFloat32, {0, 4})},
                   {}, "cuda", 0, 0);
  Tensor logits = random_tensor({3, 4}, 30, -2.0f, 2.0f);
  Tensor labels = distributions(3, 4, 31);
  check_gradients("SoftmaxCrossEntropyWithLogits", {logits, labels}, {}, on_cuda());
  check_gradients("SoftmaxCrossEntropyWithLogits", {logits, labels}, {}, on_cuda({.output = 1}));
}

TEST_CASE_TEMPLATE("cuda SparseSoftmaxCrossEntropyWithLogits: loss and backprop, labels of each dtype", T, int32_t,
                   int64_t) {
  HUB_SKIP_UNLESS_CUDA();
  uint64_t seed = 40;
  for (const auto& [rows, classes] : kRowShapes) {
    Tensor logits = random_tensor({rows, classes}, seed++, -4.0f, 4.0f);
    INFO("logits " << logits.spec_string());
    compare_backends("SparseSoftmaxCrossEntropyWithLogits", {logits, class_ids<T>(rows, classes, seed++)}, {}, "cuda",
                     1e-5, 1e-4);
  }
  compare_backends("SparseSoftmaxCrossEntropyWithLogits",
                   {make({2, 3}, {1001, 1002, 1003, -1000, 0, 1000}), Tensor::from_vector<T>({2}, {2, 0})}, {}, "cuda",
                   1e-4, 1e-5);
  compare_backends("SparseSoftmaxCrossEntropyWithLogits", {Tensor(DType::kFloat32, {0, 4}), Tensor(dtype_of<T>, {0})},
                   {}, "cuda", 0, 0);
  Tensor logits = random_tensor({3, 4}, 50, -2.0f, 2.0f);
  Tensor labels = Tensor::from_vector<T>({3}, {3, 0, 1});
  check_gradients("SparseSoftmaxCrossEntropyWithLogits", {logits, labels}, {}, on_cuda());
  check_gradients("SparseSoftmaxCrossEntropyWithLogits", {logits, labels}, {}, on_cuda({.output = 1}));
}

TEST_CASE("cuda SparseSoftmaxCrossEntropyWithLogits: a label outside [0, C) gives a NaN row, as TF's GPU kernel") {
  HUB_SKIP_UNLESS_CUDA();
  // The reference fails such a run; the device cannot report it without the
  // host waiting, so the row's loss and backprop are NaN and the others exact.
  Tensor logits = random_tensor({4, 5}, 60, -2.0f, 2.0f);
  std::vector<Tensor> got = run_op("SparseSoftmaxCrossEntropyWithLogits",
                                   {logits, Tensor::from_vector<int64_t>({4}, {4, 5, -1, 0})}, {}, "cuda");
  std::vector<Tensor> want = run_op("SparseSoftmaxCrossEntropyWithLogits",
                                    {logits, Tensor::from_vector<int64_t>({4}, {4, 0, 0, 0})}, {}, "reference");
  for (int64_t r = 0; r < 4; ++r) {
    INFO("row " << r);
    const bool bad = r == 1 || r == 2;
    const float loss = got[0].data<float>()[r];
    if (bad)
      CHECK(std::isnan(loss));
    else
      CHECK(loss == doctest::Approx(want[0].data<float>()[r]).epsilon(1e-5));
    for (int64_t c = 0; c < 5; ++c) {
      const float b = got[1].data<float>()[r * 5 + c];
      if (bad)
        CHECK(std::isnan(b));
      else
        CHECK(b == doctest::Approx(want[1].data<float>()[r * 5 + c]).epsilon(1e-5));
    }
  }
  CHECK(backend_used("SparseSoftmaxCrossEntropyWithLogits", {logits, Tensor::from_vector<int64_t>({4}, {4, 5, -1, 0})},
                     {}, "cuda") == "cuda");
}

TEST_CASE("cuda OneHot: both index dtypes, out-of-range indices, on and off values") {
  HUB_SKIP_UNLESS_CUDA();
  auto attrs = [](int64_t depth, float on = 1.0f, float off = 0.0f) {
    return Attrs().set("depth", depth).set("on_value", on).set("off_value", off);
  };
  Tensor i32 = Tensor::from_vector<int32_t>({2, 3}, {0, 2, -1, 3, 1, 7});
  Tensor i64 = Tensor::from_vector<int64_t>({2, 3}, {0, 2, -1, 3, 1, int64_t{1} << 40});
  for (const Tensor& idx : {i32, i64})
    for (int64_t depth : {0, 1, 3, 4}) {
      INFO(idx.spec_string() << " depth " << depth);
      compare_backends("OneHot", {idx}, attrs(depth), "cuda", 0, 0);
      compare_backends("OneHot", {idx}, attrs(depth, 5.0f, -1.5f), "cuda", 0, 0);
    }
  compare_backends("OneHot", {Tensor::scalar<int32_t>(2)}, attrs(3), "cuda", 0, 0);
  compare_backends("OneHot", {Tensor(DType::kInt64, {0})}, attrs(3), "cuda", 0, 0);
  compare_backends("OneHot", {class_ids<int32_t>(70001, 5, 70)}, attrs(5, 0.9f, 0.025f), "cuda", 0, 0);
}
