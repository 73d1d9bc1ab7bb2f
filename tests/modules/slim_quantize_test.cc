// modules/slim/quantize: the fake quantization the slim layers build for
// quantization-aware training. The graph has the shape `hub quantize` reads
// (docs/training.md); before the delay the graph computes the float graph's
// values; activation ranges follow the moving average worked by hand over
// three steps; fake-quantized values lie on the nudged grid; fresh ranges take
// the float network's first-batch values, layer after layer.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "hub/graph/optimizer.h"
#include "hub/graph/session.h"
#include "hub/module/quantize.h"
#include "hub/ops/quantize.h"
#include "hub/ops/reduction.h"
#include "hub/ops/state.h"
#include "modules/slim/layers.h"
#include "modules/slim/quantize.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {

// x [batch, 2] -> fc1 (2 units, linear) -> fc2 (2 units, relu): the layers
// under "net", with quantize mode `mode`.
struct TwoLayers {
  Graph graph;
  Output x, fc1, fc2, loss;
  explicit TwoLayers(slim::QuantizeMode mode, bool training = true) {
    Scope s(graph);
    x = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 2}, "x");
    slim::LayerOptions o;
    o.quantize = mode;
    o.is_training = training;
    o.activation = nullptr;
    fc1 = slim::fully_connected(s.sub("net"), x, 2, "fc1", o);
    o.activation = slim::relu();
    fc2 = slim::fully_connected(s.sub("net"), fc1, 2, "fc2", o);
    loss = ops::sum(s, fc2);
  }
  std::vector<Output> updates() const {
    std::vector<Output> out;
    for (const std::string& name : graph.collection(kUpdateOps)) out.push_back(graph.tensor(name));
    return out;
  }
};

// fc1's weights [[1, 0], [0, 2]] (out = [x0, 2 x1]), fc2's [[1, -0.5], [0.3, 0.1]].
void set_weights(VariableStore& vars) {
  vars.assign("net/fc1/weights", make({2, 2}, {1, 0, 0, 2}));
  vars.assign("net/fc2/weights", make({2, 2}, {1, -0.5f, 0.3f, 0.1f}));
}

float value(const VariableStore& vars, const std::string& name) { return vars.at(name).data<float>()[0]; }

}  // namespace

TEST_CASE("fake quantization in the slim layers: the graph hub quantize reads") {
  TwoLayers t(slim::QuantizeMode::kFakeQuant, false);
  const Graph& g = t.graph;
  int weights = 0, activations = 0;
  for (const Node& n : g.nodes()) {
    if (n.op == "FakeQuantWithMinMaxVarsPerChannel") {
      // A weight fake quant, per output channel: the weights as [-1, O],
      // min/max computed from them.
      ++weights;
      const Node& rows = g.node(n.inputs[0]);
      REQUIRE(rows.op == "Reshape");
      const Node& w = g.node(rows.inputs[0]);
      CHECK(w.op == "Variable");
      CHECK(n.attrs.get_bool("narrow_range"));
      CHECK(n.name == w.name + "_quant/FakeQuantWithMinMaxVarsPerChannel");
      CHECK(g.node(n.inputs[1]).op == "Neg");
      CHECK(g.node(n.inputs[2]).op == "StopGradient");
      continue;
    }
    if (n.op != "FakeQuantWithMinMaxVars") continue;
    // An activation fake quant: min/max read the layer's range variables.
    ++activations;
    CHECK_FALSE(n.attrs.get_bool("narrow_range"));
    CHECK(n.attrs.get_int("num_bits") == 8);
    const std::string layer = n.name.substr(0, n.name.find("/act_quant/"));
    CHECK(g.node(n.inputs[1]).op == "Variable");
    CHECK(g.node(n.inputs[1]).name == layer + "/act_quant/min");
    CHECK(g.node(n.inputs[2]).name == layer + "/act_quant/max");
    CHECK_FALSE(g.node(n.inputs[1]).attrs.get_bool("trainable"));
  }
  CHECK(weights == 2);
  CHECK(activations == 2);
  // fc2's activation fake quant comes after its Relu; it is the layer's output.
  CHECK(g.node(g.node(t.fc2).inputs[0]).op == "Relu");
  CHECK(slim::count_activation_ranges(g) == 2);
  CHECK(g.collection(kUpdateOps).empty());  // not training: no range updates
  CHECK(slim::is_activation_range("net/fc1/act_quant/min"));
  CHECK_FALSE(slim::is_activation_range("net/fc1/weights"));
  TwoLayers plain(slim::QuantizeMode::kOff);
  CHECK(slim::count_activation_ranges(plain.graph) == 0);
  CHECK(plain.graph.variables().size() == 4);
}

