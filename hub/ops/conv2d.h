// 2-D convolution (plain and grouped) and depthwise convolution, TensorFlow
// semantics extended so that ONNX's Conv is expressible exactly: NHWC
// activations, HWIO filters, float32.
//
// Attributes (all six ops):
//   strides           ints [sh, sw] (default [1,1]; TF's [1,sh,sw,1] accepted)
//   padding           string "SAME" | "VALID" | "EXPLICIT" (required)
//   explicit_paddings ints [top, bottom, left, right] (default []; TF's
//                     [0,0,top,bottom,left,right,0,0] accepted); non-empty
//                     exactly when padding is "EXPLICIT"; entries >= 0
//   dilations         ints [dh, dw] (default [1,1]; [1,dh,dw,1] accepted)
// Geometry (OH, OW, pads) from window_dim() in hub/ops/padding.h. With
// ih = oh*sh - pad_top + kh*dh, iw = ow*sw - pad_left + kw*dw (zero outside):
//
// Conv2D(x [N,H,W,C], w [KH,KW,C/G,O]) -> y [N,OH,OW,O]
//   G = C / w's third dim (TF's rule; 1 for a plain convolution): C and O must
//   be multiples of it. Channel blocks: input channels [g*C/G, (g+1)*C/G) feed
//   output channels [g*O/G, (g+1)*O/G), with o = g*O/G + j:
//   y[n,oh,ow,o] = sum_{kh,kw,i < C/G} x[n,ih,iw,g*C/G + i] * w[kh,kw,i,o]
//   dx = Conv2DBackpropInput(x, w, g)      [N,H,W,C]
//   dw = Conv2DBackpropFilter(x, w, g)     [KH,KW,C/G,O]
// Conv2DBackpropInput(x_like [N,H,W,C], w, dy [N,OH,OW,O]) -> dx, x_like's run-time shape
//   dx[n,ih,iw,g*C/G+i] = sum over (oh,ow,kh,kw) hitting (ih,iw) and j of
//                         dy[n,oh,ow,g*O/G+j] * w[kh,kw,i,g*O/G+j]
//   (x_like's values are not read.) Gradient: d/dw = Conv2DBackpropFilter(g, w, dy),
//   d/ddy = Conv2D(g, w).
// Conv2DBackpropFilter(x, w_like [KH,KW,C/G,O], dy) -> dw, w_like's run-time shape
//   dw[kh,kw,i,g*O/G+j] = sum_{n,oh,ow} x[n,ih,iw,g*C/G+i] * dy[n,oh,ow,g*O/G+j]
//   Gradient: d/dx = Conv2DBackpropInput(x, g, dy), d/ddy = Conv2D(x, g).
//
// DepthwiseConv2dNative(x [N,H,W,C], w [KH,KW,C,M]) -> y [N,OH,OW,C*M]
//   y[n,oh,ow,c*M+m] = sum_{kh,kw} x[n,ih,iw,c] * w[kh,kw,c,m]
//   with DepthwiseConv2dNativeBackpropInput / ...BackpropFilter as above (same
//   argument order and gradients). (It is the grouped convolution G = C whose
//   [KH,KW,1,C*M] filter is this one reshaped.)
//
// ONNX Conv maps as: W [O, C/G, KH, KW] transposed to [KH,KW,C/G,O]; group is
// then implied; pads [top, left, bottom, right] -> explicit_paddings
// [top, bottom, left, right]; auto_pad SAME_UPPER -> "SAME", VALID -> "VALID",
// SAME_LOWER -> "EXPLICIT" with the odd pad before (hub/ops/padding.h).
//
// Shape functions reject (InvalidArgument naming the node and both shapes):
// rank != 4, C not a multiple of w's third dim (depthwise: C != w's third
// dim), O not a multiple of G, non-positive strides/dilations, a bad
// padding/explicit_paddings pair, a window larger than the (dilated) padded
// input, and a dy whose shape differs from the forward output. Unknown dims
// (e.g. batch) pass through.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hub/ops/padding.h"
#include "hub/ops/scope.h"

namespace hub::ops {

struct ConvOptions {
  std::vector<int64_t> strides{1, 1};
  std::string padding = "SAME";
  std::vector<int64_t> dilations{1, 1};
  std::vector<int64_t> explicit_paddings{};  // [top, bottom, left, right] with padding "EXPLICIT"
  Attrs to_attrs() const;
};

Output conv2d(const Scope& s, Output x, Output w, const ConvOptions& o = {}, const std::string& name = "Conv2D");
Output conv2d_backprop_input(const Scope& s, Output x_like, Output w, Output dy, const ConvOptions& o = {},
                             const std::string& name = "Conv2DBackpropInput");
Output conv2d_backprop_filter(const Scope& s, Output x, Output w_like, Output dy, const ConvOptions& o = {},
                              const std::string& name = "Conv2DBackpropFilter");
Output depthwise_conv2d(const Scope& s, Output x, Output w, const ConvOptions& o = {},
                        const std::string& name = "DepthwiseConv2dNative");
Output depthwise_conv2d_backprop_input(const Scope& s, Output x_like, Output w, Output dy, const ConvOptions& o = {},
                                       const std::string& name = "DepthwiseConv2dNativeBackpropInput");
Output depthwise_conv2d_backprop_filter(const Scope& s, Output x, Output w_like, Output dy, const ConvOptions& o = {},
                                        const std::string& name = "DepthwiseConv2dNativeBackpropFilter");

// Resolved geometry of one convolution (all dims known), shared by kernels.
struct ConvGeometry {
  int64_t n, h, w, c;      // input
  int64_t kh, kw;          // window
  int64_t m;               // depthwise channel multiplier (1 for Conv2D)
  int64_t oc;              // output channels: O (Conv2D) or C*M (depthwise)
  int64_t groups;          // G: Conv2D C / w[2]; depthwise C
  int64_t cg, og;          // channels per group: input C/G, output O/G
  int64_t oh, ow;          // output spatial size
  int64_t sh, sw, dh, dw;  // strides, dilations
  int64_t pad_top, pad_bottom, pad_left, pad_right;
};

// Computes the geometry of a convolution of `x` with `w` under `attrs`
// (depthwise: w is [KH,KW,C,M]). Dims may be unknown (-1): those outputs are
// -1 (and so are groups, cg and og when C or w's dims are). Returns an empty
// string on success, else what is wrong (naming shapes).
std::string conv_geometry(const Shape& x, const Shape& w, const Attrs& attrs, bool depthwise, ConvGeometry* out);

}  // namespace hub::ops
