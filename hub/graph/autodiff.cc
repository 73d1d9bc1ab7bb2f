#include "hub/graph/autodiff.h"

#include <map>

#include "hub/ops/elementwise.h"
#include "hub/ops/registry.h"
#include "hub/ops/state.h"
#include "hub/ops/subgraph.h"

namespace hub {

namespace {

// Subgraph gradients for ops holding subgraphs (If): the subgraph's graph
// again, gradient placeholders for its results, and autodiff over it.
class Differentiator final : public SubgraphDifferentiator {
 public:
  SubgraphPtr gradient(const Subgraph& sub, const std::vector<bool>& has_grad,
                       const std::vector<int>& wrt) const override {
    // A trainable variable read inside would get no gradient (only arguments do): refused, not left untrained.
    for (const Node& n : sub.nodes)
      if (n.op == "Variable" && (!n.attrs.has("trainable") || n.attrs.get_bool("trainable")))
        throw_error(Code::kInvalidArgument, "gradients: trainable variable '" + n.name +
                                                "' is read inside a subgraph, which passes gradients only to its "
                                                "arguments");
    Graph g = subgraph_graph(sub);
    const Scope s(g);
    std::vector<Output> arguments = sub.arguments, xs;
    for (int a : wrt) xs.push_back(sub.arguments[static_cast<size_t>(a)]);
    std::vector<std::vector<Output>> parts(wrt.size());
    for (size_t r = 0; r < sub.results.size(); ++r) {
      if (!has_grad[r]) continue;
      const TensorSpec& spec = sub.spec(sub.results[r]);
      const Output dy = ops::placeholder(s, spec.dtype, spec.shape, "result" + std::to_string(r) + "_grad");
      arguments.push_back(dy);
      const std::vector<Output> d = gradients(s.sub("result" + std::to_string(r)), sub.results[r], xs, dy);
      for (size_t j = 0; j < xs.size(); ++j)
        if (d[j].valid()) parts[j].push_back(d[j]);
    }
    std::vector<Output> results;
    for (size_t j = 0; j < xs.size(); ++j)
      results.push_back(parts[j].empty()       ? ops::zeros_like(s, xs[j], "no_grad" + std::to_string(j))
                        : parts[j].size() == 1 ? parts[j][0]
                                               : ops::add_n(s, parts[j]));
    return make_subgraph(g, arguments, results);
  }
};

}  // namespace

std::vector<Output> gradients(const Scope& scope, Output y, const std::vector<Output>& xs, Output grad_y) {
  GraphBuilder& g = scope.graph();
  int n = y.node + 1;
  // Nodes reachable forward from any x, and backward from y.
  std::vector<char> from_x(n, 0), to_y(n, 0);
  for (Output x : xs)
    if (x.node < n) from_x[x.node] = 1;
  for (int id = 0; id < n; ++id) {
    // StopGradient cuts the path: what it outputs does not depend on x for
    // differentiation (TensorFlow's stop_gradient).
    if (from_x[id] || g.node(id).op == "StopGradient") continue;
    for (const Output& in : g.node(id).inputs)
      if (from_x[in.node]) {
        from_x[id] = 1;
        break;
      }
  }
  to_y[y.node] = 1;
  for (int id = n - 1; id >= 0; --id) {
    if (!to_y[id]) continue;
    for (const Output& in : g.node(id).inputs) to_y[in.node] = 1;
  }
  Scope gs = scope.sub("gradients");
  if (!grad_y.valid()) {
    const TensorSpec& spec = g.spec(y);
    if (spec.dtype != DType::kFloat32 || !spec.shape.is_fully_defined())
      throw_error(Code::kInvalidArgument, "gradients: y '" + g.tensor_name(y) + "' is " + spec.to_string() +
                                              "; need a float32 tensor of known shape");
    Tensor ones(DType::kFloat32, spec.shape);
    ones.fill(1.0);
    grad_y = ops::constant(gs, ones, "grad_ys");
  }
  std::map<Output, std::vector<Output>> pending;
  pending[y].push_back(grad_y);
  auto total = [&](Output o) -> Output {
    auto it = pending.find(o);
    if (it == pending.end() || it->second.empty()) return {};
    if (it->second.size() == 1) return it->second[0];
    Output sum = ops::add_n(gs, it->second);
    it->second = {sum};
    return sum;
  };
  for (int id = n - 1; id >= 0; --id) {
    if (!from_x[id] || !to_y[id]) continue;
    // A copy: summing an output's gradients (total) and the grad function
    // add nodes, which may reallocate the node list.
    const Node node = g.node(id);
    std::vector<Output> outs, grads;
    bool any = false;
    for (int i = 0; i < static_cast<int>(node.outputs.size()); ++i) {
      outs.push_back({id, i});
      grads.push_back(total({id, i}));
      any = any || grads.back().valid();
    }
    if (!any || node.inputs.empty()) continue;
    bool needs_input_grad = false;
    for (const Output& in : node.inputs)
      if (from_x[in.node] && is_floating(g.spec(in).dtype)) needs_input_grad = true;
    if (!needs_input_grad) continue;
    const OpDef& def = OpRegistry::global().find(node.op);
    if (!def.grad)
      throw_error(Code::kInvalidArgument,
                  "gradients: op " + node.op + " (node '" + node.name + "') has no gradient, but lies between y and x");
    std::vector<Output> inputs = node.inputs;
    static const Differentiator differentiator;
    GradContext ctx{gs.sub(node.name), node, inputs, outs, grads, &differentiator};
    std::vector<Output> in_grads = def.grad(ctx);
    HUB_CHECK(in_grads.size() == inputs.size(),
              "gradient of " + node.op + " returned " + std::to_string(in_grads.size()) + " grads");
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!in_grads[i].valid() || !from_x[inputs[i].node]) continue;
      if (!is_floating(g.spec(inputs[i]).dtype)) continue;
      pending[inputs[i]].push_back(in_grads[i]);
    }
  }
  std::vector<Output> result;
  for (Output x : xs) result.push_back(x.node < n ? total(x) : Output{});
  return result;
}

}  // namespace hub
