// Element-wise binary ops with NumPy/TF broadcasting, and graph utilities
// used by autodiff.
//
//   z = a (op) b, shape broadcast(a, b)
//   Add:      dz/da = g,            dz/db = g
//   Sub:      dz/da = g,            dz/db = -g
//   Mul:      dz/da = g*b,          dz/db = g*a
//   Div:      dz/da = g/b,          dz/db = -g*a/b^2
//   Maximum:  dz/da = g*[a>=b],     dz/db = g*[a<b]
//   Minimum:  dz/da = g*[a<=b],     dz/db = g*[a>b]
// each summed back to the input's shape over broadcast dimensions (ReduceToLike).
#pragma once

#include <string>
#include <vector>

#include "hub/ops/scope.h"

namespace hub::ops {

Output add(const Scope& s, Output a, Output b, const std::string& name = "Add");
Output sub(const Scope& s, Output a, Output b, const std::string& name = "Sub");
Output mul(const Scope& s, Output a, Output b, const std::string& name = "Mul");
Output div(const Scope& s, Output a, Output b, const std::string& name = "Div");
Output maximum(const Scope& s, Output a, Output b, const std::string& name = "Maximum");
Output minimum(const Scope& s, Output a, Output b, const std::string& name = "Minimum");
// Sum of same-shaped tensors.
Output add_n(const Scope& s, const std::vector<Output>& xs, const std::string& name = "AddN");
// Sums x over the dimensions along which `like` was broadcast to x's shape;
// the result has like's (run-time) shape.
Output reduce_to_like(const Scope& s, Output x, Output like, const std::string& name = "ReduceToLike");
// y = x; StopGradient blocks gradients.
Output identity(const Scope& s, Output x, const std::string& name = "Identity");
Output stop_gradient(const Scope& s, Output x, const std::string& name = "StopGradient");
Output zeros_like(const Scope& s, Output x, const std::string& name = "ZerosLike");
Output ones_like(const Scope& s, Output x, const std::string& name = "OnesLike");

}  // namespace hub::ops
