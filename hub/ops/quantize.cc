// QuantizeLinear and DequantizeLinear (formulas in hub/ops/quantize.h).
#include "hub/ops/quantize.h"

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
