// Resampling of NHWC images along H and W by per-axis plans: the sampling of
// the Resize op (hub/ops/resize.h, ONNX Resize's nearest and linear modes) and
// of hub::image::resize_bilinear, which is its linear mode with asymmetric
// coordinates (TF's resize_bilinear). It lives at the lowest layer both need.
//
// Per axis, input length L, output length O, scale s > 0 and O' = s * L, the
// source coordinate of output index x is (ONNX's formulas, in double
// precision, in this order, as ONNX's reference implementation does):
//   kHalfPixel         (x + 0.5) / s - 0.5
//   kPytorchHalfPixel  O' == 1 ? 0 : (x + 0.5) / s - 0.5
//   kAlignCorners      O' == 1 ? 0 : x * (L - 1) / (O' - 1)
//   kAsymmetric        x / s
//   kTfHalfPixelForNn  (x + 0.5) / s
// kNearest: with f = floor(src) and r = src - f the index is
//   kRoundPreferFloor r <= 0.5 ? f : f + 1   kRoundPreferCeil r < 0.5 ? f : f + 1
//   kFloor f                                 kCeil ceil(src)
// clamped to [0, L-1]. kLinear: src clamped to [0, L-1], lo = floor(src),
// hi = min(lo + 1, L - 1), weight of hi = src - lo.
#pragma once

#include <cstdint>
#include <vector>

namespace hub {

enum class ResampleMode { kNearest, kLinear };
enum class CoordinateMode { kHalfPixel, kPytorchHalfPixel, kAlignCorners, kAsymmetric, kTfHalfPixelForNn };
enum class NearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };

// The sampling of one axis: output index o reads input indices lo[o] and
// hi[o] with weights 1 - frac[o] and frac[o] (nearest: lo = hi, frac = 0).
struct ResampleAxis {
  bool nearest = false;
  std::vector<int64_t> lo, hi;
  std::vector<float> frac;
};

// Preconditions: in >= 1, out >= 1, scale > 0 (finite).
ResampleAxis resample_axis(int64_t in, int64_t out, double scale, ResampleMode mode, CoordinateMode coordinates,
                           NearestMode nearest);

// Both axes of an image resampling (same mode on both).
struct ResamplePlan {
  ResampleAxis rows, cols;
};

// y [n, rows.lo.size(), cols.lo.size(), c] = x [n, h, w, c] resampled by the
// plan: nearest copies the chosen pixel; linear lerps along W, then H
// (top = tl + (tr - tl) * fx, bottom likewise, y = top + (bottom - top) * fy).
// Parallel over output rows (hub::parallel_for). T is float or uint8_t.
template <class T>
void resample_nhwc(const T* x, int64_t n, int64_t h, int64_t w, int64_t c, const ResamplePlan& plan, float* y);

// dx [n, h, w, c] = the adjoint of resample_nhwc applied to dy (every element
// of dx is written: each dy element is added to the pixels it was read from,
// times their weights). Parallel over images.
void resample_nhwc_grad(const float* dy, int64_t n, int64_t h, int64_t w, int64_t c, const ResamplePlan& plan,
                        float* dx);

}  // namespace hub
