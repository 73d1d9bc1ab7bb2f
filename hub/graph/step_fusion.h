// Exact fusions a Session makes in the nodes one plan runs (internal to
// hub/graph; hub/graph/session.h). The graph itself is never changed: a
// fused node runs in place of one source node, under that node's name, and
// produces tensors of the source graph, so fetches, feeds and the graph a
// module exports are unaffected. Each fusion computes what the nodes it
// replaces compute (within float rounding) in fewer passes over memory.
// Only training-mode batch norm (is_training) is fused: an inference graph
// gets the inference optimiser instead (hub/graph/optimize/optimize.h), and
// a plain run of one stays the graph itself, op by op.
//
//   FusedBatchNorm A (training) -> Relu / Relu6 R, where A's y is not
//   fetched and its only consumers are R and gradients of R (ReluGrad /
//   Relu6Grad with y as features): A runs as _FusedBatchNormActivation
//   producing R's output and A's outputs 1..3; R does not run; those
//   gradients take R's output as features instead of y (the same mask,
//   hub/ops/batch_norm.h), so y is never made.
//
//   ReluGrad / Relu6Grad G -> FusedBatchNormGrad B (training; as B's dy),
//   where G's output is not fetched and feeds only B: B runs as
//   _FusedBatchNormActivationGrad(G's dz, G's features, B's other inputs);
//   G does not run.
#pragma once

#include <map>
#include <set>
#include <vector>

#include "hub/graph/graph.h"

namespace hub {

struct StepFusion {
  // Nodes that run as another node: the node to run (its own op, inputs and
  // attrs; inputs are tensors of the source graph) and the source tensors
  // its outputs are, in order.
  struct Replacement {
    Node node;
    std::vector<Output> produces;
  };
  std::map<int, Replacement> replaced;
  // Nodes that do not run (their outputs are made by a replacement, or
  // needed by nobody any more).
  std::set<int> skipped;
};

// The fusions among the nodes with runs[id] != 0 (the nodes a plan runs:
// needed and not fed), given the tensors the plan fetches.
StepFusion fuse_steps(const Graph& graph, const std::vector<char>& runs, const std::vector<Output>& fetches);

}  // namespace hub