TEST_CASE("before the delay the graph computes the float graph's values, ranges tracked by hand") {
  TwoLayers f(slim::QuantizeMode::kOff), q(slim::QuantizeMode::kTrackRanges);
  VariableStore fv, qv;
  fv.initialize(f.graph);
  qv.initialize(q.graph);
  set_weights(fv);
  set_weights(qv);
  Session fs(f.graph, &fv), qs(q.graph, &qv);
  // fc1 = [x0, 2 x1]. Batches and fc1's ranges (widened to contain 0):
  //   1: [[1, -1], [3, 0.5]] -> [[1, -2], [3, 1]]: [-2, 3]
  //   2: [[-4, 1]]           -> [[-4, 2]]:         [-4, 2]
  //   3: [[0.5, 0.25]]       -> [[0.5, 0.5]]:      [0, 0.5]
  const std::vector<Tensor> batches = {make({2, 2}, {1, -1, 3, 0.5f}), make({1, 2}, {-4, 1}),
                                       make({1, 2}, {0.5f, 0.25f})};
  // The first batch sets the fresh ranges (fc1's and fc2's).
  CHECK(slim::initialize_activation_ranges(qs, q.graph, qv, {{q.x, batches[0]}}) == 2);
  CHECK(value(qv, "net/fc1/act_quant/min") == -2);
  CHECK(value(qv, "net/fc1/act_quant/max") == 3);
  // Ranges that hold values are not set again (a resumed run).
  CHECK(slim::initialize_activation_ranges(qs, q.graph, qv, {{q.x, batches[1]}}) == 0);
  const float d = 0.999f;
  float lo = -2, hi = 3;
  const float batch_lo[] = {-2, -4, 0}, batch_hi[] = {3, 2, 0.5f};
  for (int step = 0; step < 3; ++step) {
    Tensor want = fs.run({{f.x, batches[step]}}, {f.fc2})[0];
    Tensor got = qs.run({{q.x, batches[step]}}, {q.fc2}, q.updates())[0];
    CHECK(bit_equal(got, want));
    lo = lo * d + batch_lo[step] * (1 - d);
    hi = hi * d + batch_hi[step] * (1 - d);
    CHECK(value(qv, "net/fc1/act_quant/min") == doctest::Approx(lo).epsilon(1e-6));
    CHECK(value(qv, "net/fc1/act_quant/max") == doctest::Approx(hi).epsilon(1e-6));
  }
  // By hand: min -2 -> -2 -> -2.002 -> -1.999998; max 3 -> 3 -> 2.999 -> 2.996501.
  CHECK(lo == doctest::Approx(-1.999998).epsilon(1e-6));
  CHECK(hi == doctest::Approx(2.996501).epsilon(1e-6));
}

