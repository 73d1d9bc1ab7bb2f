// Subgraph: a graph held by a node's attribute, for control flow: If's two
// branches, Loop's body (hub/ops/control_flow.h). Its nodes are a graph's
// nodes (validated when the graph was built, in topological order, ids equal
// to positions); `arguments` are Placeholder outputs the caller feeds, in
// order, and `results` the tensors it gets back. A subgraph reads nothing
// from the graph around it except through its arguments.
//
// Kernels run one through the SubgraphRunner their KernelContext gives them:
// the Session running the node (hub/graph/session.h) runs the subgraph with
// its own backend and variables, planning it once.
#pragma once

#include <vector>

#include "hub/ops/node.h"

namespace hub {

struct Subgraph {
  std::vector<Node> nodes;
  std::vector<Output> arguments;
  std::vector<Output> results;
  const TensorSpec& spec(Output o) const { return nodes.at(o.node).outputs.at(o.index); }
};

class SubgraphRunner {
 public:
  virtual ~SubgraphRunner() = default;
  // The results of `graph` for `arguments` (host tensors).
  virtual std::vector<Tensor> run(const Subgraph& graph, const std::vector<Tensor>& arguments) = 0;
};

// Differentiates subgraphs, for the gradients of ops holding them (If): the
// graph layer's autodiff gives one to their gradient functions
// (GradContext::subgraphs), as the Session gives kernels a runner.
class SubgraphDifferentiator {
 public:
  virtual ~SubgraphDifferentiator() = default;
  // A subgraph taking `graph`'s arguments, then d loss / d result r for each
  // result where has_grad[r], that recomputes `graph` and returns
  // d loss / d argument a for each a in `wrt` (zeros where none flows).
  virtual SubgraphPtr gradient(const Subgraph& graph, const std::vector<bool>& has_grad,
                               const std::vector<int>& wrt) const = 0;
};

}  // namespace hub
