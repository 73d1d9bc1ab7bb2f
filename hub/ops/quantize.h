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
//
// Fake quantization (TensorFlow's ops of the same names): float in, float out,
// the values snapped to the grid the int8 module will use. Attributes
// num_bits (int, 8, in [2, 8]) and narrow_range (bool, false).
//
//   FakeQuantWithMinMaxVars(x float32 [...], min float32 [], max float32 []) -> y float32 [...]
//     (scale, nudged_min, nudged_max) = nudged_quant_params(min, max, num_bits, narrow_range)
//     clamped = min(max(x, nudged_min), nudged_max)
//     y = floor((clamped - nudged_min) / scale + 0.5) * scale + nudged_min
//     min = max = 0 gives y = 0 (as TensorFlow).
//   FakeQuantWithMinMaxVarsPerChannel(x float32 [..., C], min float32 [C], max float32 [C]) -> y
//     the same with min[c], max[c] for channel c of the last dim (x rank 1 to 4).
//
//   Gradients (straight-through inside the range), g = d loss / d y:
//   (dx, dmin, dmax) = FakeQuantWithMinMaxVarsGradient(g, x, min, max):
//     dx   = g * [nudged_min <= x <= nudged_max]   [x's shape]
//     dmin = sum of g * [x < nudged_min]           []
//     dmax = sum of g * [x > nudged_max]           []
//     (min = max = 0: dx = g, dmin = dmax = 0)
//   FakeQuantWithMinMaxVarsPerChannelGradient(g, x, min, max): the same per
//     channel, dmin and dmax [C] summed over all but the last dim.
//   The gradient ops take the forward op's attributes and have no gradient.
//
// nudged_quant_params first widens [min, max] to contain 0; TensorFlow's
// kernel instead shifts a range that lies wholly above or below 0. The two
// agree whenever min <= 0 <= max, which every range hub's training makes
// satisfies (modules/slim/quantize.h). min > max is InvalidArgument when the
// kernel runs. Backends: reference (Eigen); oneDNN has no such primitive, so
// the onednn backend falls back to it.
#pragma once

#include <string>

#include "hub/ops/scope.h"

namespace hub::ops {

// The uint8 parameters that represent the float range [min, max] (TensorFlow's
// fake-quant "nudging", shared by fake quantization and `hub quantize` so an
// exported int8 module uses exactly the grid training saw):
//   qmin = narrow_range ? 1 : 0, qmax = 2^num_bits - 1,
//   scale = (max - min) / (qmax - qmin),
//   zero_point = clamp(round(qmin - min / scale), qmin, qmax),
//   nudged_min = (qmin - zero_point) * scale, nudged_max = (qmax - zero_point) * scale.
// The range is first widened to contain 0 (so 0 is exact); an empty range
// [0, 0] becomes [0, 1e-6]. With narrow_range and
// min = -max the result is the symmetric int8 grid [-127, 127] * scale shifted
// by zero_point 128 (hub quantize's weights). Throws InvalidArgument for a
// non-finite bound or num_bits outside [2, 8].
struct QuantParams {
  float scale;
  int32_t zero_point;
  float nudged_min, nudged_max;
};
QuantParams nudged_quant_params(float min, float max, int num_bits = 8, bool narrow_range = false);

Output fake_quant_with_min_max_vars(const Scope& s, Output x, Output min, Output max, int num_bits = 8,
                                    bool narrow_range = false, const std::string& name = "FakeQuantWithMinMaxVars");
Output fake_quant_with_min_max_vars_per_channel(const Scope& s, Output x, Output min, Output max, int num_bits = 8,
                                                bool narrow_range = false,
                                                const std::string& name = "FakeQuantWithMinMaxVarsPerChannel");

Output quantize_linear(const Scope& s, Output x, Output scale, Output zero_point, int64_t axis = 1,
                       const std::string& name = "QuantizeLinear");
Output dequantize_linear(const Scope& s, Output x, Output scale, Output zero_point, int64_t axis = 1,
                         const std::string& name = "DequantizeLinear");

}  // namespace hub::ops
