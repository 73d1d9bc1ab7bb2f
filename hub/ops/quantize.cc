// QuantizeLinear, DequantizeLinear and fake quantization (formulas in
// hub/ops/quantize.h).
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

// Fake quantization's inputs x, min, max at `first` (0 forward, 1 in the
// gradient ops after g); per_channel: min and max [C] with C x's last dim.
void check_fake_quant(const InferContext& c, int first, bool per_channel) {
  for (int i = 0; i < c.num_inputs(); ++i) c.expect_dtype(i, DType::kFloat32);
  const int64_t bits = c.attrs().get_int("num_bits");
  if (bits < 2 || bits > 8) c.fail("num_bits = " + std::to_string(bits) + " is outside [2, 8]");
  const Shape& x = c.shape(first);
  for (int i : {first + 1, first + 2}) {
    const Shape& r = c.shape(i);
    const char* what = i == first + 1 ? "min" : "max";
    if (!per_channel) {
      if (r.rank() != 0) c.fail(std::string(what) + " must be a scalar, got " + r.to_string());
      continue;
    }
    if (x.rank() < 1 || x.rank() > 4) c.fail("x must have rank 1 to 4, got " + x.to_string());
    if (r.rank() != 1 || (r[0] >= 0 && x.dim(-1) >= 0 && r[0] != x.dim(-1)))
      c.fail(std::string(what) + " " + r.to_string() + " must be [C] with C the last dim of x " + x.to_string());
  }
}

std::vector<TensorSpec> fake_quant_shape_fn(const InferContext& c, bool per_channel) {
  check_fake_quant(c, 0, per_channel);
  return {c.input(0)};
}

std::vector<TensorSpec> fake_quant_grad_shape_fn(const InferContext& c, bool per_channel) {
  check_fake_quant(c, 1, per_channel);
  if (!c.shape(0).compatible_with(c.shape(1)))
    c.fail("gradients " + c.input(0).to_string() + " and x " + c.input(1).to_string() + " differ in shape");
  return {c.input(1), c.input(2), c.input(3)};
}

GradFn fake_quant_grad(const char* grad_op) {
  return [grad_op](const GradContext& c) {
    return c.scope.op_n(grad_op, {c.grads[0], c.inputs[0], c.inputs[1], c.inputs[2]}, c.node.attrs);
  };
}

}  // namespace

HUB_REGISTER_OP(FakeQuantWithMinMaxVars)
    .inputs(3)
    .attr("num_bits", AttrType::kInt, int64_t{8})
    .attr("narrow_range", AttrType::kBool, false)
    .shape_fn([](const InferContext& c) { return fake_quant_shape_fn(c, false); })
    .grad(fake_quant_grad("FakeQuantWithMinMaxVarsGradient"))
    .doc(
        "x clamped to the nudged [min, max] and rounded to its grid of 2^num_bits (narrow: - 1) levels; scalar min, "
        "max.");
HUB_REGISTER_OP(FakeQuantWithMinMaxVarsPerChannel)
    .inputs(3)
    .attr("num_bits", AttrType::kInt, int64_t{8})
    .attr("narrow_range", AttrType::kBool, false)
    .shape_fn([](const InferContext& c) { return fake_quant_shape_fn(c, true); })
    .grad(fake_quant_grad("FakeQuantWithMinMaxVarsPerChannelGradient"))
    .doc("FakeQuantWithMinMaxVars per channel of the last dim: min, max [C].");
HUB_REGISTER_OP(FakeQuantWithMinMaxVarsGradient)
    .inputs(4)
    .outputs(3)
    .attr("num_bits", AttrType::kInt, int64_t{8})
    .attr("narrow_range", AttrType::kBool, false)
    .shape_fn([](const InferContext& c) { return fake_quant_grad_shape_fn(c, false); })
    .doc("(g, x, min, max) -> (g inside the nudged range else 0, sum of g below it, sum of g above it).")
    .no_gradient("a gradient op; second-order gradients are not supported");
HUB_REGISTER_OP(FakeQuantWithMinMaxVarsPerChannelGradient)
    .inputs(4)
    .outputs(3)
    .attr("num_bits", AttrType::kInt, int64_t{8})
    .attr("narrow_range", AttrType::kBool, false)
    .shape_fn([](const InferContext& c) { return fake_quant_grad_shape_fn(c, true); })
    .doc("FakeQuantWithMinMaxVarsGradient per channel of the last dim (dmin, dmax [C]).")
    .no_gradient("a gradient op; second-order gradients are not supported");

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

Output fake_quant_with_min_max_vars(const Scope& s, Output x, Output min, Output max, int num_bits, bool narrow_range,
                                    const std::string& name) {
  return s.op("FakeQuantWithMinMaxVars", {x, min, max},
              Attrs().set("num_bits", int64_t{num_bits}).set("narrow_range", narrow_range), name);
}
Output fake_quant_with_min_max_vars_per_channel(const Scope& s, Output x, Output min, Output max, int num_bits,
                                                bool narrow_range, const std::string& name) {
  return s.op("FakeQuantWithMinMaxVarsPerChannel", {x, min, max},
              Attrs().set("num_bits", int64_t{num_bits}).set("narrow_range", narrow_range), name);
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
