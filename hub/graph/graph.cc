#include "hub/graph/graph.h"

#include <algorithm>

#include "hub/ops/registry.h"

namespace hub {

Output Graph::add_node(const std::string& op, const std::string& name, std::vector<Output> inputs, const Attrs& attrs) {
  auto where = [&] { return "node '" + name + "' (" + op + ")"; };  // for errors only
  if (name.empty()) throw_error(Code::kInvalidArgument, "node of op " + op + " has an empty name");
  if (by_name_.count(name)) throw_error(Code::kAlreadyExists, "duplicate node name '" + name + "'");
  const OpDef& def = OpRegistry::global().find(op);
  int n = static_cast<int>(inputs.size());
  if (n < def.min_inputs || (def.max_inputs >= 0 && n > def.max_inputs))
    throw_error(Code::kInvalidArgument,
                where() + ": got " + std::to_string(n) + " inputs, expected " +
                    (def.min_inputs == def.max_inputs ? std::to_string(def.min_inputs)
                     : def.max_inputs < 0             ? "at least " + std::to_string(def.min_inputs)
                                          : std::to_string(def.min_inputs) + ".." + std::to_string(def.max_inputs)));
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
  HUB_CHECK(def.num_outputs < 0 ? !node.outputs.empty() : static_cast<int>(node.outputs.size()) == def.num_outputs,
            "op " + op);
  by_name_[name] = node.id;
  nodes_.push_back(std::move(node));
  return Output{nodes_.back().id, 0};
}

std::optional<int> Graph::find(const std::string& name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

std::string Graph::unique_name(const std::string& base) const {
  if (!by_name_.count(base)) return base;
  int& taken = taken_suffixes_[base];
  for (int i = taken + 1;; ++i) {
    std::string candidate = base + "_" + std::to_string(i);
    if (!by_name_.count(candidate)) return candidate;
    taken = i;
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

SubgraphPtr make_subgraph(const Graph& graph, const std::vector<Output>& arguments,
                          const std::vector<Output>& results) {
  auto sub = std::make_shared<Subgraph>();
  sub->nodes = graph.nodes();
  for (size_t a = 0; a < arguments.size(); ++a) {
    const Output arg = arguments[a];
    if (arg.node < 0 || arg.node >= graph.num_nodes() || graph.node(arg.node).op != "Placeholder" ||
        std::find(arguments.begin(), arguments.begin() + static_cast<std::ptrdiff_t>(a), arg) !=
            arguments.begin() + static_cast<std::ptrdiff_t>(a))
      throw_error(Code::kInvalidArgument,
                  "subgraph argument " + std::to_string(a) + " is not a distinct Placeholder of the graph");
  }
  for (Output r : results)
    if (r.node < 0 || r.node >= graph.num_nodes() || r.index < 0 ||
        r.index >= static_cast<int>(graph.node(r.node).outputs.size()))
      throw_error(Code::kInvalidArgument, "a subgraph result is not a tensor of the graph");
  sub->arguments = arguments;
  sub->results = results;
  return sub;
}

Graph subgraph_graph(const Subgraph& subgraph) {
  Graph g;
  for (const Node& n : subgraph.nodes) g.add_node(n.op, n.name, n.inputs, n.attrs);
  return g;
}

}  // namespace hub
