// Helpers shared by the module tests.
#pragma once

#include "hub/module/module.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/state.h"

namespace hub::testing {

// The seed's example module: y = a*x + b (variables "a", "b"; signature
// "default" with input "x" float32[?] and output "y").
inline void half_plus_two(ModuleBuilder& b) {
  Scope s = b.scope();
  Output a = ops::variable(s, "a", {});
  Output c = ops::variable(s, "b", {});
  Output x = ops::placeholder(s, DType::kFloat32, {kUnknownDim}, "x");
  b.add_signature("default", {{"x", x}}, {{"y", ops::add(s, ops::mul(s, a, x), c, "y")}});
}

}  // namespace hub::testing
