// Graph: the one representation of a network. Nodes are appended in
// topological order (a node's inputs are always earlier nodes), each named
// uniquely with '/'-separated scopes, e.g. "MobilenetV1/Conv2d_0/weights".
// Adding a node runs the op's attribute checks and shape function, so a graph
// that was built is well-typed; errors name the node, the op and the shapes.
//
// Graph implements GraphBuilder (hub/ops/scope.h), the interface through
// which op builder and gradient functions add nodes.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "hub/ops/scope.h"
#include "hub/ops/subgraph.h"

namespace hub {

class Graph final : public GraphBuilder {
 public:
  Graph() = default;

  Output add_node(const std::string& op, const std::string& name, std::vector<Output> inputs,
                  const Attrs& attrs = {}) override;
  int num_nodes() const override { return static_cast<int>(nodes_.size()); }
  const Node& node(int id) const override { return nodes_.at(id); }
  using GraphBuilder::node;
  const std::vector<Node>& nodes() const { return nodes_; }
  std::optional<int> find(const std::string& name) const override;
  std::string unique_name(const std::string& base) const override;

  void add_to_collection(const std::string& key, const std::string& node_name) override;
  const std::vector<std::string>& collection(const std::string& key) const override;
  const std::map<std::string, std::vector<std::string>>& collections() const { return collections_; }

  uint64_t seed() const override { return seed_; }
  void set_seed(uint64_t seed) { seed_ = seed; }

 private:
  std::vector<Node> nodes_;
  std::unordered_map<std::string, int> by_name_;
  // Per base name, a suffix n such that base_1 .. base_n are all taken (nodes
  // are never removed), so unique_name does not rescan them: a graph of many
  // same-named nodes is built in linear time.
  mutable std::unordered_map<std::string, int> taken_suffixes_;
  std::map<std::string, std::vector<std::string>> collections_;
  uint64_t seed_ = 0;
};

// The subgraph (control flow's attribute: hub/ops/subgraph.h) of `graph`'s
// nodes, fed through `arguments` (outputs of Placeholder nodes, distinct) and
// returning `results`. Throws InvalidArgument naming an argument that is not.
SubgraphPtr make_subgraph(const Graph& graph, const std::vector<Output>& arguments, const std::vector<Output>& results);
// A Graph of the subgraph's nodes (each validated again as it is added).
Graph subgraph_graph(const Subgraph& subgraph);

}  // namespace hub
