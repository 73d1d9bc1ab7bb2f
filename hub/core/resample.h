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
// hi = min(lo + 1, L - 1), weight of hi = src - lo. kCubic (Keys' cubic
// convolution with coefficient A, as ONNX's Resize): with f = floor(src) and
// r = src - f (not clamped), the taps f-1, f, f+1, f+2 have the weights
// k(r+1), k(r), k(1-r), k(2-r), where k(t) = ((A+2)t - (A+3))t^2 + 1 for
// t <= 1 and ((At - 5A)t + 8A)t - 4A for 1 < t < 2; a tap outside [0, L-1]
// reads the edge pixel, or, with exclude_outside, gets weight 0 and the
// others are divided by their sum (TensorFlow's half-pixel bicubic, A =
// -0.5). Weights are computed in double and stored as float.
#pragma once

#include <cstdint>
#include <vector>

namespace hub {

enum class ResampleMode { kNearest, kLinear, kCubic };
enum class CoordinateMode { kHalfPixel, kPytorchHalfPixel, kAlignCorners, kAsymmetric, kTfHalfPixelForNn };
enum class NearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };

// The sampling of one axis: output index o reads input indices lo[o] and
// hi[o] with weights 1 - frac[o] and frac[o] (nearest: lo = hi, frac = 0);
// cubic: input indices taps[4o .. 4o+3] with weights weights[4o .. 4o+3]
// (lo, hi and frac empty).
struct ResampleAxis {
  bool nearest = false;
  std::vector<int64_t> lo, hi;
  std::vector<float> frac;
  std::vector<int64_t> taps;
  std::vector<float> weights;
  bool cubic() const { return !taps.empty(); }
  int64_t size() const { return static_cast<int64_t>(cubic() ? taps.size() / 4 : lo.size()); }
};

struct CubicOptions {
  double a = -0.75;  // ONNX's default; TensorFlow's half-pixel bicubic and PyTorch use -0.5
  bool exclude_outside = false;
};

// Preconditions: in >= 1, out >= 1, scale > 0 (finite).
ResampleAxis resample_axis(int64_t in, int64_t out, double scale, ResampleMode mode, CoordinateMode coordinates,
                           NearestMode nearest, const CubicOptions& cubic = {});

// Both axes of an image resampling (same mode on both).
struct ResamplePlan {
  ResampleAxis rows, cols;
};

// y [n, rows.size(), cols.size(), c] = x [n, h, w, c] resampled by the
// plan: nearest copies the chosen pixel; linear lerps along W, then H
// (top = tl + (tr - tl) * fx, bottom likewise, y = top + (bottom - top) * fy);
// cubic sums the four rows by their weights, then the four columns of that.
// Parallel over output rows (hub::parallel_for). T is float or uint8_t.
template <class T>
void resample_nhwc(const T* x, int64_t n, int64_t h, int64_t w, int64_t c, const ResamplePlan& plan, float* y);

// dx [n, h, w, c] = the adjoint of resample_nhwc applied to dy (every element
// of dx is written: each dy element is added to the pixels it was read from,
// times their weights). Parallel over images.
void resample_nhwc_grad(const float* dy, int64_t n, int64_t h, int64_t w, int64_t c, const ResamplePlan& plan,
                        float* dx);

}  // namespace hub
