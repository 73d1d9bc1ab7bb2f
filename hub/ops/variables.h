// VariableStore: the values of a graph's variables, by name.
//
// A graph's Variable nodes declare name, dtype, shape, trainability and an
// initializer; the store holds the tensors. Sessions read variables from it,
// optimizers update them in place, modules export and load them. Not
// thread-safe: one writer at a time.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "hub/ops/scope.h"
#include "hub/tensor/tensor.h"

namespace hub {

class VariableStore {
 public:
  bool contains(const std::string& name) const { return vars_.count(name) != 0; }
  // Throws NotFound naming the variable.
  Tensor& at(const std::string& name);
  const Tensor& at(const std::string& name) const;
  // Adds or replaces a variable's tensor (taken as is, shared).
  void set(const std::string& name, Tensor value);
  // Copies value into the existing variable's storage; throws InvalidArgument
  // naming the variable when dtype or shape differ, FailedPrecondition when
  // either lives on a device (hub::copy_into in hub/backend copies there).
  void assign(const std::string& name, const Tensor& value);
  void erase(const std::string& name) { vars_.erase(name); }
  std::vector<std::string> names() const;
  size_t size() const { return vars_.size(); }
  const std::map<std::string, Tensor>& items() const { return vars_; }

  // Creates every variable of the graph that the store lacks (or all, with
  // overwrite) from its initializer, seeded by the graph seed and the name.
  void initialize(const GraphBuilder& graph, bool overwrite = false);

 private:
  std::map<std::string, Tensor> vars_;
};

// The initial value of a Variable node (initializer attribute), drawn from
// mix(graph seed, the node's seed attribute or the hash of its name).
// Initializers: zeros, ones, constant [value], random_uniform [min,max],
// random_normal [mean,stddev], truncated_normal [mean,stddev], glorot_uniform,
// glorot_normal, variance_scaling [scale] with init_mode fan_in|fan_out|fan_avg
// and init_distribution truncated_normal|untruncated_normal|uniform.
Tensor initial_value(const Node& variable, uint64_t graph_seed);

}  // namespace hub
