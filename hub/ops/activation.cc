#include "hub/ops/activation.h"

#include <cmath>

#include "hub/ops/registry.h"

namespace hub {
namespace {

std::vector<TensorSpec> float_unary_shape_fn(const InferContext& c) {
  c.expect_dtype(0, DType::kFloat32);
  return {c.input(0)};
}

std::vector<TensorSpec> grad_shape_fn(const InferContext& c) {
  c.expect_dtype(0, DType::kFloat32);
  c.expect_dtype(1, DType::kFloat32);
  if (!c.shape(0).compatible_with(c.shape(1)))
    c.fail("inputs " + c.input(0).to_string() + " and " + c.input(1).to_string() + " differ in shape");
  Shape s = c.shape(0);
  for (int d = 0; d < s.rank(); ++d)
    if (s[d] < 0) s.set_dim(d, c.shape(1)[d]);
  return {{DType::kFloat32, s}};
}

// Elu and EluGrad: the gradient is computed from y, which needs alpha >= 0.
std::vector<TensorSpec> check_elu_alpha(const InferContext& c, std::vector<TensorSpec> out) {
  double alpha = c.attrs().get_float("alpha");
  if (!(alpha >= 0)) c.fail("alpha = " + std::to_string(alpha) + " must be >= 0");
  return out;
}

// ClipByValue and its grad: bounds must not be NaN.
std::vector<TensorSpec> check_clip_bounds(const InferContext& c, std::vector<TensorSpec> out) {
  for (const char* a : {"min", "max"})
    if (std::isnan(c.attrs().get_float(a))) c.fail(std::string(a) + " is NaN");
  return out;
}

// PRelu's slope: rank <= x's, dims right-aligned with x's, each 1 or x's.
void check_slope(const InferContext& c, int x, int slope) {
  c.expect_dtype(slope, DType::kFloat32);
  const Shape& xs = c.shape(x);
  const Shape& ss = c.shape(slope);
  bool ok = ss.rank() <= xs.rank();
  for (int i = 0; ok && i < ss.rank(); ++i) {
    int64_t sd = ss[i], xd = xs[xs.rank() - ss.rank() + i];
    ok = sd == 1 || sd < 0 || xd < 0 || sd == xd;
  }
  if (!ok)
    c.fail("slope " + c.input(slope).to_string() + " does not broadcast to x " + c.input(x).to_string() +
           " (its dims, right-aligned with x's, must be 1 or x's)");
}

constexpr const char* kGradOp = "a gradient op; second-order gradients are not supported";

// A node of `grad_op` with (g, x) inputs and the forward node's attributes.
GradFn grad_from_features(const char* grad_op) {
  return [grad_op](const GradContext& c) {
    return std::vector<Output>{c.scope.op(grad_op, {c.grads[0], c.inputs[0]}, c.node.attrs)};
  };
}

}  // namespace

HUB_REGISTER_OP(Relu)
    .inputs(1)
    .shape_fn(float_unary_shape_fn)
    .grad(grad_from_features("ReluGrad"))
    .doc("y = max(x, 0).");
HUB_REGISTER_OP(Relu6)
    .inputs(1)
    .shape_fn(float_unary_shape_fn)
    .grad(grad_from_features("Relu6Grad"))
    .doc("y = min(max(x, 0), 6).");
HUB_REGISTER_OP(LeakyRelu)
    .inputs(1)
    .attr("alpha", AttrType::kFloat, 0.2)
    .shape_fn(float_unary_shape_fn)
    .grad(grad_from_features("LeakyReluGrad"))
    .doc("y = x if x > 0 else alpha * x.");
HUB_REGISTER_OP(Elu)
    .inputs(1)
    .attr("alpha", AttrType::kFloat, 1.0)
    .shape_fn([](const InferContext& c) { return check_elu_alpha(c, float_unary_shape_fn(c)); })
    .grad([](const GradContext& c) {
      return std::vector<Output>{c.scope.op("EluGrad", {c.grads[0], c.outputs[0]}, c.node.attrs)};
    })
    .doc("y = x if x > 0 else alpha * (exp(x) - 1); alpha >= 0.");
HUB_REGISTER_OP(HardSigmoid)
    .inputs(1)
    .attr("alpha", AttrType::kFloat, 0.2)
    .attr("beta", AttrType::kFloat, 0.5)
    .shape_fn(float_unary_shape_fn)
    .grad(grad_from_features("HardSigmoidGrad"))
    .doc("y = max(0, min(1, alpha * x + beta)).");
HUB_REGISTER_OP(HardSwish)
    .inputs(1)
    .shape_fn(float_unary_shape_fn)
    .grad(grad_from_features("HardSwishGrad"))
    .doc("y = x * min(max(x + 3, 0), 6) / 6.");
HUB_REGISTER_OP(ClipByValue)
    .inputs(1)
    .attr("min", AttrType::kFloat, -std::numeric_limits<double>::infinity())
    .attr("max", AttrType::kFloat, std::numeric_limits<double>::infinity())
    .shape_fn([](const InferContext& c) { return check_clip_bounds(c, float_unary_shape_fn(c)); })
    .grad(grad_from_features("ClipByValueGrad"))
    .doc("y = min(max(x, min), max); a bound left at its default (-inf, +inf) does not clip.");
HUB_REGISTER_OP(PRelu)
    .inputs(2)
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      c.expect_dtype(0, DType::kFloat32);
      check_slope(c, 0, 1);
      return {c.input(0)};
    })
    .grad([](const GradContext& c) {
      return c.scope.op_n("PReluGrad", {c.grads[0], c.inputs[0], c.inputs[1]});
    })
    .doc("y = x if x > 0 else slope * x; slope broadcasts to x (dims right-aligned, each 1 or x's).");
