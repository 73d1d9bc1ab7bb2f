#include "hub/ops/scope.h"

#include "hub/core/error.h"

namespace hub {

const TensorSpec& GraphBuilder::spec(Output o) const {
  const Node& n = node(o.node);
  HUB_CHECK(o.index >= 0 && o.index < static_cast<int>(n.outputs.size()));
  return n.outputs[o.index];
}

Output GraphBuilder::tensor(const std::string& name) const {
  std::string base = name;
  int index = 0;
  auto colon = name.rfind(':');
  if (colon != std::string::npos) {
    base = name.substr(0, colon);
    try {
      index = std::stoi(name.substr(colon + 1));
    } catch (...) {
      throw_error(Code::kInvalidArgument, "bad tensor name '" + name + "'");
    }
  }
  auto id = find(base);
  if (!id) throw_error(Code::kNotFound, "no tensor named '" + name + "' in the graph");
  if (index < 0 || index >= static_cast<int>(node(*id).outputs.size()))
    throw_error(Code::kNotFound, "node '" + base + "' has no output " + std::to_string(index));
  return Output{*id, index};
}

std::string GraphBuilder::tensor_name(Output o) const {
  const Node& n = node(o.node);
  return o.index == 0 ? n.name : n.name + ":" + std::to_string(o.index);
}

std::vector<int> GraphBuilder::variables(bool trainable_only) const {
  std::vector<int> out;
  for (int id = 0; id < num_nodes(); ++id) {
    const Node& n = node(id);
    if (n.op == "Variable" && (!trainable_only || n.attrs.get_bool("trainable"))) out.push_back(n.id);
  }
  return out;
}

Scope Scope::sub(const std::string& name) const {
  Scope s = *this;
  s.prefix_ = prefix_.empty() ? name : prefix_ + "/" + name;
  return s;
}

std::string Scope::name(const std::string& base) const {
  return graph_->unique_name(prefix_.empty() ? base : prefix_ + "/" + base);
}

Output Scope::op(const std::string& op, std::vector<Output> inputs, const Attrs& attrs, const std::string& name) const {
  return graph_->add_node(op, this->name(name.empty() ? op : name), std::move(inputs), attrs);
}

std::vector<Output> Scope::op_n(const std::string& op, std::vector<Output> inputs, const Attrs& attrs,
                                const std::string& name) const {
  Output first = this->op(op, std::move(inputs), attrs, name);
  std::vector<Output> outs;
  for (int i = 0; i < static_cast<int>(graph_->node(first).outputs.size()); ++i) outs.push_back(Output{first.node, i});
  return outs;
}

}  // namespace hub
