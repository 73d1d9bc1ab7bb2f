// Fused inference ops: what the inference optimiser (hub/graph/optimize)
// rewrites convolution and dense layers into. They compute exactly what the
// ops they replace computed (up to float rounding); they exist so that a fast
// backend can do the whole layer in one pass (oneDNN: one primitive with
// post-ops) instead of writing and re-reading the activation once per op.
// A builder never creates them; an optimised graph does. They are not
// differentiable: training graphs are never optimised, and an optimised
// graph is only ever run forward (hence `.no_gradient`).
//
// _FusedConv2D(x, filter, bias [O] [, side]) -> y
//   attrs: depthwise (bool, default false), strides, padding, dilations,
//          explicit_paddings as Conv2D / DepthwiseConv2dNative
//          (hub/ops/conv2d.h), post_ops (strings, default []), post_op_args
//          (floats, two per post-op, default all zero), src_block, dst_block
//          (ints, default 0).
//   z = Conv2D(x, filter)  (DepthwiseConv2dNative when depthwise), [N,OH,OW,O]
//   z = z + bias                           (bias broadcast along O)
//   then for each post-op p with arguments (a, b), in order:
//     "Add"        z = z + side           (side [N,OH,OW,O]; exactly when input 3 is given)
//     "Relu"       z = max(z, 0)
//     "LeakyRelu"  z = z if z > 0 else a * z
//     "Relu6"      z = min(max(z, 0), 6)
//     "Clip"       z = min(max(z, a), b)  (ClipByValue with min a, max b)
//     "Elu"        z = z if z > 0 else a * (e^z - 1)
//     "Sigmoid"    z = 1 / (1 + e^-z)
//     "Tanh"       z = tanh(z)
//     "HardSwish"  z = z * min(max(z + 3, 0), 6) / 6
//   y = z.
//   Layouts: block 0 is NHWC. A block b > 0 (8 or 16) is oneDNN's nChw{b}c:
//   the tensor [N,C,H,W] stored as the plain float32 array [N, ceil(C/b), H,
//   W, b], element (n,c,h,w) at [n][c/b][h][w][c%b], channels past C zero.
//   src_block applies to x, dst_block to y and side. Blocked tensors only
//   ever pass between ops that declare these attributes (the optimiser's
//   layout pass guarantees it); with a blocked x the input channels are
//   the filter's (groups are not supported there).
//
// Quantized form (int8 inference; the optimiser makes it from a
// DequantizeLinear -> conv -> QuantizeLinear chain, hub/graph/optimize):
//   attrs src_scale (float, default 0 = float x), src_zero_point (int),
//   filter_scales (floats: 1 or O entries), dst_scale (float, default 0 =
//   float32 y), dst_zero_point (int), dst_type (dtype uint8 / int8 when
//   dst_scale > 0).
//   With src_scale > 0, x is uint8 or int8, the filter int8 with zero point
//   0 and filter_scales per tensor (1) or per output channel (O), and
//     z = Conv2D((x - src_zero_point) * src_scale, filter * filter_scales) + bias
//   (bias float32), then the post-ops as above on z; with dst_scale > 0
//     y = saturate(round_half_even(z / dst_scale) + dst_zero_point) as dst_type,
//   else y = z (float32). No side input and no blocked layouts in this form.
//
// _FusedMatMul(a, b, bias [N] [, side]) -> y
//   attrs: transpose_a, transpose_b (as MatMul), post_ops, post_op_args.
//   z = MatMul(a, b) [M,N] + bias, then the post-ops as above (side [M,N]).
//   Quantized form as for _FusedConv2D (a quantized, b int8 with N scales
//   or one; transpose_b allowed, transpose_a not).
//
// _Relayout(x) -> y: attrs from_block, to_block (ints, one of them 0),
//   channels (int, the true C). Converts between NHWC [N,H,W,C] and the
//   blocked form above; the values are unchanged.
//
// Shape functions reject (InvalidArgument naming the node): what Conv2D /
// MatMul reject, a bias that is not [O] ([N]), an unknown post-op, an
// "Add" without a side input or a side input without "Add", a side whose
// shape differs from y's, post_op_args of the wrong length, a block other
// than 0, 8 or 16, blocked input without a known channel count, and a
// quantized form whose dtypes, scale counts or zero points do not fit.
#pragma once

#include <string>
#include <vector>

#include "hub/ops/scope.h"

namespace hub::ops {

// One post-op of a fused op: its name (see above) and two arguments.
struct PostOp {
  std::string op;
  float alpha = 0, beta = 0;
};
// The post-ops of a fused node's attributes (validated by its shape function).
std::vector<PostOp> post_ops_of(const Attrs& attrs);
// Sets post_ops and post_op_args.
void set_post_ops(Attrs& attrs, const std::vector<PostOp>& post_ops);
// Whether `op` can be a fused post-op.
bool is_post_op(const std::string& op);

// The quantization attributes of a fused node (see above).
struct FusedQuantization {
  float src_scale = 0;
  int32_t src_zero_point = 0;
  std::vector<float> filter_scales;
  float dst_scale = 0;
  int32_t dst_zero_point = 0;
  DType dst_type = DType::kFloat32;
  bool quantized() const { return src_scale > 0; }
  bool quantized_output() const { return dst_scale > 0; }
};
FusedQuantization quantization_of(const Attrs& attrs);
void set_quantization(Attrs& attrs, const FusedQuantization& q);

// Shape [N, ceil(C/b), H, W, b] of the NHWC shape [N,H,W,C] in block b (b > 0).
Shape blocked_shape(const Shape& nhwc, int64_t block);

}  // namespace hub::ops
