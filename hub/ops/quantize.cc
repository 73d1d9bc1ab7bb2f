// QuantizeLinear and DequantizeLinear (formulas in hub/ops/quantize.h).
#include "hub/ops/quantize.h"

#include <algorithm>
#include <cmath>

#include "hub/ops/registry.h"

namespace hub {
namespace {

// Checks scale and zero point against x and the axis; `integers` are the
// dtypes the zero point may have.
void check_quantization(const InferContext& c, std::initializer_list<DType> integers) {
  c.expect_dtype(1, DType::kFloat32);
  const Shape& x = c.shape(0);
  const Shape& scale = c.shape(1);
  const Shape& zp = c.shape(2);
  bool known = false;
  for (DType d : integers) known = known || c.dtype(2) == d;
  if (!known) c.fail("zero_point has dtype " + std::string(dtype_name(c.dtype(2))) + ", which is not allowed here");
  if (scale.rank() > 1) c.fail("scale must be a scalar or 1-D, got " + scale.to_string());
  if (zp.rank() != scale.rank() || (scale.rank() == 1 && zp[0] >= 0 && scale[0] >= 0 && zp[0] != scale[0]))
    c.fail("zero_point " + zp.to_string() + " does not match scale " + scale.to_string());
  if (scale.rank() == 1) {
    const int64_t axis = c.attrs().get_int("axis");
    if (axis < -x.rank() || axis >= x.rank())
      c.fail("axis " + std::to_string(axis) + " is out of range for input " + x.to_string());
    const int64_t dim = x[static_cast<int>(axis < 0 ? axis + x.rank() : axis)];
    if (dim >= 0 && scale[0] >= 0 && dim != scale[0])
      c.fail("scale " + scale.to_string() + " does not match input " + x.to_string() + " along axis " +
             std::to_string(axis));
  }
}

}  // namespace

HUB_REGISTER_OP(QuantizeLinear)
    .inputs(3)
    .attr("axis", AttrType::kInt, int64_t{1})
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      c.expect_dtype(0, DType::kFloat32);
      check_quantization(c, {DType::kInt8, DType::kUInt8});
      return {{c.dtype(2), c.shape(0)}};
    })
    .doc("saturate(round_half_even(x / scale) + zero_point) as int8/uint8, per tensor or per channel.")
    .no_gradient("integer output");

HUB_REGISTER_OP(DequantizeLinear)
    .inputs(3)
    .attr("axis", AttrType::kInt, int64_t{1})
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      check_quantization(c, {DType::kInt8, DType::kUInt8, DType::kInt32});
      if (c.dtype(0) != c.dtype(2))
        c.fail("x is " + std::string(dtype_name(c.dtype(0))) + " but zero_point is " +
               std::string(dtype_name(c.dtype(2))));
      return {{DType::kFloat32, c.shape(0)}};
    })
    .doc("(x - zero_point) * scale as float32, per tensor or per channel.")
    .no_gradient("integer input");

namespace ops {

QuantParams nudged_quant_params(float min, float max, int num_bits, bool narrow_range) {
  if (!std::isfinite(min) || !std::isfinite(max))
    throw_error(Code::kInvalidArgument,
                "quantization range [" + std::to_string(min) + ", " + std::to_string(max) + "] is not finite");
  if (num_bits < 2 || num_bits > 8)
    throw_error(Code::kInvalidArgument, "num_bits " + std::to_string(num_bits) + " is outside [2, 8]");
  min = std::min(min, 0.0f);
  max = std::max(max, 0.0f);
  const float qmin = narrow_range ? 1.0f : 0.0f, qmax = static_cast<float>((1 << num_bits) - 1);
  if (max - min < 1e-30f) max = min + 1e-6f;
  QuantParams p;
  p.scale = (max - min) / (qmax - qmin);
  const float from_min = qmin - min / p.scale;
  p.zero_point = static_cast<int32_t>(from_min < qmin ? qmin : from_min > qmax ? qmax : std::round(from_min));
  p.nudged_min = (qmin - static_cast<float>(p.zero_point)) * p.scale;
  p.nudged_max = (qmax - static_cast<float>(p.zero_point)) * p.scale;
  return p;
}

Output quantize_linear(const Scope& s, Output x, Output scale, Output zero_point, int64_t axis,
                       const std::string& name) {
  return s.op("QuantizeLinear", {x, scale, zero_point}, Attrs().set("axis", axis), name);
}
Output dequantize_linear(const Scope& s, Output x, Output scale, Output zero_point, int64_t axis,
                         const std::string& name) {
  return s.op("DequantizeLinear", {x, scale, zero_point}, Attrs().set("axis", axis), name);
}
}  // namespace ops
}  // namespace hub
