// Transposed 2-D convolution (ONNX ConvTranspose, TF conv2d_transpose),
// NHWC activations, float32.
//
// Conv2DTranspose(x [N,H,W,C], w [KH,KW,O/G,C]) -> y [N,OH,OW,O]
// Attributes:
//   strides           ints [sh, sw]           (default [1,1]; [1,sh,sw,1] accepted)
//   dilations         ints [dh, dw]           (default [1,1]; [1,dh,dw,1] accepted)
//   explicit_paddings ints [top, bottom, left, right] (default [0,0,0,0]; TF's
//                     [0,0,top,bottom,left,right,0,0] accepted), each >= 0:
//                     rows/columns cropped from the full result
//   output_padding    ints [oph, opw]         (default [0,0]), 0 <= op < stride:
//                     extra rows/columns at the bottom/right
//   groups            int G >= 1              (default 1); C and O multiples of G
//   OH = (H-1)*sh - top - bottom + dh*(KH-1) + 1 + oph   (>= 1), OW likewise.
// With channel blocks c = g*C/G + j (input) and o = g*O/G + i (output):
//   y[n,oh,ow,o] = sum over (h,w,kh,kw) with oh = h*sh - top + kh*dh,
//                  ow = w*sw - left + kw*dw, and j < C/G, of
//                  x[n,h,w,g*C/G + j] * w[kh,kw,i,g*C/G + j]
// which is Conv2DBackpropInput(y_like [N,OH,OW,O], w, x) of the convolution
// with the same strides, dilations and EXPLICIT paddings [top,
// max(0, bottom - oph), left, max(0, right - opw)] (its output size is then
// exactly H x W because op < stride): the filter is that convolution's
// [KH,KW,Cin/G,Cout] filter with Cin = O, Cout = C. Kernels run that
// backprop-input (hub/ops/cpu/conv2d.h, hub/ops/onednn/conv2d.h).
// Gradients, with that convolution's attributes (conv_transpose_conv_attrs):
//   dx = Conv2D(g, w)                     [N,H,W,C]
//   dw = Conv2DBackpropFilter(g, w, x)    [KH,KW,O/G,C]
//
// Mapping at import (a transpose of the weights, no flip):
//   ONNX ConvTranspose W [C, O/G, KH, KW]  -> w = W transposed (2,3,1,0);
//     pads [top, left, bottom, right] -> explicit_paddings [top, bottom, left,
//     right]; output_padding and group as they are; an output_shape attribute
//     or auto_pad becomes pads + output_padding computed by the importer with
//     ONNX's total_padding = s*(H-1) + oph + span - OH (split as ONNX says);
//     a negative total_padding (OH beyond the full result, as in ONNX's
//     convtranspose_output_shape case) is output_padding -total_padding more
//     and zero pads. (ONNX allows output_padding < max(stride, dilation); hub
//     needs < stride.)
//   TF conv2d_transpose / Conv2DBackpropInput(input_sizes, filter
//     [KH,KW,O,C], value): w = filter as it is, G = 1; SAME/VALID and the
//     output size give the pads of the forward convolution from input_sizes
//     (hub/ops/padding.h) and output_padding = OH - ((H-1)*sh - top - bottom
//     + span).
//
// The shape function rejects (InvalidArgument naming the node, the shapes and
// the attribute): rank != 4, x's C != w's last dim, C or O not a multiple of
// groups, non-positive strides/dilations, bad explicit_paddings or
// output_padding (negative, or not below the stride), and OH or OW < 1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hub/ops/conv2d.h"
#include "hub/ops/scope.h"

namespace hub::ops {

struct ConvTransposeOptions {
  std::vector<int64_t> strides{1, 1};
  std::vector<int64_t> explicit_paddings{0, 0, 0, 0};  // [top, bottom, left, right]
  std::vector<int64_t> output_padding{0, 0};
  std::vector<int64_t> dilations{1, 1};
  int64_t groups = 1;
  Attrs to_attrs() const;
};

Output conv2d_transpose(const Scope& s, Output x, Output w, const ConvTransposeOptions& o = {},
                        const std::string& name = "Conv2DTranspose");

// The Conv2D attributes (padding "EXPLICIT") of the convolution whose
// backprop-input Conv2DTranspose with `attrs` is. Precondition: attrs passed
// the op's shape function.
Attrs conv_transpose_conv_attrs(const Attrs& attrs);

// The geometry of that convolution for x and w (its input is [N,OH,OW,O], its
// output [N,H,W,C]). Unknown dims give unknown sizes. Returns "" on success,
// else what is wrong (naming the shapes and the attribute).
std::string conv_transpose_geometry(const Shape& x, const Shape& w, const Attrs& attrs, ConvGeometry* out);

}  // namespace hub::ops
