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
//   Pow:      z = a^b (float32 only, std::pow semantics: a negative base with
//             an integral exponent is fine, (-8)^(1/3) is NaN, 0^0 = 1)
//             (dz/da, dz/db) = PowGrad(g, a, b) =
//               (g * b * a^(b-1),  g * a^b * ln a where a > 0, else 0)
//             The zero for a <= 0 is TF's convention (_PowGrad masks ln a to 0
//             there: ln a is -inf at 0 and NaN below; x^b is not differentiable
//             in b there). Unlike TF, the whole term is 0 there, also where a^b
//             is inf (a = 0, b < 0), where TF's inf * 0 gives NaN. dz/da follows
//             the formula, so it is NaN or inf where a^(b-1) is, e.g. a = 0
//             with b < 1 (as TF).
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
// The remainder with b's sign, or with `truncate` with a's.
Output mod(const Scope& s, Output a, Output b, bool truncate = false, const std::string& name = "Mod");
Output maximum(const Scope& s, Output a, Output b, const std::string& name = "Maximum");
Output minimum(const Scope& s, Output a, Output b, const std::string& name = "Minimum");
Output pow(const Scope& s, Output a, Output b, const std::string& name = "Pow");
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
