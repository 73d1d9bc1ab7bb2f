// Activations and their gradient ops (TensorFlow's names, argument orders and
// conventions where TF has the op; attributes extended so ONNX's and
// PyTorch's variants are expressed exactly). All float32, y has x's shape;
// g = d loss / d y.
//
//   Relu:        y = max(x, 0)                       dx = ReluGrad(g, x)    = g * [x > 0]
//   Relu6:       y = min(max(x, 0), 6)               dx = Relu6Grad(g, x)   = g * [0 < x < 6]
//   LeakyRelu:   y = x if x > 0 else alpha * x       dx = LeakyReluGrad(g, x) = g if x > 0 else g * alpha
//                (alpha: any float, default 0.2 as TF; ONNX LeakyRelu passes its alpha, default 0.01)
//   Elu:         y = x if x > 0 else alpha * (e^x - 1)
//                                                    dx = EluGrad(g, y)     = g if y > 0 else g * (y + alpha)
//                (alpha >= 0, default 1 = TF's Elu; ONNX Elu passes its alpha. The
//                gradient is computed from y as in TF, which needs alpha >= 0 to tell
//                x > 0 from y > 0; a negative alpha is rejected when the node is built.)
//   HardSigmoid: y = max(0, min(1, alpha * x + beta))   (alpha 0.2, beta 0.5 default: ONNX)
//                                                    dx = HardSigmoidGrad(g, x) = g * alpha * [0 < alpha*x + beta < 1]
//   HardSwish:   y = x * min(max(x + 3, 0), 6) / 6   (ONNX / PyTorch / MobileNetV3)
//                                                    dx = HardSwishGrad(g, x)
//                                                       = 0 if x <= -3, g if x >= 3, else g * (2x + 3) / 6
//                (at the kinks x = -3 and x = 3 the one-sided derivative oneDNN uses.)
//   ClipByValue: y = min(max(x, min), max)           dx = ClipByValueGrad(g, x) = g * [min <= x <= max]
//                (min, max: floats, default -inf and +inf = unbounded on that side.
//                min > max gives y = max everywhere, as ONNX Clip and NumPy; TF's
//                clip_by_value calls that case invalid. ONNX Clip's attribute form
//                (opset < 11) and input form (constant min/max inputs) both map here;
//                an absent bound stays at its default.)
//   Sigmoid:     y = 1 / (1 + e^-x)                  dx = SigmoidGrad(y, g) = g * y * (1 - y)
//   Tanh:        y = tanh(x)                         dx = TanhGrad(y, g)    = g * (1 - y^2)
//
//   PRelu(x, slope): y = x if x > 0 else slope * x, slope broadcast to x's shape
//                (ONNX's unidirectional broadcasting: slope's dims right-aligned with
//                x's, each 1 or equal to x's; rank(slope) <= rank(x)). y has x's shape.
//                (dx, dslope) = PReluGrad(g, x, slope):
//                  dx     = g if x > 0 else g * slope                        [x's shape]
//                  dslope = sum over the broadcast dims of g * min(x, 0)     [slope's shape]
//
// ONNX Selu is gamma * Elu(x; alpha), a Mul after Elu; it has no op of its own.
//
// The grad ops take same-shaped float32 tensors (PReluGrad: slope as in PRelu)
// and are not themselves differentiable; their attributes are the forward op's.
// Backends: reference (Eigen) for all; onednn (eltwise primitives: relu with
// alpha, clip, elu with alpha, logistic, tanh, hardswish; the prelu primitive)
// for all but HardSigmoid(Grad) and ClipByValueGrad, which oneDNN 2.6 has no
// exact algorithm for (no hardsigmoid; its clip backward passes the gradient
// on (min, max], not [min, max]). ClipByValue with min > max and PRelu whose
// slope varies along non-adjacent dims of x also stay on reference.
#pragma once

#include <limits>
#include <string>

#include "hub/ops/scope.h"

namespace hub::ops {

Output relu(const Scope& s, Output x, const std::string& name = "Relu");
Output relu6(const Scope& s, Output x, const std::string& name = "Relu6");
Output leaky_relu(const Scope& s, Output x, float alpha = 0.2f, const std::string& name = "LeakyRelu");
Output elu(const Scope& s, Output x, float alpha = 1.0f, const std::string& name = "Elu");
Output hard_sigmoid(const Scope& s, Output x, float alpha = 0.2f, float beta = 0.5f,
                    const std::string& name = "HardSigmoid");
Output hard_swish(const Scope& s, Output x, const std::string& name = "HardSwish");
Output clip_by_value(const Scope& s, Output x, float min = -std::numeric_limits<float>::infinity(),
                     float max = std::numeric_limits<float>::infinity(), const std::string& name = "ClipByValue");
Output prelu(const Scope& s, Output x, Output slope, const std::string& name = "PRelu");
Output sigmoid(const Scope& s, Output x, const std::string& name = "Sigmoid");
Output tanh(const Scope& s, Output x, const std::string& name = "Tanh");

Output relu_grad(const Scope& s, Output gradients, Output features, const std::string& name = "ReluGrad");
Output relu6_grad(const Scope& s, Output gradients, Output features, const std::string& name = "Relu6Grad");
Output sigmoid_grad(const Scope& s, Output y, Output dy, const std::string& name = "SigmoidGrad");
Output tanh_grad(const Scope& s, Output y, Output dy, const std::string& name = "TanhGrad");

}  // namespace hub::ops
