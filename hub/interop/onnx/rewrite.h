// hub's own rewrites of ONNX models, where ONNX's tools stop short:
//
// Old models: opsets 1 to 6, and the experimental operators of opsets 1 to 9
// (ImageScaler and friends, which ONNX 1.12 no longer defines), are brought
// to opset 7's standard operators around ONNX's checker and before its
// version converter takes the model on to kTargetOpset. The converter has no
// adapters for several of these forms (Cast's string `to`, Tile's scalar
// inputs, Upsample's two scales, the legacy broadcast of And/Or/Xor and the
// comparisons, every experimental operator), and its adapters from opset 6
// crashed on malformed models under fuzzing.
//
// What changes, node by node (docs/import.md "Old models"):
//   - consumed_inputs (opsets 1 to 5) is dropped;
//   - legacy broadcasting (Add, Sub, Mul, Div, Pow, And, Or, Xor, Equal,
//     Greater, Less with broadcast = 1 and an axis) aligns B at `axis` of A:
//     B gains trailing dims of 1 (Unsqueeze) so NumPy's rules say the same;
//   - PRelu's slope of shape [C] is per channel: it becomes [C, 1, ...];
//   - Gemm's broadcast attribute is dropped (C always broadcasts from 7);
//   - BatchNormalization and Dropout in training mode (is_test = 0, their
//     default) are refused: hub imports models for inference;
//   - Cast's `to` by name, Concat without an axis (1), Reshape's shape
//     attribute (an initializer input), Pad's `paddings`, Split's split
//     input (an attribute), Tile's tiles and axis (a repeats initializer),
//     Upsample's height and width scales, and the recurrent ops'
//     output_sequence take their opset-7 forms;
//   - ImageScaler, Scale, Affine, ScaledTanh, ParametricSoftplus and the
//     experimental ThresholdedRelu become Mul/Add/Tanh/Softplus/Greater/Cast
//     with constant initializers.
// Ranks come from ONNX's shape inference; a form that needs one inference
// could not find is refused naming the value.
//
// Quantized operators (ONNX Runtime's "QOperator" format and its dynamic
// quantization): QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger and
// DynamicQuantizeLinear become DequantizeLinear -> Conv/MatMul ->
// QuantizeLinear (or Cast to int32), the QDQ form hub runs on its int8
// kernels (docs/quantization.md), after conversion to kTargetOpset.
#pragma once

#include <onnx/onnx_pb.h>

#include <set>
#include <string>

namespace hub::onnx_interop {

// The operators these rewrites replace (docs/import.md lists them with the
// ones the importer maps).
const std::set<std::string>& rewritten_operators();

// Replaces the experimental operators of `model` (default-domain opset
// `opset`; nothing from opset 10) by standard ones of its own opset, so that
// ONNX's checker, which defines none of them, can check it.
void expand_experimental_operators(::onnx::ModelProto& model, int opset, const std::string& where);

// Rewrites `model` of opset 1 to 6, checked by ONNX's checker, to opset 7 in
// place (nothing at 7 or above). Throws InvalidArgument naming `where`, the
// node and its op for a form with no opset-7 equivalent.
void upgrade_to_opset7(::onnx::ModelProto& model, int opset, const std::string& where);

// Rewrites the quantized operators of `model` (converted to kTargetOpset
// from `opset`) as DequantizeLinear, Conv or MatMul, and QuantizeLinear or
// Cast; their scales and zero points may be scalars or 1-D (per output
// channel of a convolution's weights, per row of a MatMul's A and column of
// its B; one element is per tensor).
void decompose_quantized_operators(::onnx::ModelProto& model, int opset, const std::string& where);

}  // namespace hub::onnx_interop
