#include "hub/ops/attr.h"

#include <sstream>

#include "hub/ops/subgraph.h"

namespace hub {

std::string_view attr_type_name(AttrType type) {
  switch (type) {
    case AttrType::kInt:
      return "int";
    case AttrType::kFloat:
      return "float";
    case AttrType::kBool:
      return "bool";
    case AttrType::kString:
      return "string";
    case AttrType::kInts:
      return "list(int)";
    case AttrType::kFloats:
      return "list(float)";
    case AttrType::kStrings:
      return "list(string)";
    case AttrType::kDType:
      return "dtype";
    case AttrType::kShape:
      return "shape";
    case AttrType::kTensor:
      return "tensor";
    case AttrType::kGraph:
      return "graph";
  }
  return "?";
}

AttrType attr_type(const AttrValue& value) { return static_cast<AttrType>(value.index()); }

std::string attr_to_string(const AttrValue& value) {
  std::ostringstream os;
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>)
          os << v;
        else if constexpr (std::is_same_v<T, bool>)
          os << (v ? "true" : "false");
        else if constexpr (std::is_same_v<T, std::string>)
          os << '"' << v << '"';
        else if constexpr (std::is_same_v<T, DType>)
          os << dtype_name(v);
        else if constexpr (std::is_same_v<T, Shape>)
          os << v.to_string();
        else if constexpr (std::is_same_v<T, Tensor>)
          os << "tensor " << v.spec_string();
        else if constexpr (std::is_same_v<T, SubgraphPtr>)
          os << "graph of " << (v ? v->nodes.size() : 0) << " nodes";
        else {
          os << "[";
          for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
          os << "]";
        }
      },
      value);
  return os.str();
}

Attrs& Attrs::set(const std::string& name, AttrValue value) {
  values_[name] = std::move(value);
  return *this;
}

const AttrValue& Attrs::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw_error(Code::kInvalidArgument, "missing attribute '" + name + "'");
  return it->second;
}

const Subgraph& Attrs::get_graph(const std::string& name) const {
  const SubgraphPtr& g = as<SubgraphPtr>(name);
  if (!g) throw_error(Code::kInvalidArgument, "attribute '" + name + "' holds no graph");
  return *g;
}

template <class T>
const T& Attrs::as(const std::string& name) const {
  const AttrValue& v = get(name);
  if (const T* p = std::get_if<T>(&v)) return *p;
  throw_error(Code::kInvalidArgument, "attribute '" + name + "' has type " + std::string(attr_type_name(attr_type(v))) +
                                          ", expected " + std::string(attr_type_name(attr_type(AttrValue(T{})))));
}

template const int64_t& Attrs::as<int64_t>(const std::string&) const;
template const double& Attrs::as<double>(const std::string&) const;
template const bool& Attrs::as<bool>(const std::string&) const;
template const std::string& Attrs::as<std::string>(const std::string&) const;
template const std::vector<int64_t>& Attrs::as<std::vector<int64_t>>(const std::string&) const;
template const std::vector<double>& Attrs::as<std::vector<double>>(const std::string&) const;
template const std::vector<std::string>& Attrs::as<std::vector<std::string>>(const std::string&) const;
template const DType& Attrs::as<DType>(const std::string&) const;
template const Shape& Attrs::as<Shape>(const std::string&) const;
template const Tensor& Attrs::as<Tensor>(const std::string&) const;

}  // namespace hub
