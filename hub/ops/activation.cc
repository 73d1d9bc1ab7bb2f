#include "hub/ops/activation.h"
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

}  // namespace

HUB_REGISTER_OP(Relu)
    .inputs(1)
    .shape_fn(float_unary_shape_fn)
    .grad([](const GradContext& c) { return std::vector<Output>{ops::relu_grad(c.scope, c.grads[0], c.inputs[0])}; })
    .doc("y = max(x, 0).");
HUB_REGISTER_OP(Relu6)
    .inputs(1)
    .shape_fn(float_unary_shape_fn)
    .grad([](const GradContext& c) { return std::vector<Output>{ops::relu6_grad(c.scope, c.grads[0], c.inputs[0])}; })
    .doc("y = min(max(x, 0), 6).");
HUB_REGISTER_OP(Elu)
    .inputs(1)
    .shape_fn(float_unary_shape_fn)
    .grad([](const GradContext& c) { return std::vector<Output>{ops::elu_grad(c.scope, c.grads[0], c.outputs[0])}; })
    .doc("y = x if x > 0 else exp(x) - 1.");
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

HUB_REGISTER_OP(ReluGrad).inputs(2).shape_fn(grad_shape_fn).doc("(gradients, features) -> gradients * [features > 0].")
    .no_gradient("a gradient op; second-order gradients are not supported");
HUB_REGISTER_OP(Relu6Grad)
    .inputs(2)
    .shape_fn(grad_shape_fn)
    .doc("(gradients, features) -> gradients * [0 < features < 6].")
    .no_gradient("a gradient op; second-order gradients are not supported");
HUB_REGISTER_OP(EluGrad)
    .inputs(2)
    .shape_fn(grad_shape_fn)
    .doc("(gradients, outputs) -> gradients if outputs > 0 else gradients * (outputs + 1).")
    .no_gradient("a gradient op; second-order gradients are not supported");
HUB_REGISTER_OP(SigmoidGrad).inputs(2).shape_fn(grad_shape_fn).doc("(y, dy) -> dy * y * (1 - y).")
    .no_gradient("a gradient op; second-order gradients are not supported");
HUB_REGISTER_OP(TanhGrad).inputs(2).shape_fn(grad_shape_fn).doc("(y, dy) -> dy * (1 - y^2).")
    .no_gradient("a gradient op; second-order gradients are not supported");

namespace ops {

Output relu(const Scope& s, Output x, const std::string& name) { return s.op("Relu", {x}, {}, name); }
Output relu6(const Scope& s, Output x, const std::string& name) { return s.op("Relu6", {x}, {}, name); }
Output elu(const Scope& s, Output x, const std::string& name) { return s.op("Elu", {x}, {}, name); }
Output sigmoid(const Scope& s, Output x, const std::string& name) { return s.op("Sigmoid", {x}, {}, name); }
Output tanh(const Scope& s, Output x, const std::string& name) { return s.op("Tanh", {x}, {}, name); }
Output relu_grad(const Scope& s, Output gradients, Output features, const std::string& name) {
  return s.op("ReluGrad", {gradients, features}, {}, name);
}
Output relu6_grad(const Scope& s, Output gradients, Output features, const std::string& name) {
  return s.op("Relu6Grad", {gradients, features}, {}, name);
}
Output elu_grad(const Scope& s, Output gradients, Output outputs, const std::string& name) {
  return s.op("EluGrad", {gradients, outputs}, {}, name);
}
Output sigmoid_grad(const Scope& s, Output y, Output dy, const std::string& name) {
  return s.op("SigmoidGrad", {y, dy}, {}, name);
}
Output tanh_grad(const Scope& s, Output y, Output dy, const std::string& name) {
  return s.op("TanhGrad", {y, dy}, {}, name);
}

}  // namespace ops
}  // namespace hub
