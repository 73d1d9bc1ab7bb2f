// Reverse-mode automatic differentiation over a Graph.
//
// gradients() appends nodes that compute d y / d x for each x, using each op's
// registered gradient function, and sums contributions from every path. Only
// nodes on a path from an x to y are differentiated (a StopGradient node ends
// a path); reaching an op without a gradient on such a path throws
// InvalidArgument naming the op and node.
#pragma once

#include <vector>

#include "hub/graph/graph.h"

namespace hub {

// y: a float32 tensor; if grad_y is invalid, y must be a scalar (or have a
// fully defined shape) and d y / d y = ones. Returns, for each x, its gradient
// (same shape as x), or an invalid Output when y does not depend on x.
// Gradient nodes are named under scope.sub("gradients").
std::vector<Output> gradients(const Scope& scope, Output y, const std::vector<Output>& xs, Output grad_y = {});

}  // namespace hub
