// Linear quantization between float32 and 8-bit integers (ONNX's
// QuantizeLinear / DequantizeLinear, opset 13 semantics), per tensor or per
// channel.
//
//   QuantizeLinear(x float32 [...], scale float32 [] or [C], zero_point Q [] or [C]; axis = 1) -> y Q [...]
//     Q is int8 or uint8 (the zero point's dtype). Per tensor (scale of rank 0):
//       y = saturate(round(x / scale) + zero_point)
//     per channel (scale [C], C = x.shape[axis]): scale[c] and zero_point[c]
//     with c the index along `axis` (negative counts from the end).
//     round: to nearest, ties to even (2.5 -> 2, -2.5 -> -2); saturate: to
//     [-128, 127] (int8) or [0, 255] (uint8); NaN maps to the zero point.
//
//   DequantizeLinear(x Q [...], scale float32 [] or [C], zero_point Q [] or [C]; axis = 1) -> y float32 [...]
//       y = (x - zero_point) * scale      (per channel as above)
//     Q is int8, uint8 or int32 (int32: the bias of integer convolutions,
//     zero point 0).
//
// scale must be > 0 (checked when constant at import; a kernel given a
// non-positive or non-finite scale fails naming the node). Neither op has a
// gradient: QuantizeLinear's output and DequantizeLinear's input are integers
// (quantization-aware training uses fake quantization instead).
#pragma once

#include <string>

#include "hub/ops/scope.h"

namespace hub::ops {

Output quantize_linear(const Scope& s, Output x, Output scale, Output zero_point, int64_t axis = 1,
                       const std::string& name = "QuantizeLinear");
Output dequantize_linear(const Scope& s, Output x, Output scale, Output zero_point, int64_t axis = 1,
                         const std::string& name = "DequantizeLinear");

}  // namespace hub::ops
