#include "modules/slim/quantize.h"

#include <map>
#include <numeric>
#include <set>
#include <utility>

#include "hub/backend/backend.h"
#include "hub/core/error.h"
#include "hub/ops/array.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/math.h"
#include "hub/ops/quantize.h"
#include "hub/ops/reduction.h"
#include "hub/ops/state.h"

namespace hub::slim {

namespace {

// Every axis of x, for a reduction to a scalar.
std::vector<int64_t> all_axes(const Scope& s, Output x) {
  std::vector<int64_t> axes(static_cast<size_t>(s.graph().spec(x).shape.rank()));
  std::iota(axes.begin(), axes.end(), int64_t{0});
  return axes;
}

std::string leaf_name(const std::string& name) { return name.substr(name.rfind('/') + 1); }

constexpr const char* kMinSuffix = "/act_quant/min";
constexpr const char* kMaxSuffix = "/act_quant/max";

}  // namespace

Output quantize_weights(const Scope& layer, Output w, int64_t out_channels, const QuantizeOptions& o) {
  if (o.mode != QuantizeMode::kFakeQuant) return w;
  Scope q = layer.sub(leaf_name(layer.graph().node(w).name) + "_quant");
  const Shape shape = q.graph().spec(w).shape;
  Output rows = ops::reshape(q, w, {-1, out_channels}, "PerChannel");
  Output m = ops::stop_gradient(q, ops::max(q, ops::abs(q, rows), {0}), "AbsMax");
  Output wq = ops::fake_quant_with_min_max_vars_per_channel(q, rows, ops::neg(q, m), m, 8, true);
  return ops::reshape(q, wq, shape.dims(), "Weights");
}

Output quantize_activation(const Scope& layer, Output x, const QuantizeOptions& o) {
  if (o.mode == QuantizeMode::kOff) return x;
  Scope q = layer.sub("act_quant");
  ops::VariableOptions range;
  range.trainable = false;  // zeros: a fresh range, see initialize_activation_ranges
  Output min = ops::variable(q, "min", {}, range);
  Output max = ops::variable(q, "max", {}, range);
  // Before the updates: the executor runs nodes in id order, so this reads
  // the ranges as they were before this step's update.
  Output y = o.mode == QuantizeMode::kFakeQuant ? ops::fake_quant_with_min_max_vars(q, x, min, max) : x;
  if (o.is_training) {
    const std::vector<int64_t> axes = all_axes(q, x);
    Output zero = ops::scalar(q, 0.0f, "zero");
    Output batch_min = ops::minimum(q, ops::min(q, x, axes, false, "BatchMin"), zero);
    Output batch_max = ops::maximum(q, ops::max(q, x, axes, false, "BatchMax"), zero);
    for (Output update : {ops::assign_moving_average(q, min, batch_min, o.ema_decay, "AssignMinEma"),
                          ops::assign_moving_average(q, max, batch_max, o.ema_decay, "AssignMaxEma")})
      q.graph().add_to_collection(kActivationRangeUpdates, q.graph().node(update).name);
  }
  return y;
}

bool is_activation_range(const std::string& variable) {
  return variable.ends_with(kMinSuffix) || variable.ends_with(kMaxSuffix);
}

int count_activation_ranges(const GraphBuilder& graph) {
  int n = 0;
  for (int id : graph.variables()) n += graph.node(id).name.ends_with(kMinSuffix);
  return n;
}

int initialize_activation_ranges(Session& session, const GraphBuilder& graph, VariableStore& variables,
                                 const FeedList& feeds) {
  // Layer scope -> its range: (variable, batch value) for min and max.
  std::map<std::string, std::vector<std::pair<std::string, Output>>> ranges;
  for (const std::string& name : graph.collection(kActivationRangeUpdates)) {
    const Node& update = graph.node(graph.tensor(name).node);
    const std::string& variable = graph.node(update.inputs.at(0)).name;
    ranges[variable.substr(0, variable.rfind("/act_quant/"))].emplace_back(variable, update.inputs.at(1));
  }
  std::set<std::string> fresh;  // variables of the ranges still to set
  for (const auto& [layer, bounds] : ranges) {
    bool zero = true;
    for (const auto& [variable, batch] : bounds)
      zero = zero && to_host(variables.at(variable)).data<float>()[0] == 0.0f;
    if (zero)
      for (const auto& [variable, batch] : bounds) fresh.insert(variable);
  }
  const int count = static_cast<int>(fresh.size() / 2);
  // A fake quant with a fresh range outputs zeros (TensorFlow's [0, 0] case),
  // so a batch range computed after one is not yet the network's: each pass
  // sets the ranges whose batch values depend on no fresh fake quant.
  while (!fresh.empty()) {
    std::vector<char> tainted(static_cast<size_t>(graph.num_nodes()), 0);
    for (int id = 0; id < graph.num_nodes(); ++id) {
      const Node& n = graph.node(id);
      for (const Output& in : n.inputs) tainted[id] = tainted[id] || tainted[in.node];
      if (n.op == "FakeQuantWithMinMaxVars" && fresh.count(graph.node(n.inputs.at(1)).name)) tainted[id] = 1;
    }
    std::vector<std::string> names;
    std::vector<Output> fetches;
    for (const auto& [layer, bounds] : ranges)
      for (const auto& [variable, batch] : bounds)
        if (fresh.count(variable) && !tainted[batch.node]) {
          names.push_back(variable);
          fetches.push_back(batch);
        }
    HUB_CHECK(!fetches.empty(), "activation ranges depend on each other in a cycle");
    std::vector<Tensor> values = session.run(feeds, fetches);
    for (size_t i = 0; i < names.size(); ++i) {
      copy_into(values[i], variables.at(names[i]));  // wherever the variables live
      fresh.erase(names[i]);
    }
  }
  return count;
}

}  // namespace hub::slim
