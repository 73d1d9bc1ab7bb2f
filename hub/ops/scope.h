// The graph-building interface that op definitions use, and name scopes.
//
// Op files (hub/ops/<op>.cc) add nodes in two places: their builder
// functions (ops::conv2d(scope, ...)) and their gradient functions. Both
// reach the graph only through GraphBuilder, which hub::Graph
// (hub/graph/graph.h) implements, so the op layer never depends on the graph
// layer above it (the layer order is checked in CI: .ci/check_layers.py).
//
// GraphBuilder's contract: nodes are appended in topological order (inputs
// are earlier nodes) under unique names; add_node validates the node (op,
// arity, attributes, shape function) and throws hub::Error naming the node
// when it is invalid, leaving the graph unchanged.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hub/ops/attr.h"
#include "hub/ops/node.h"

namespace hub {

// Well-known collection keys.
inline constexpr const char* kUpdateOps = "update_ops";  // run with each train step
inline constexpr const char* kRegularizationLosses = "regularization_losses";

class GraphBuilder {
 public:
  virtual ~GraphBuilder() = default;

  // Adds a node; returns its output 0. Throws on a duplicate name
  // (AlreadyExists), an unknown op (NotFound) or a failed check (InvalidArgument).
  virtual Output add_node(const std::string& op, const std::string& name, std::vector<Output> inputs,
                          const Attrs& attrs = {}) = 0;
  virtual int num_nodes() const = 0;
  // Throws std::out_of_range for an id outside [0, num_nodes()).
  virtual const Node& node(int id) const = 0;
  virtual std::optional<int> find(const std::string& name) const = 0;
  // base if free, else base_1, base_2, ...
  virtual std::string unique_name(const std::string& base) const = 0;
  virtual void add_to_collection(const std::string& key, const std::string& node_name) = 0;
  virtual const std::vector<std::string>& collection(const std::string& key) const = 0;
  // Graph-level random seed, combined with each random op's own seed.
  virtual uint64_t seed() const = 0;

  const Node& node(Output o) const { return node(o.node); }
  const TensorSpec& spec(Output o) const;
  // "name" or "name:1"; throws NotFound naming the tensor.
  Output tensor(const std::string& name) const;
  // "name" for output 0, else "name:i".
  std::string tensor_name(Output o) const;
  // Variable nodes (op "Variable"), in creation order.
  std::vector<int> variables(bool trainable_only = false) const;
};

// A name scope onto a graph. Cheap to copy. Nodes created through a scope are
// named "<prefix>/<name>".
class Scope {
 public:
  explicit Scope(GraphBuilder& graph) : graph_(&graph) {}
  Scope sub(const std::string& name) const;
  GraphBuilder& graph() const { return *graph_; }
  const std::string& prefix() const { return prefix_; }
  // Full, unique name for a node called `base` in this scope.
  std::string name(const std::string& base) const;
  // Adds a node named `name` (default: the op name), made unique.
  Output op(const std::string& op, std::vector<Output> inputs, const Attrs& attrs = {},
            const std::string& name = "") const;
  // Multi-output variant: all outputs of the new node.
  std::vector<Output> op_n(const std::string& op, std::vector<Output> inputs, const Attrs& attrs = {},
                           const std::string& name = "") const;

 private:
  GraphBuilder* graph_;
  std::string prefix_;
};

}  // namespace hub
