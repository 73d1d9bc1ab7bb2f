#include "hub/graph/graph.h"

namespace hub {

Output Graph::add_node(const std::string& op, const std::string& name, std::vector<Output> inputs,
                       const Attrs& attrs) {
  auto where = [&] { return "node '" + name + "' (" + op + ")"; };  // for errors only
  if (name.empty()) throw_error(Code::kInvalidArgument, "node of op " + op + " has an empty name");
  if (by_name_.count(name))
    throw_error(Code::kAlreadyExists, "duplicate node name '" + name + "'");
  const OpDef& def = OpRegistry::global().find(op);
  int n = static_cast<int>(inputs.size());
  if (n < def.min_inputs || (def.max_inputs >= 0 && n > def.max_inputs))
    throw_error(Code::kInvalidArgument,
                where() + ": got " + std::to_string(n) + " inputs, expected " +
                    (def.min_inputs == def.max_inputs ? std::to_string(def.min_inputs)
                     : def.max_inputs < 0 ? "at least " + std::to_string(def.min_inputs)
                                          : std::to_string(def.min_inputs) + ".." +
                                                std::to_string(def.max_inputs)));
  std::vector<TensorSpec> in_specs;
  for (int i = 0; i < n; ++i) {
    const Output& in = inputs[i];
    if (in.node < 0 || in.node >= num_nodes() || in.index < 0 ||
        in.index >= static_cast<int>(nodes_[in.node].outputs.size()))
      throw_error(Code::kInvalidArgument, where() + ": input " + std::to_string(i) + " is not a tensor of this graph");
    in_specs.push_back(nodes_[in.node].outputs[in.index]);
  }
  Node node;
  node.id = num_nodes();
  node.name = name;
  node.op = op;
  node.inputs = std::move(inputs);
  node.attrs = complete_attrs(def, name, attrs);
  InferContext ctx(node.name, node.op, in_specs, node.attrs);
  node.outputs = def.shape_fn(ctx);
  HUB_CHECK(static_cast<int>(node.outputs.size()) == def.num_outputs, "op " + op);
  by_name_[name] = node.id;
  nodes_.push_back(std::move(node));
  return Output{nodes_.back().id, 0};
}

const TensorSpec& Graph::spec(Output o) const {
  const Node& n = nodes_.at(o.node);
  HUB_CHECK(o.index >= 0 && o.index < static_cast<int>(n.outputs.size()));
  return n.outputs[o.index];
}

std::optional<int> Graph::find(const std::string& name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

Output Graph::tensor(const std::string& name) const {
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
  if (index < 0 || index >= static_cast<int>(nodes_[*id].outputs.size()))
    throw_error(Code::kNotFound, "node '" + base + "' has no output " + std::to_string(index));
  return Output{*id, index};
}

std::string Graph::tensor_name(Output o) const {
  const Node& n = nodes_.at(o.node);
  return o.index == 0 ? n.name : n.name + ":" + std::to_string(o.index);
}

std::string Graph::unique_name(const std::string& base) const {
  if (!by_name_.count(base)) return base;
  for (int i = 1;; ++i) {
    std::string candidate = base + "_" + std::to_string(i);
    if (!by_name_.count(candidate)) return candidate;
  }
}

void Graph::add_to_collection(const std::string& key, const std::string& node_name) {
  collections_[key].push_back(node_name);
}

const std::vector<std::string>& Graph::collection(const std::string& key) const {
  static const std::vector<std::string> kEmpty;
  auto it = collections_.find(key);
  return it == collections_.end() ? kEmpty : it->second;
}

std::vector<int> Graph::variables(bool trainable_only) const {
  std::vector<int> out;
  for (const Node& n : nodes_)
    if (n.op == "Variable" && (!trainable_only || n.attrs.get_bool("trainable"))) out.push_back(n.id);
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

Output Scope::op(const std::string& op, std::vector<Output> inputs, const Attrs& attrs,
                 const std::string& name) const {
  return graph_->add_node(op, this->name(name.empty() ? op : name), std::move(inputs), attrs);
}

std::vector<Output> Scope::op_n(const std::string& op, std::vector<Output> inputs,
                                const Attrs& attrs, const std::string& name) const {
  Output first = this->op(op, std::move(inputs), attrs, name);
  std::vector<Output> outs;
  for (int i = 0; i < static_cast<int>(graph_->node(first).outputs.size()); ++i)
    outs.push_back(Output{first.node, i});
  return outs;
}

}  // namespace hub
