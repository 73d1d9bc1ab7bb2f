// Attribute builders and inputs shared by an op family's tests on every
// backend (the reference/oneDNN tests in tests/hub/ops and the CUDA ones in
// tests/hub/ops/cuda).
#pragma once

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "hub/ops/resize.h"
#include "testutil.h"

namespace hub::testing {

using Ints = std::vector<int64_t>;

// StridedSlice.
inline Attrs ss(Ints begin, Ints end, Ints strides, int64_t begin_mask = 0, int64_t end_mask = 0, int64_t ellipsis = 0,
                int64_t new_axis = 0, int64_t shrink = 0) {
  return Attrs()
      .set("begin", begin)
      .set("end", end)
      .set("strides", strides)
      .set("begin_mask", begin_mask)
      .set("end_mask", end_mask)
      .set("ellipsis_mask", ellipsis)
      .set("new_axis_mask", new_axis)
      .set("shrink_axis_mask", shrink);
}

inline Attrs pad_attrs(Ints paddings, const char* mode, float value = 0) {
  return Attrs().set("paddings", paddings).set("mode", mode).set("constant_value", value);
}

inline Attrs split_attrs(int64_t axis, int64_t num_split, Ints sizes = {}) {
  return Attrs().set("axis", axis).set("num_split", num_split).set("sizes", sizes);
}

// MaxPool / AvgPool with SAME or VALID padding.
inline Attrs pool(Ints k, Ints s, const char* padding) {
  return Attrs().set("ksize", std::move(k)).set("strides", std::move(s)).set("padding", padding);
}

// EXPLICIT padding [top, bottom, left, right] plus the ONNX attributes.
struct Explicit {
  Ints pads;
  bool ceil_mode = false;
  Ints dilations{1, 1};            // MaxPool only
  bool count_include_pad = false;  // AvgPool only
};

inline Attrs explicit_pool(Ints k, Ints s, const Explicit& e, bool max) {
  Attrs a = pool(std::move(k), std::move(s), "EXPLICIT").set("explicit_paddings", e.pads).set("ceil_mode", e.ceil_mode);
  if (max)
    a.set("dilations", e.dilations);
  else
    a.set("count_include_pad", e.count_include_pad);
  return a;
}

// Distinct values 0.05 apart in shuffled order: no ties, and a finite-difference
// step of 1e-3 never changes which element is a window's maximum.
inline Tensor distinct(const Shape& shape, uint32_t seed) {
  Tensor t(DType::kFloat32, shape);
  std::vector<int> order(t.num_elements());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = 0.05f * order[i] - 1.0f;
  return t;
}

// x cast to `dtype` (the Cast op's rounding toward zero).
inline Tensor cast(const Tensor& x, DType dtype) { return run_op("Cast", {x}, Attrs().set("dtype", dtype))[0]; }

// Uniform in [lo, hi) as `dtype` (integers truncated toward zero).
inline Tensor random_as(DType dtype, const Shape& shape, uint64_t seed, float lo, float hi) {
  Tensor x = random_tensor(shape, seed, lo, hi);
  return dtype == DType::kFloat32 ? x : cast(cast(x, DType::kInt32), dtype);
}

inline Attrs resize_attrs(Ints size, const char* mode, const char* coordinates,
                          const char* nearest = "round_prefer_floor", std::vector<double> scales = {},
                          double cubic_coeff_a = -0.75, bool exclude_outside = false) {
  return ops::ResizeOptions{std::move(size),   mode,          coordinates,    nearest,
                            std::move(scales), cubic_coeff_a, exclude_outside}
      .to_attrs();
}

// The arithmetic dtypes the elementwise and math kernels take.
inline const DType kArith[] = {DType::kFloat32, DType::kInt32, DType::kInt64};

// random_tensor(shape, seed, lo, hi) truncated to integers, as `dtype`: with
// a small range, many ties between two such tensors (lo = 0 for uint8 and bool).
inline Tensor small_ints(DType dtype, const Shape& shape, uint64_t seed, float lo, float hi) {
  return cast(cast(random_tensor(shape, seed, lo, hi), DType::kInt32), dtype);
}

}  // namespace hub::testing
