// The optimiser's working form of a graph (internal to hub/graph/optimize):
// a list of nodes that passes may rewrite in place, drop, or append to, each
// with a position that orders the emitted graph. Graph nodes are append-only
// and validated; this form is mutable, and emit() rebuilds a Graph through
// Graph::add_node, so every rewritten node is validated again by its op's
// shape function.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "hub/graph/graph.h"

namespace hub::optimize {

struct INode {
  std::string op, name;
  std::vector<Output> inputs;  // Output.node indexes Ir::nodes
  Attrs attrs;
  std::vector<TensorSpec> outputs;
  double position = 0;  // emission order (a node's inputs come before it)
  bool dead = false;
};

class Ir {
 public:
  // A copy of `graph` keeping the tensors in `keep` (they count as used).
  Ir(const Graph& graph, const std::vector<Output>& keep);

  std::vector<INode> nodes;

  // Appends a node (outputs inferred through its op's shape function) placed
  // just before `before`'s position; returns its index.
  int add(INode node, int before);
  // Re-infers n's output specs after its inputs or attributes changed.
  void infer(int n);
  // Every use of `from` (node inputs and kept tensors) now reads `to`.
  void replace_uses(Output from, Output to);
  // Kept tensors that are `from` are now `to` (node inputs unchanged).
  void replace_kept(Output from, Output to);
  // Consumers of o: (node, input index) pairs of live nodes.
  std::vector<std::pair<int, int>> consumers(Output o) const;
  // Whether o has exactly one use: one input of one live node, not kept.
  bool single_use(Output o) const;
  bool kept(Output o) const;
  const TensorSpec& spec(Output o) const { return nodes[o.node].outputs[o.index]; }
  // The constant value of o (a Const node's output), or an undefined tensor.
  const Tensor& constant(Output o) const;
  // A new Const node holding `value`, placed before `before`.
  Output add_constant(const Tensor& value, const std::string& name, int before);
  // Marks nodes no kept tensor needs as dead.
  void drop_unused();
  // A name no node uses: base, base_1, ...
  std::string unique_name(const std::string& base) const;

  // The graph of the live nodes in position order, and each kept source
  // tensor's tensor in it.
  Graph emit(std::map<Output, Output>* kept_tensors) const;

  const Graph& source() const { return source_; }

 private:
  const Graph& source_;
  std::map<Output, Output> kept_;  // source tensor -> current Ir tensor
};

}  // namespace hub::optimize
