// 2-D pooling over NHWC float32 tensors, with TensorFlow's semantics.
//
// Attributes (all four ops):
//   ksize   [kh, kw]  (or TF's [1, kh, kw, 1])  window size, each >= 1
//   strides [sh, sw]  (or TF's [1, sh, sw, 1])  each >= 1
//   padding "SAME" | "VALID"
// Output size per spatial dim (in, k, s):
//   VALID: out = ceil((in - k + 1) / s)            (in >= k required)
//   SAME:  out = ceil(in / s), pad_total = max((out - 1)*s + k - in, 0),
//          pad_before = pad_total / 2, the rest after (TF: extra pad at the end).
// Padded positions never win a max and never count in an average.
//
//   MaxPool(x [N,H,W,C]) -> y [N,OH,OW,C]
//     y[n,i,j,c] = max over the window's in-bounds x[n,h,w,c]
//   AvgPool(x [N,H,W,C]) -> y [N,OH,OW,C]
//     y[n,i,j,c] = sum over the window's in-bounds x / (number of in-bounds elements)
//   MaxPoolGrad(orig_input [N,H,W,C], orig_output [N,OH,OW,C], grad [N,OH,OW,C]) -> dx [N,H,W,C]
//     dx[n,h,w,c] = sum of grad[n,i,j,c] over the windows (i,j) whose first maximum
//     (scanning rows, then columns) is at (h,w) — TF's CPU kernel. orig_output is
//     accepted for TF compatibility; the argmax is recomputed from orig_input.
//   AvgPoolGrad(orig_input_like [N,H,W,C], grad [N,OH,OW,C]) -> dx [N,H,W,C]
//     dx[n,h,w,c] = sum over windows (i,j) containing (h,w) of grad[n,i,j,c] / count(i,j);
//     only orig_input_like's shape is used.
// Gradients: d MaxPool = MaxPoolGrad(x, y, g); d AvgPool = AvgPoolGrad(x, g);
// AvgPoolGrad is linear in grad, so d AvgPoolGrad / d grad = AvgPool(gg).
// MaxPoolGrad has no gradient (TF's MaxPoolGradGrad is not implemented).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hub/ops/scope.h"

namespace hub::ops {

// Pooling window geometry of one node, resolved against a concrete input
// shape [N,H,W,C]. Kernels use it; pool_geometry() validates and throws
// InvalidArgument naming `node` on bad attributes or a too-small input.
struct PoolGeometry {
  int64_t n = 0, h = 0, w = 0, c = 0;  // input
  int64_t kh = 1, kw = 1, sh = 1, sw = 1;
  int64_t oh = 0, ow = 0;              // output
  int64_t pad_top = 0, pad_left = 0;   // before; the rest of pad_total is after
  int64_t pad_bottom = 0, pad_right = 0;
};
PoolGeometry pool_geometry(const Attrs& attrs, const Shape& input, const std::string& node = "");

Output max_pool(const Scope& s, Output x, std::vector<int64_t> ksize, std::vector<int64_t> strides,
                const std::string& padding, const std::string& name = "MaxPool");
Output avg_pool(const Scope& s, Output x, std::vector<int64_t> ksize, std::vector<int64_t> strides,
                const std::string& padding, const std::string& name = "AvgPool");

}  // namespace hub::ops
