// Control flow: ops that run subgraphs (hub/ops/subgraph.h) held in their
// attributes, for imported models (ONNX If and Loop). They run on the host,
// each subgraph planned once by the session running them; their output
// sizes may follow from the values (OpDef::value_dependent_shape), and they
// are not differentiable.
//
//   If(cond, args...; then_branch, else_branch)
//       cond: a bool tensor of one element. Runs then_branch when it is true,
//       else else_branch, on args... (both branches take them: same count and
//       dtypes, compatible shapes) and returns that branch's results. The two
//       branches' results agree in count, dtypes and ranks; a dim on which
//       they differ is known only at run time.
//   Loop(max_trips, cond, carried..., invariant...; body, num_carried)
//       max_trips int64 and cond bool, one element each. Starting from the
//       carried inputs, for i = 0, 1, ... while i < max_trips and cond:
//         (cond, carried..., scans...) = body(i, cond, carried..., invariant...)
//       (i an int64 scalar, cond a bool scalar). Outputs: the carried values
//       after the last iteration (the inputs after none), then each scan
//       result of every iteration stacked along a new first axis (ONNX Loop's
//       scan outputs; they must keep one shape across iterations).
#pragma once

#include <string>
#include <vector>

#include "hub/ops/scope.h"
#include "hub/ops/subgraph.h"

namespace hub::ops {

std::vector<Output> if_(const Scope& s, Output cond, const std::vector<Output>& args, SubgraphPtr then_branch,
                        SubgraphPtr else_branch, const std::string& name = "If");
std::vector<Output> loop(const Scope& s, Output max_trips, Output cond, const std::vector<Output>& carried,
                         const std::vector<Output>& invariant, SubgraphPtr body, const std::string& name = "Loop");

}  // namespace hub::ops