HUB_REGISTER_OP(Sigmoid)
    .inputs(1)
    .shape_fn(float_unary_shape_fn)
    .grad([](const GradContext& c) {
      return std::vector<Output>{ops::sigmoid_grad(c.scope, c.outputs[0], c.grads[0])};
    })
    .doc("y = 1 / (1 + exp(-x)).");
HUB_REGISTER_OP(Tanh)
    .inputs(1)
    .shape_fn(float_unary_shape_fn)
    .grad([](const GradContext& c) { return std::vector<Output>{ops::tanh_grad(c.scope, c.outputs[0], c.grads[0])}; })
    .doc("y = tanh(x).");

HUB_REGISTER_OP(ReluGrad)
    .inputs(2)
    .shape_fn(grad_shape_fn)
    .doc("(gradients, features) -> gradients * [features > 0].")
    .no_gradient(kGradOp);
HUB_REGISTER_OP(Relu6Grad)
    .inputs(2)
    .shape_fn(grad_shape_fn)
    .doc("(gradients, features) -> gradients * [0 < features < 6].")
    .no_gradient(kGradOp);
HUB_REGISTER_OP(LeakyReluGrad)
    .inputs(2)
    .attr("alpha", AttrType::kFloat, 0.2)
    .shape_fn(grad_shape_fn)
    .doc("(gradients, features) -> gradients if features > 0 else gradients * alpha.")
    .no_gradient(kGradOp);
HUB_REGISTER_OP(EluGrad)
    .inputs(2)
    .attr("alpha", AttrType::kFloat, 1.0)
    .shape_fn([](const InferContext& c) { return check_elu_alpha(c, grad_shape_fn(c)); })
    .doc("(gradients, outputs) -> gradients if outputs > 0 else gradients * (outputs + alpha).")
    .no_gradient(kGradOp);
HUB_REGISTER_OP(HardSigmoidGrad)
    .inputs(2)
    .attr("alpha", AttrType::kFloat, 0.2)
    .attr("beta", AttrType::kFloat, 0.5)
    .shape_fn(grad_shape_fn)
    .doc("(gradients, features) -> gradients * alpha * [0 < alpha * features + beta < 1].")
    .no_gradient(kGradOp);
