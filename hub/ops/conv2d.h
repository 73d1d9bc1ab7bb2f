// 2-D convolution and depthwise convolution, TensorFlow semantics: NHWC
// activations, HWIO filters, float32.
//
// Attributes (all six ops):
//   strides   ints [sh, sw] (default [1,1]; TF's [1,sh,sw,1] is accepted too)
//   padding   string "SAME" | "VALID" (required); geometry in hub/ops/padding.h
//   dilations ints [dh, dw] (default [1,1]; [1,dh,dw,1] accepted)
// With OH, OW from window_dim(H, KH, sh, dh, padding) etc., and
// ih = oh*sh - pad_top + kh*dh, iw = ow*sw - pad_left + kw*dw (zero outside):
//
// Conv2D(x [N,H,W,C], w [KH,KW,C,O]) -> y [N,OH,OW,O]
//   y[n,oh,ow,o] = sum_{kh,kw,c} x[n,ih,iw,c] * w[kh,kw,c,o]
//   dx = Conv2DBackpropInput(x, w, g)      [N,H,W,C]
//   dw = Conv2DBackpropFilter(x, w, g)     [KH,KW,C,O]
// Conv2DBackpropInput(x_like [N,H,W,C], w, dy [N,OH,OW,O]) -> dx, x_like's run-time shape
//   dx[n,ih,iw,c] = sum over (oh,ow,kh,kw) hitting (ih,iw) of dy[n,oh,ow,o] * w[kh,kw,c,o]
//   (x_like's values are not read.) Gradient: d/dw = Conv2DBackpropFilter(g, w, dy),
//   d/ddy = Conv2D(g, w).
// Conv2DBackpropFilter(x, w_like [KH,KW,C,O], dy) -> dw, w_like's run-time shape
//   dw[kh,kw,c,o] = sum_{n,oh,ow} x[n,ih,iw,c] * dy[n,oh,ow,o]
//   Gradient: d/dx = Conv2DBackpropInput(x, g, dy), d/ddy = Conv2D(x, g).
//
// DepthwiseConv2dNative(x [N,H,W,C], w [KH,KW,C,M]) -> y [N,OH,OW,C*M]
//   y[n,oh,ow,c*M+m] = sum_{kh,kw} x[n,ih,iw,c] * w[kh,kw,c,m]
//   with DepthwiseConv2dNativeBackpropInput / ...BackpropFilter as above (same
//   argument order and gradients).
//
// Shape functions reject (InvalidArgument naming the node and both shapes):
// rank != 4, x's C != w's third dim, non-positive strides/dilations, unknown
// padding, a VALID window larger than the (dilated) input, and a dy whose shape
// differs from the forward output. Unknown dims (e.g. batch) pass through.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hub/ops/scope.h"
#include "hub/ops/padding.h"

namespace hub::ops {

struct ConvOptions {
  std::vector<int64_t> strides{1, 1};
  std::string padding = "SAME";
  std::vector<int64_t> dilations{1, 1};
  Attrs to_attrs() const;
};

Output conv2d(const Scope& s, Output x, Output w, const ConvOptions& o = {},
              const std::string& name = "Conv2D");
Output conv2d_backprop_input(const Scope& s, Output x_like, Output w, Output dy,
                             const ConvOptions& o = {}, const std::string& name = "Conv2DBackpropInput");
Output conv2d_backprop_filter(const Scope& s, Output x, Output w_like, Output dy,
                              const ConvOptions& o = {},
                              const std::string& name = "Conv2DBackpropFilter");
Output depthwise_conv2d(const Scope& s, Output x, Output w, const ConvOptions& o = {},
                        const std::string& name = "DepthwiseConv2dNative");
Output depthwise_conv2d_backprop_input(const Scope& s, Output x_like, Output w, Output dy,
                                       const ConvOptions& o = {},
                                       const std::string& name = "DepthwiseConv2dNativeBackpropInput");
Output depthwise_conv2d_backprop_filter(const Scope& s, Output x, Output w_like, Output dy,
                                        const ConvOptions& o = {},
                                        const std::string& name = "DepthwiseConv2dNativeBackpropFilter");

// Resolved geometry of one convolution (all dims known), shared by kernels.
struct ConvGeometry {
  int64_t n, h, w, c;        // input
  int64_t kh, kw;            // window
  int64_t m;                 // depthwise channel multiplier (1 for Conv2D)
  int64_t oc;                // output channels: O (Conv2D) or C*M (depthwise)
  int64_t oh, ow;            // output spatial size
  int64_t sh, sw, dh, dw;    // strides, dilations
  int64_t pad_top, pad_bottom, pad_left, pad_right;
};

// Computes the geometry of a convolution of `x` with `w` under `attrs`
// (depthwise: w is [KH,KW,C,M]). Dims may be unknown (-1): those outputs are
// -1. Returns an empty string on success, else what is wrong (naming shapes).
std::string conv_geometry(const Shape& x, const Shape& w, const Attrs& attrs, bool depthwise,
                          ConvGeometry* out);

}  // namespace hub::ops
