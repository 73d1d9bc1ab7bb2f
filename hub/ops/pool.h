// 2-D pooling over NHWC float32 tensors: TensorFlow's semantics, extended so
// that ONNX's MaxPool / AveragePool (and PyTorch's max_pool2d / avg_pool2d)
// are expressible exactly. MaxPool and AvgPool also take uint8 / int8
// tensors (an int8 model's quantized activations: one scale and zero point
// for input and output), giving the same dtype; an 8-bit average is rounded
// to the nearest integer, ties to even.
//
// Attributes:
//   ksize             [kh, kw] (or TF's [1, kh, kw, 1]), each >= 1      (all four ops)
//   strides           [sh, sw] (or TF's [1, sh, sw, 1]), each >= 1      (all four)
//   padding           "SAME" | "VALID" | "EXPLICIT"                     (all four)
//   explicit_paddings [top, bottom, left, right] (or TF's
//                     [0,0,top,bottom,left,right,0,0]), entries >= 0;
//                     non-empty exactly when padding is "EXPLICIT"     (all four; default [])
//   ceil_mode         bool, only with "EXPLICIT" (default false)        (all four)
//   dilations         [dh, dw] (or [1, dh, dw, 1]), each >= 1 (default [1,1])
//                                                   (MaxPool, MaxPoolGrad)
//   count_include_pad bool (default false)          (AvgPool, AvgPoolGrad)
// Output size and padding per spatial dim: window_dim() in hub/ops/padding.h
// (window span (k-1)*d + 1; ceil_mode rounds the output size up and drops a
// last window that would start at or after in + pad_before, as PyTorch and
// ONNX do). Output position o covers input positions o*s - pad_before + t*d,
// t in [0, k): the window's taps. Taps outside [0, in) are padding: -inf for
// a max (never a zero pad), left out of an average.
//
//   MaxPool(x [N,H,W,C]) -> y [N,OH,OW,C]
//     y[n,i,j,c] = max over the window's in-bounds taps of x[n,h,w,c]
//   AvgPool(x [N,H,W,C]) -> y [N,OH,OW,C]
//     y[n,i,j,c] = sum over the window's in-bounds taps of x / divisor(i,j), where
//     count_include_pad = false (TF, ONNX's default): divisor = number of
//       in-bounds taps;
//     count_include_pad = true (ONNX / PyTorch): divisor = the window's taps
//       inside [-pad_before, in + pad_after) per dim, multiplied: padding
//       (explicit, or SAME's implicit pads) counts, the part of a ceil_mode
//       window reaching past pad_after does not (PyTorch's avg_pool2d rule:
//       divide by (min(start + k, in + pad_after) - start) per dim).
//   MaxPoolGrad(orig_input [N,H,W,C], orig_output [N,OH,OW,C], grad [N,OH,OW,C]) -> dx [N,H,W,C]
//     dx[n,h,w,c] = sum of grad[n,i,j,c] over the windows (i,j) whose first maximum
//     (scanning in-bounds taps by rows, then columns) is at (h,w) — TF's CPU
//     kernel. orig_output is accepted for TF compatibility; the argmax is
//     recomputed from orig_input.
//   AvgPoolGrad(orig_input_like [N,H,W,C], grad [N,OH,OW,C]) -> dx [N,H,W,C]
//     dx[n,h,w,c] = sum over windows (i,j) with (h,w) an in-bounds tap of
//     grad[n,i,j,c] / divisor(i,j); only orig_input_like's shape is used.
// Gradients: d MaxPool = MaxPoolGrad(x, y, g); d AvgPool = AvgPoolGrad(x, g);
// AvgPoolGrad is linear in grad, so d AvgPoolGrad / d grad = AvgPool(gg).
// MaxPoolGrad has no gradient (TF's MaxPoolGradGrad is not implemented).
//
// ONNX mapping: kernel_shape -> ksize; pads [top, left, bottom, right] ->
// "EXPLICIT" [top, bottom, left, right]; auto_pad SAME_UPPER -> "SAME", VALID
// -> "VALID", SAME_LOWER -> "EXPLICIT" with the odd pad before; ceil_mode,
// dilations (MaxPool) and count_include_pad (AveragePool) as they are.
//
// Rejected (InvalidArgument naming the node, the attribute and the value): bad
// ksize/strides/dilations, a bad padding/explicit_paddings pair, ceil_mode
// without "EXPLICIT", a window larger than the padded input, and (with known
// sizes) a window with no in-bounds tap at all — its max or average would
// be undefined (it needs a pad at least as large as the window span).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hub/ops/scope.h"

namespace hub::ops {

// The taps of one output position along one dim: input positions first +
// t*step for t in [0, count) are the window's in-bounds taps; `extent` counts
// its taps inside [-pad_before, in + pad_after) (count_include_pad's factor).
struct PoolTaps {
  int64_t first = 0, count = 0, extent = 0;
};
// The taps of output position o for input size `in`, window k, stride s,
// dilation d and the given pads (a WindowDim's, hub/ops/padding.h).
PoolTaps pool_taps(int64_t o, int64_t in, int64_t k, int64_t s, int64_t d, int64_t pad_before, int64_t pad_after);

// Pooling window geometry of one node, resolved against a concrete input
// shape [N,H,W,C]. Kernels use it; pool_geometry() validates and throws
// InvalidArgument naming `node` on bad attributes or a too-small input.
struct PoolGeometry {
  int64_t n = 0, h = 0, w = 0, c = 0;  // input
  int64_t kh = 1, kw = 1, sh = 1, sw = 1;
  int64_t dh = 1, dw = 1;                 // dilations (MaxPool; 1 otherwise)
  int64_t oh = 0, ow = 0;                 // output
  int64_t pad_top = 0, pad_left = 0;      // before
  int64_t pad_bottom = 0, pad_right = 0;  // after (not counting a ceil_mode overhang)
  bool count_include_pad = false;         // AvgPool
  PoolTaps row_taps(int64_t i) const;     // output row i
  PoolTaps col_taps(int64_t j) const;     // output column j
  // Divisor of an average over window (i, j) (see AvgPool above).
  int64_t divisor(const PoolTaps& rows, const PoolTaps& cols) const {
    return count_include_pad ? rows.extent * cols.extent : rows.count * cols.count;
  }
};
PoolGeometry pool_geometry(const Attrs& attrs, const Shape& input, const std::string& node = "");

// Builders. `padding` "SAME" | "VALID"; for the other attributes set them on
// the node (s.op("MaxPool", {x}, attrs)).
Output max_pool(const Scope& s, Output x, std::vector<int64_t> ksize, std::vector<int64_t> strides,
                const std::string& padding, const std::string& name = "MaxPool");
Output avg_pool(const Scope& s, Output x, std::vector<int64_t> ksize, std::vector<int64_t> strides,
                const std::string& padding, const std::string& name = "AvgPool");

}  // namespace hub::ops