HUB_REGISTER_OP(HardSwishGrad)
    .inputs(2)
    .shape_fn(grad_shape_fn)
    .doc(
        "(gradients, features) -> 0 if features <= -3, gradients if features >= 3, else gradients * (2 * features + 3) "
        "/ 6.")
    .no_gradient(kGradOp);
HUB_REGISTER_OP(ClipByValueGrad)
    .inputs(2)
    .attr("min", AttrType::kFloat, -std::numeric_limits<double>::infinity())
    .attr("max", AttrType::kFloat, std::numeric_limits<double>::infinity())
    .shape_fn([](const InferContext& c) { return check_clip_bounds(c, grad_shape_fn(c)); })
    .doc("(gradients, features) -> gradients * [min <= features <= max].")
    .no_gradient(kGradOp);
HUB_REGISTER_OP(PReluGrad)
    .inputs(3)
    .outputs(2)
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      std::vector<TensorSpec> dx = grad_shape_fn(c);
      check_slope(c, 1, 2);
      return {dx[0], c.input(2)};
    })
    .doc(
        "(gradients, features, slope) -> (gradients * (features > 0 ? 1 : slope), "
        "sum of gradients * min(features, 0) over the dims slope is broadcast along).")
    .no_gradient(kGradOp);
HUB_REGISTER_OP(SigmoidGrad).inputs(2).shape_fn(grad_shape_fn).doc("(y, dy) -> dy * y * (1 - y).").no_gradient(kGradOp);
HUB_REGISTER_OP(TanhGrad).inputs(2).shape_fn(grad_shape_fn).doc("(y, dy) -> dy * (1 - y^2).").no_gradient(kGradOp);

namespace ops {

Output relu(const Scope& s, Output x, const std::string& name) { return s.op("Relu", {x}, {}, name); }
Output relu6(const Scope& s, Output x, const std::string& name) { return s.op("Relu6", {x}, {}, name); }
Output leaky_relu(const Scope& s, Output x, float alpha, const std::string& name) {
  return s.op("LeakyRelu", {x}, Attrs().set("alpha", alpha), name);
}
Output elu(const Scope& s, Output x, float alpha, const std::string& name) {
  return s.op("Elu", {x}, Attrs().set("alpha", alpha), name);
}
Output hard_sigmoid(const Scope& s, Output x, float alpha, float beta, const std::string& name) {
  return s.op("HardSigmoid", {x}, Attrs().set("alpha", alpha).set("beta", beta), name);
}
Output hard_swish(const Scope& s, Output x, const std::string& name) { return s.op("HardSwish", {x}, {}, name); }
Output clip_by_value(const Scope& s, Output x, float min, float max, const std::string& name) {
  return s.op("ClipByValue", {x}, Attrs().set("min", min).set("max", max), name);
}
Output prelu(const Scope& s, Output x, Output slope, const std::string& name) {
  return s.op("PRelu", {x, slope}, {}, name);
}
Output sigmoid(const Scope& s, Output x, const std::string& name) { return s.op("Sigmoid", {x}, {}, name); }
Output tanh(const Scope& s, Output x, const std::string& name) { return s.op("Tanh", {x}, {}, name); }
Output relu_grad(const Scope& s, Output gradients, Output features, const std::string& name) {
  return s.op("ReluGrad", {gradients, features}, {}, name);
}
Output relu6_grad(const Scope& s, Output gradients, Output features, const std::string& name) {
  return s.op("Relu6Grad", {gradients, features}, {}, name);
}
Output sigmoid_grad(const Scope& s, Output y, Output dy, const std::string& name) {
  return s.op("SigmoidGrad", {y, dy}, {}, name);
}
Output tanh_grad(const Scope& s, Output y, Output dy, const std::string& name) {
  return s.op("TanhGrad", {y, dy}, {}, name);
}

}  // namespace ops
}  // namespace hub
