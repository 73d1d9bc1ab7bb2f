// Activations and their gradient ops (TensorFlow's names, argument orders and
// conventions). All float32, y has x's shape; g = d loss / d y.
//
//   Relu:    y = max(x, 0)                 dx = ReluGrad(g, x)    = g * [x > 0]
//   Relu6:   y = min(max(x, 0), 6)         dx = Relu6Grad(g, x)   = g * [0 < x < 6]
//   Elu:     y = x if x > 0 else e^x - 1   dx = EluGrad(g, y)     = g if y > 0 else g * (y + 1)
//   Sigmoid: y = 1 / (1 + e^-x)            dx = SigmoidGrad(y, g) = g * y * (1 - y)
//   Tanh:    y = tanh(x)                   dx = TanhGrad(y, g)    = g * (1 - y^2)
//
// The grad ops take two same-shaped float32 tensors and are not themselves
// differentiable. Backends: reference (Eigen) and onednn (eltwise primitives).
#pragma once

#include <string>

#include "hub/ops/scope.h"

namespace hub::ops {

Output relu(const Scope& s, Output x, const std::string& name = "Relu");
Output relu6(const Scope& s, Output x, const std::string& name = "Relu6");
Output elu(const Scope& s, Output x, const std::string& name = "Elu");
Output sigmoid(const Scope& s, Output x, const std::string& name = "Sigmoid");
Output tanh(const Scope& s, Output x, const std::string& name = "Tanh");

Output relu_grad(const Scope& s, Output gradients, Output features, const std::string& name = "ReluGrad");
Output relu6_grad(const Scope& s, Output gradients, Output features, const std::string& name = "Relu6Grad");
Output elu_grad(const Scope& s, Output gradients, Output outputs, const std::string& name = "EluGrad");
Output sigmoid_grad(const Scope& s, Output y, Output dy, const std::string& name = "SigmoidGrad");
Output tanh_grad(const Scope& s, Output y, Output dy, const std::string& name = "TanhGrad");

}  // namespace hub::ops
