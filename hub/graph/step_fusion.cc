#include "hub/graph/step_fusion.h"

#include <string>
#include <utility>

namespace hub {

StepFusion fuse_steps(const Graph& graph, const std::vector<char>& runs, const std::vector<Output>& fetches) {
  StepFusion out;
  const int n = static_cast<int>(runs.size());
  const std::set<Output> fetched(fetches.begin(), fetches.end());
  std::map<Output, std::vector<std::pair<int, int>>> consumers;  // tensor -> (node, input index)
  for (int id = 0; id < n; ++id)
    if (runs[id]) {
      const Node& node = graph.node(id);
      for (size_t i = 0; i < node.inputs.size(); ++i) consumers[node.inputs[i]].emplace_back(id, static_cast<int>(i));
    }
  auto only_consumer = [&](Output t, int node, int input) {
    const auto it = consumers.find(t);
    return !fetched.count(t) && it != consumers.end() && it->second.size() == 1 &&
           it->second[0] == std::make_pair(node, input);
  };
  std::map<int, std::vector<Output>> rewired;  // activation gradients now taking the activation's output

  for (int id = 0; id < n; ++id) {
    if (!runs[id] || graph.node(id).op != "FusedBatchNorm" || !graph.node(id).attrs.get_bool("is_training")) continue;
    const Output y{id, 0};
    if (fetched.count(y) || !consumers.count(y)) continue;
    int act = -1;
    for (const auto& [c, i] : consumers[y]) {
      const std::string& op = graph.node(c).op;
      if (op == "Relu" || op == "Relu6") act = act < 0 ? c : -2;
    }
    if (act < 0) continue;
    const std::string& act_op = graph.node(act).op;
    bool fusable = true;
    for (const auto& [c, i] : consumers[y])
      if (c != act && !(graph.node(c).op == act_op + "Grad" && i == 1)) fusable = false;
    if (!fusable) continue;
    StepFusion::Replacement r{graph.node(id), {{act, 0}, {id, 1}, {id, 2}, {id, 3}}};
    r.node.op = "_FusedBatchNormActivation";
    r.node.attrs.set("activation", act_op);
    r.node.outputs[0] = graph.node(act).outputs[0];
    out.replaced.emplace(id, std::move(r));
    out.skipped.insert(act);
    for (const auto& [c, i] : consumers[y])
      if (c != act) {
        rewired[c] = graph.node(c).inputs;
        rewired[c][1] = {act, 0};
      }
  }

  for (int id = 0; id < n; ++id) {
    if (!runs[id] || graph.node(id).op != "FusedBatchNormGrad") continue;
    const Node& bn = graph.node(id);
    if (!bn.attrs.get_bool("is_training")) continue;
    const Output dy = bn.inputs[0];
    if (dy.index != 0 || !runs[dy.node] || !only_consumer(dy, id, 0)) continue;
    const std::string& grad_op = graph.node(dy.node).op;
    if (grad_op != "ReluGrad" && grad_op != "Relu6Grad") continue;
    auto w = rewired.find(dy.node);
    const std::vector<Output> g_inputs = w != rewired.end() ? w->second : graph.node(dy.node).inputs;
    StepFusion::Replacement r{bn, {{id, 0}, {id, 1}, {id, 2}}};
    r.node.op = "_FusedBatchNormActivationGrad";
    r.node.attrs.set("activation", grad_op.substr(0, grad_op.size() - 4));
    r.node.inputs = {g_inputs[0], g_inputs[1], bn.inputs[1], bn.inputs[2], bn.inputs[3], bn.inputs[4]};
    out.replaced.emplace(id, std::move(r));
    out.skipped.insert(dy.node);
    if (w != rewired.end()) rewired.erase(w);
  }

  // Rewired gradients that did not fuse into a batch-norm gradient run as
  // themselves on the activation's output.
  for (auto& [id, inputs] : rewired) {
    StepFusion::Replacement r{graph.node(id), {{id, 0}}};
    r.node.inputs = std::move(inputs);
    out.replaced.emplace(id, std::move(r));
  }
  return out;
}

}  // namespace hub