TEST_CASE("fake-quantized activations and weights lie on their nudged grids") {
  TwoLayers q(slim::QuantizeMode::kFakeQuant);
  VariableStore vars;
  vars.initialize(q.graph);
  set_weights(vars);
  Session session(q.graph, &vars);
  Tensor x = random_tensor({16, 2}, 7, -3, 3);
  slim::initialize_activation_ranges(session, q.graph, vars, {{q.x, x}});
  const float lo = value(vars, "net/fc1/act_quant/min"), hi = value(vars, "net/fc1/act_quant/max");
  // The step quantizes with the ranges as they were before its update.
  Output w2 = q.graph.tensor("net/fc2/weights_quant/Weights");
  std::vector<Tensor> out = session.run({{q.x, x}}, {q.fc1, w2}, q.updates());
  const ops::QuantParams p = ops::nudged_quant_params(lo, hi);
  int distinct_levels = 0;
  std::map<long, int> levels;
  for (int64_t i = 0; i < out[0].num_elements(); ++i) {
    const double k = (out[0].data<float>()[i] - p.nudged_min) / p.scale;
    CHECK(std::fabs(k - std::round(k)) < 1e-3);
    CHECK(k > -1e-3);
    CHECK(k < 255 + 1e-3);
    levels[std::lround(k)]++;
  }
  distinct_levels = static_cast<int>(levels.size());
  CHECK(distinct_levels > 8);  // a real spread of levels, not a collapsed range
  // fc2's weights [[1, -0.5], [0.3, 0.1]], per output channel (column):
  // column 0 max |w| = 1, the grid k / 127: 0.3 -> 38.1 / 127 -> 38 / 127;
  // column 1 max |w| = 0.5, the grid 0.5 k / 127: 0.1 -> 25.4 -> 25 * 0.5 / 127
  // (one grid for the tensor would give 13 / 127).
  expect_close(out[1], make({2, 2}, {1, -0.5f, 38.0f / 127, 12.5f / 127}), 1e-6, 0);
}

TEST_CASE("fresh ranges of a fake-quantized graph are set layer after layer") {
  // fc2's range must be measured behind fc1's fake quant with fc1's new
  // range, not behind its still-empty one (which outputs zeros).
  TwoLayers q(slim::QuantizeMode::kFakeQuant, true);
  VariableStore vars;
  vars.initialize(q.graph);
  set_weights(vars);
  Session session(q.graph, &vars);
  Tensor x = make({2, 2}, {1, -1, 3, 0.5f});
  CHECK(slim::initialize_activation_ranges(session, q.graph, vars, {{q.x, x}}) == 2);
  // fc1's weights fake-quantized per column: each column's max is its only
  // non-zero, so w1q = w1 and fc1 = x w1 = [[1, -2], [3, 1]]: range [-2, 3].
  CHECK(value(vars, "net/fc1/act_quant/min") == -2);
  CHECK(value(vars, "net/fc1/act_quant/max") == doctest::Approx(3).epsilon(1e-6));
  // fc2's range is its Relu's as the graph computes it with fc1's range set:
  // row 2 is 3 + 38/127 (fc1 on its grid [-2, 3] exactly, w2q's 0.3 -> 38/127), not 0.
  Output relu = q.graph.node(q.fc2).inputs[0];
  Tensor fc2 = session.run({{q.x, x}}, {relu})[0];
  CHECK(fc2.data<float>()[2] == doctest::Approx(419.0 / 127).epsilon(1e-4));
  CHECK(value(vars, "net/fc2/act_quant/min") == 0);
  CHECK(value(vars, "net/fc2/act_quant/max") == fc2.data<float>()[2]);
}

TEST_CASE("training through fake quantization: gradients pass straight through") {
  TwoLayers q(slim::QuantizeMode::kFakeQuant);
  Scope s(q.graph);
  GradientOps grads = build_gradients(s, q.loss);
  // Both layers' weights train (the ranges are not trainable).
  CHECK(grads.variables.size() == 4);
  VariableStore vars;
  vars.initialize(q.graph);
  set_weights(vars);
  Session session(q.graph, &vars);
  Tensor x = make({2, 2}, {1, -1, 3, 0.5f});
  slim::initialize_activation_ranges(session, q.graph, vars, {{q.x, x}});
  auto opt = make_optimizer("sgd", LearningRateSchedule::fixed(0.1));
  const Tensor before = vars.at("net/fc1/weights").clone();
  float loss = train_step(session, *opt, vars, grads, q.loss, {{q.x, x}});
  CHECK(std::isfinite(loss));
  CHECK_FALSE(bit_equal(vars.at("net/fc1/weights"), before));
}

