#include "hub/graph/optimize/ir.h"

#include <algorithm>
#include <numeric>

#include "hub/ops/registry.h"

namespace hub::optimize {

Ir::Ir(const Graph& graph, const std::vector<Output>& keep) : source_(graph) {
  nodes.reserve(graph.nodes().size());
  for (const Node& n : graph.nodes()) {
    INode i;
    i.op = n.op;
    i.name = n.name;
    i.inputs = n.inputs;
    i.attrs = n.attrs;
    i.outputs = n.outputs;
    i.position = n.id;
    nodes.push_back(std::move(i));
  }
  for (Output o : keep) kept_[o] = o;
}

void Ir::infer(int n) {
  INode& node = nodes[n];
  std::vector<TensorSpec> in;
  for (Output o : node.inputs) in.push_back(spec(o));
  const OpDef& def = OpRegistry::global().find(node.op);
  node.attrs = complete_attrs(def, node.name, node.attrs);
  InferContext ctx(node.name, node.op, in, node.attrs);
  node.outputs = def.shape_fn(ctx);
}

int Ir::add(INode node, int before) {
  // Halfway between `before` and the node now just ahead of it.
  const double p = nodes[before].position;
  double q = p - 1;
  for (const INode& n : nodes)
    if (n.position < p) q = std::max(q, n.position);
  node.position = (q + p) / 2;
  nodes.push_back(std::move(node));
  int id = static_cast<int>(nodes.size()) - 1;
  infer(id);
  return id;
}

void Ir::replace_uses(Output from, Output to) {
  for (INode& n : nodes)
    for (Output& in : n.inputs)
      if (in == from) in = to;
  for (auto& [src, cur] : kept_)
    if (cur == from) cur = to;
}

void Ir::replace_kept(Output from, Output to) {
  for (auto& [src, cur] : kept_)
    if (cur == from) cur = to;
}

std::vector<std::pair<int, int>> Ir::consumers(Output o) const {
  std::vector<std::pair<int, int>> out;
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (nodes[n].dead) continue;
    for (size_t i = 0; i < nodes[n].inputs.size(); ++i)
      if (nodes[n].inputs[i] == o) out.emplace_back(static_cast<int>(n), static_cast<int>(i));
  }
  return out;
}

bool Ir::kept(Output o) const {
  for (const auto& [src, cur] : kept_)
    if (cur == o) return true;
  return false;
}

bool Ir::single_use(Output o) const { return !kept(o) && consumers(o).size() == 1; }

const Tensor& Ir::constant(Output o) const {
  static const Tensor kNone;
  const INode& n = nodes[o.node];
  return n.op == "Const" && !n.dead ? n.attrs.get_tensor("value") : kNone;
}

std::string Ir::unique_name(const std::string& base) const {
  auto used = [&](const std::string& name) {
    return std::any_of(nodes.begin(), nodes.end(), [&](const INode& n) { return n.name == name; });
  };
  if (!used(base)) return base;
  for (int i = 1;; ++i)
    if (!used(base + "_" + std::to_string(i))) return base + "_" + std::to_string(i);
}

Output Ir::add_constant(const Tensor& value, const std::string& name, int before) {
  INode c;
  c.op = "Const";
  c.name = unique_name(name);
  c.attrs.set("value", value);
  return Output{add(std::move(c), before), 0};
}

void Ir::drop_unused() {
  std::vector<char> needed(nodes.size(), 0);
  std::vector<int> stack;
  for (const auto& [src, cur] : kept_) stack.push_back(cur.node);
  while (!stack.empty()) {
    int n = stack.back();
    stack.pop_back();
    if (needed[n]) continue;
    needed[n] = 1;
    for (Output in : nodes[n].inputs) stack.push_back(in.node);
  }
  for (size_t n = 0; n < nodes.size(); ++n)
    if (!needed[n]) nodes[n].dead = true;
}

Graph Ir::emit(std::map<Output, Output>* kept_tensors) const {
  std::vector<int> order;
  for (size_t n = 0; n < nodes.size(); ++n)
    if (!nodes[n].dead) order.push_back(static_cast<int>(n));
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return nodes[a].position < nodes[b].position; });
  Graph g;
  g.set_seed(source_.seed());
  std::vector<int> new_id(nodes.size(), -1);
  for (int n : order) {
    const INode& node = nodes[n];
    std::vector<Output> inputs;
    for (Output in : node.inputs) {
      HUB_CHECK(new_id[in.node] >= 0,
                "optimiser: node " + node.name + " placed before its input " + nodes[in.node].name);
      inputs.push_back(Output{new_id[in.node], in.index});
    }
    new_id[n] = g.add_node(node.op, node.name, std::move(inputs), node.attrs).node;
  }
  kept_tensors->clear();
  for (const auto& [src, cur] : kept_) (*kept_tensors)[src] = Output{new_id[cur.node], cur.index};
  return g;
}

}  // namespace hub::optimize
