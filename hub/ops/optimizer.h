// Optimizer updates as ops: TensorFlow's Apply* update rules (dense case),
// each updating a float32 variable and its slot tensors in place from a
// gradient. hub::Optimizer (hub/graph/optimizer.h) runs them outside any
// graph on the device the variable lives on (hub::run_standalone), so the
// same rule has a host kernel (hub/ops/cpu/optimizer.cc) and a CUDA one
// (hub/ops/cuda/optimizer.cu) and nothing else computes it.
//
// Inputs: (w, g, slot_0, ..., slot_{k-1}), all float32 of w's shape and on
// one device; w and the slots are written in place; output 0 is w (the same
// tensor). Attributes are the step's scalars (lr = the learning rate at the
// step; all element-wise):
//   ApplyGradientDescent  lr                          w -= lr*g
//   ApplyMomentum         lr, momentum, use_nesterov  a = momentum*a + g;  w -= lr*a
//                         slots (a)                   (nesterov: w -= lr*g + lr*momentum*a)
//   ApplyRMSProp          lr, decay, momentum, epsilon
//                         slots (ms, mom)             ms += (g^2 - ms)*(1 - decay);
//                                                     mom = momentum*mom + lr*g/sqrt(ms + epsilon); w -= mom
//   ApplyAdam             lr (the bias-corrected lr_t = lr*sqrt(1 - beta2^t)/(1 - beta1^t)
//                         of the t-th step), beta1, beta2, epsilon
//                         slots (m, v)                m += (g - m)*(1 - beta1); v += (g^2 - v)*(1 - beta2);
//                                                     w -= lr*m/(sqrt(v) + epsilon)
//   ApplyAdagrad          lr; slots (acc)             acc += g^2;  w -= lr*g/sqrt(acc)
//   ApplyAdadelta         lr, rho, epsilon
//                         slots (acc, acc_u)          acc = rho*acc + (1 - rho)*g^2;
//                                                     u = sqrt(acc_u + epsilon)/sqrt(acc + epsilon)*g;
//                                                     acc_u = rho*acc_u + (1 - rho)*u^2;  w -= lr*u
//   ApplyFtrl             lr, lr_power (p <= 0), l1, l2
//                         slots (n, z)                n' = n + g^2;  z += g - (n'^(-p) - n^(-p))/lr*w;
//                                                     w = |z| > l1 ? (l1*sign(z) - z)/(n'^(-p)/lr + 2*l2) : 0;
//                                                     n = n'
// Not differentiable (state updates). The shape function rejects a
// non-float32 input or one whose shape differs from w's.
#pragma once

#include <string>

namespace hub::ops {

// The number of slot tensors update op `op` takes (after w and g).
int update_slots(const std::string& op);

}  // namespace hub::ops
