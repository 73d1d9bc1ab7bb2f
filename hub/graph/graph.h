// Graph: the one representation of a network. Nodes are appended in
// topological order (a node's inputs are always earlier nodes), each named
// uniquely with '/'-separated scopes, e.g. "MobilenetV1/Conv2d_0/weights".
// Adding a node runs the op's attribute checks and shape function, so a graph
// that was built is well-typed; errors name the node, the op and the shapes.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "hub/ops/attr.h"
#include "hub/ops/registry.h"
#include "hub/tensor/tensor.h"

namespace hub {

// A tensor produced in a graph: output `index` of node `node`.
struct Output {
  int node = -1;
  int index = 0;
  bool valid() const { return node >= 0; }
  bool operator==(const Output& o) const { return node == o.node && index == o.index; }
  bool operator<(const Output& o) const { return node != o.node ? node < o.node : index < o.index; }
};

struct Node {
  int id = -1;
  std::string name;
  std::string op;
  std::vector<Output> inputs;
  Attrs attrs;                       // complete: defaults filled in
  std::vector<TensorSpec> outputs;   // inferred dtypes and (partial) shapes
};

// Well-known collection keys.
inline constexpr const char* kUpdateOps = "update_ops";              // run with each train step
inline constexpr const char* kRegularizationLosses = "regularization_losses";

class Graph {
 public:
  Graph() = default;

  // Adds a node; returns its output 0. Throws on a duplicate name
  // (AlreadyExists), an unknown op (NotFound) or a failed check (InvalidArgument).
  Output add_node(const std::string& op, const std::string& name, std::vector<Output> inputs,
                  const Attrs& attrs = {});
  // Adds a node from a serialized description, inputs by name (module loading).
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  const Node& node(int id) const { return nodes_.at(id); }
  const Node& node(Output o) const { return nodes_.at(o.node); }
  const std::vector<Node>& nodes() const { return nodes_; }
  const TensorSpec& spec(Output o) const;
  std::optional<int> find(const std::string& name) const;
  // "name" or "name:1"; throws NotFound naming the tensor.
  Output tensor(const std::string& name) const;
  // "name" for output 0, else "name:i".
  std::string tensor_name(Output o) const;
  // base if free, else base_1, base_2, ...
  std::string unique_name(const std::string& base) const;

  void add_to_collection(const std::string& key, const std::string& node_name);
  const std::vector<std::string>& collection(const std::string& key) const;
  const std::map<std::string, std::vector<std::string>>& collections() const { return collections_; }

  // Variable nodes (op "Variable"), in creation order.
  std::vector<int> variables(bool trainable_only = false) const;

  // Graph-level random seed, combined with each random op's own seed.
  uint64_t seed() const { return seed_; }
  void set_seed(uint64_t seed) { seed_ = seed; }

 private:
  std::vector<Node> nodes_;
  std::unordered_map<std::string, int> by_name_;
  std::map<std::string, std::vector<std::string>> collections_;
  uint64_t seed_ = 0;
};

// A name scope onto a graph. Cheap to copy. Nodes created through a scope are
// named "<prefix>/<name>".
class Scope {
 public:
  explicit Scope(Graph& graph) : graph_(&graph) {}
  Scope sub(const std::string& name) const;
  Graph& graph() const { return *graph_; }
  const std::string& prefix() const { return prefix_; }
  // Full, unique name for a node called `base` in this scope.
  std::string name(const std::string& base) const;
  // Adds a node named `name` (default: the op name), made unique.
  Output op(const std::string& op, std::vector<Output> inputs, const Attrs& attrs = {},
            const std::string& name = "") const;
  // Multi-output variant: all outputs of the new node.
  std::vector<Output> op_n(const std::string& op, std::vector<Output> inputs,
                           const Attrs& attrs = {}, const std::string& name = "") const;

 private:
  Graph* graph_;
  std::string prefix_;
};

}  // namespace hub
