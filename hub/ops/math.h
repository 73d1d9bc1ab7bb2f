// Unary math, comparisons and casts.
//   Neg:  y = -x            dy/dx = -g
#pragma once

#include <string>

#include "hub/graph/graph.h"

namespace hub::ops {

Output neg(const Scope& s, Output x, const std::string& name = "Neg");

}  // namespace hub::ops