TEST_CASE("hub quantize gives a trained module the int8 weights training used, batch norm folded in") {
  // conv + batch norm + ReLU6, then depthwise + batch norm + ReLU6, as the
  // slim layers build them for quantization-aware training (inference
  // graph), with batch-norm statistics that scale the channels very
  // differently (a negative gamma too) and trained activation ranges.
  ModuleSpec spec = create_module_spec([](ModuleBuilder& b) {
    Scope s = b.scope();
    Output x = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 6, 6, 3}, "images");
    slim::LayerOptions o;
    o.quantize = slim::QuantizeMode::kFakeQuant;
    o.is_training = false;
    o.use_batch_norm = true;
    o.batch_norm.scale = true;
    o.activation = slim::relu6();
    Output y = slim::conv2d(s, x, 5, {3, 3}, "conv", o);
    y = slim::depthwise_conv2d(s, y, {3, 3}, "dw", o);
    b.add_signature("default", x, y, "images");
    VariableStore vars;
    vars.initialize(b.graph());
    uint64_t seed = 40;
    for (const char* layer : {"conv", "dw"}) {
      const std::string bn = std::string(layer) + "/BatchNorm/";
      const Shape c = vars.at(bn + "gamma").shape();
      Tensor gamma = random_tensor(c, seed++, 0.2f, 3.0f);
      gamma.data<float>()[1] = -gamma.data<float>()[1];
      b.initial_values().set(bn + "gamma", gamma);
      b.initial_values().set(bn + "beta", random_tensor(c, seed++, -0.5f, 0.5f));
      b.initial_values().set(bn + "moving_mean", random_tensor(c, seed++, -0.3f, 0.3f));
      b.initial_values().set(bn + "moving_variance", random_tensor(c, seed++, 0.05f, 4.0f));
      b.initial_values().set(std::string(layer) + "/act_quant/min", Tensor::scalar(0.0f));
      b.initial_values().set(std::string(layer) + "/act_quant/max", Tensor::scalar(6.0f));
    }
  });
  // The images on the grid their calibration range [0, 1] gives (k / 255),
  // so the int8 module's input quantization changes nothing.
  auto grid_images = [](int64_t n, uint64_t seed) {
    Tensor t = random_tensor({n, 6, 6, 3}, seed, 0, 1);
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.num_elements(); ++i) p[i] = std::round(p[i] * 255) / 255;
    p[0] = 0;
    p[1] = 1;
    return t;
  };
  QuantizeReport report;
  const ModuleSpec int8 = quantize_module(
      spec, [&](const std::function<void(const Tensor&)>& feed) { feed(grid_images(8, 1)); }, QuantizeOptions{},
      &report);
  CHECK(report.layers == 2);
  REQUIRE(int8.quantization().has_value());
  CHECK(int8.quantization()->per_channel);  // as trained, though not asked for
  CHECK(std::find(report.notes.begin(), report.notes.end(),
                  "weights quantized per output channel, as quantization-aware training quantized them") !=
        report.notes.end());
  // The trained graph (fake quant in float) and the int8 module: the same
  // 8-bit levels of the output (ReLU6 on the grid 6/255 k), all within one
  // level (a product on either side of a rounding boundary), almost all equal.
  Module trained(spec), quantized(int8);
  const Tensor x = grid_images(16, 2);
  const Tensor want = trained(x), got = quantized(x);
  REQUIRE(got.shape() == want.shape());
  int64_t equal = 0;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    const double steps = std::fabs(got.data<float>()[i] - want.data<float>()[i]) / (6.0 / 255);
    CHECK(steps < 1.001);
    equal += steps < 1e-3;
  }
  MESSAGE(equal << " of " << want.num_elements() << " outputs equal");
  CHECK(equal >= want.num_elements() * 98 / 100);
}
