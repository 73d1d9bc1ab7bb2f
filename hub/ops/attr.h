// Typed op attributes (the attribute map of a graph node).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "hub/tensor/tensor.h"

namespace hub {

// A graph held by an attribute: a control-flow op's branch or loop body
// (hub/ops/subgraph.h).
struct Subgraph;
using SubgraphPtr = std::shared_ptr<const Subgraph>;

// Order is part of the module format mapping (signatures/module.proto AttrValue).
enum class AttrType { kInt, kFloat, kBool, kString, kInts, kFloats, kStrings, kDType, kShape, kTensor, kGraph };
std::string_view attr_type_name(AttrType type);

using AttrValue = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>, std::vector<double>,
                               std::vector<std::string>, DType, Shape, Tensor, SubgraphPtr>;
AttrType attr_type(const AttrValue& value);
std::string attr_to_string(const AttrValue& value);

class Attrs {
 public:
  Attrs& set(const std::string& name, AttrValue value);
  Attrs& set(const std::string& name, int value) { return set(name, AttrValue(int64_t{value})); }
  Attrs& set(const std::string& name, float value) { return set(name, AttrValue(double{value})); }
  Attrs& set(const std::string& name, const char* value) { return set(name, AttrValue(std::string(value))); }
  Attrs& set(const std::string& name, int64_t value) { return set(name, AttrValue(value)); }
  Attrs& set(const std::string& name, double value) { return set(name, AttrValue(value)); }
  Attrs& set(const std::string& name, bool value) { return set(name, AttrValue(value)); }
  Attrs& set(const std::string& name, std::string value) { return set(name, AttrValue(std::move(value))); }
  Attrs& set(const std::string& name, std::vector<int64_t> value) { return set(name, AttrValue(std::move(value))); }
  Attrs& set(const std::string& name, std::vector<double> value) { return set(name, AttrValue(std::move(value))); }
  Attrs& set(const std::string& name, std::vector<std::string> value) { return set(name, AttrValue(std::move(value))); }
  Attrs& set(const std::string& name, DType value) { return set(name, AttrValue(value)); }
  Attrs& set(const std::string& name, Shape value) { return set(name, AttrValue(std::move(value))); }
  Attrs& set(const std::string& name, Tensor value) { return set(name, AttrValue(std::move(value))); }
  Attrs& set(const std::string& name, SubgraphPtr value) { return set(name, AttrValue(std::move(value))); }

  bool has(const std::string& name) const { return values_.count(name) != 0; }
  // Throws InvalidArgument naming the attribute when missing or of another type.
  const AttrValue& get(const std::string& name) const;
  int64_t get_int(const std::string& name) const { return as<int64_t>(name); }
  double get_float(const std::string& name) const { return as<double>(name); }
  bool get_bool(const std::string& name) const { return as<bool>(name); }
  const std::string& get_string(const std::string& name) const { return as<std::string>(name); }
  const std::vector<int64_t>& get_ints(const std::string& name) const { return as<std::vector<int64_t>>(name); }
  const std::vector<double>& get_floats(const std::string& name) const { return as<std::vector<double>>(name); }
  const std::vector<std::string>& get_strings(const std::string& name) const {
    return as<std::vector<std::string>>(name);
  }
  DType get_dtype(const std::string& name) const { return as<DType>(name); }
  const Shape& get_shape(const std::string& name) const { return as<Shape>(name); }
  const Tensor& get_tensor(const std::string& name) const { return as<Tensor>(name); }
  const Subgraph& get_graph(const std::string& name) const;

  const std::map<std::string, AttrValue>& items() const { return values_; }
  bool empty() const { return values_.empty(); }

 private:
  template <class T>
  const T& as(const std::string& name) const;
  std::map<std::string, AttrValue> values_;
};

}  // namespace hub
