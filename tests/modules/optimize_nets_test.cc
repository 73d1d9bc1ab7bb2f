// The inference optimiser (hub/graph/optimize/optimize.h) on the built-in
// networks: the optimised graph gives the unoptimised graph's logits within
// 1e-4 relative on the reference backend, on oneDNN with the layout oneDNN
// prefers here, and on oneDNN with the other layout (channel-blocked nChw16c
// or nChw8c where oneDNN prefers NHWC, else NHWC), so both paths run on any
// CPU; an inference Module times the two per batch size. Batch-norm statistics and
// biases are randomised first, so folding them is not a no-op. Modules use
// it for inference instances (HUB_GRAPH_OPT=0 turns it off), and an ONNX
// import goes through the same passes.
//
// By default one net per builder runs (tests/modules/default_nets.h); every
// net, AlexNet and the VGGs included, with HUB_TEST_LARGE_NETS=1.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "default_nets.h"
#include "hub/backend/backend.h"
#include "hub/graph/optimize/optimize.h"
#include "hub/graph/session.h"
#include "hub/interop/onnx/exporter.h"
#include "hub/interop/onnx/importer.h"
#include "hub/interop/tf/saved_model.h"
#include "hub/interop/tf/saved_model_export.h"
#include "hub/module/module.h"
#include "hub/ops/array.h"
#include "hub/ops/conv2d.h"
#include "hub/ops/registry.h"
#include "hub/ops/state.h"
#include "modules/nets/nets.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;

namespace {

// A small image each net takes (keeps the suite fast).
int64_t test_size(const nets::NetInfo& info) {
  auto it = default_test_nets().find(info.name);
  if (it != default_test_nets().end()) return it->second;
  if (info.name.rfind("mobilenet", 0) == 0 || info.name.rfind("resnet", 0) == 0) return 64;
  return info.image_size;
}

// Batch-norm statistics, scales, offsets and biases drawn at random (the
// initializers make them 0 and 1, which folding would leave unchanged).
void randomise(VariableStore& vars, uint64_t seed) {
  for (const std::string& name : vars.names()) {
    const Shape shape = vars.at(name).shape();
    float lo = 0, hi = 0;
    if (name.ends_with("moving_variance"))
      lo = 0.5f, hi = 2.0f;
    else if (name.ends_with("moving_mean"))
      lo = -0.5f, hi = 0.5f;
    else if (name.ends_with("gamma"))
      lo = 0.5f, hi = 1.5f;
    else if (name.ends_with("beta") || name.ends_with("biases"))
      lo = -0.2f, hi = 0.2f;
    else
      continue;
    vars.set(name, random_tensor(shape, seed++, lo, hi));
  }
}

double max_abs(const Tensor& t) {
  double m = 0;
  for (float v : t.to_vector<float>()) m = std::max(m, static_cast<double>(std::fabs(v)));
  return m;
}

// Within 1e-4 of the largest logit's magnitude, or 1e-4 relative.
void expect_same(const Tensor& got, const Tensor& want) { expect_close(got, want, 1e-4 * max_abs(want), 1e-4); }

int count_ops(const Graph& g, const std::string& op) {
  return static_cast<int>(std::count_if(g.nodes().begin(), g.nodes().end(), [&](const Node& n) { return n.op == op; }));
}

struct Variant {
  const char* backend;
  int64_t block;  // OptimizeOptions::block
};

void check_net(const std::string& name) {
  INFO("net " << name);
  const nets::NetInfo& info = nets::find_net(name);
  const int64_t size = test_size(info);
  Graph g;
  Scope s(g);
  Output images = ops::placeholder(s, DType::kFloat32, {kUnknownDim, size, size, info.channels}, "images");
  nets::NetOptions o;
  o.num_classes = 7;
  nets::Net net = nets::build_net(name, s, images, o);
  VariableStore vars;
  vars.initialize(g);
  randomise(vars, 101);
  const Tensor x = random_tensor({2, size, size, info.channels}, 17, 0, 1);
  int batch_norms_after_conv = 0;
  // Relus that are a batch norm's only consumer: each one a post-op after optimising.
  std::map<Output, int> uses;
  for (const Node& n : g.nodes())
    for (Output in : n.inputs) ++uses[in];
  std::vector<std::string> relus_after_batch_norm;
  // Zero pads of the spatial dims read only by a convolution (slim's conv2d_same): each one
  // taken into the convolution's padding.
  std::vector<std::string> pads_before_conv;
  for (const Node& n : g.nodes()) {
    if (n.op == "Relu" && g.node(n.inputs[0].node).op == "FusedBatchNorm" && uses[n.inputs[0]] == 1)
      relus_after_batch_norm.push_back(n.name);
    if ((n.op == "Conv2D" || n.op == "DepthwiseConv2dNative") && g.node(n.inputs[0].node).op == "Pad" &&
        uses[n.inputs[0]] == 1)
      pads_before_conv.push_back(g.node(n.inputs[0].node).name);
    const std::string& in = n.op == "FusedBatchNorm" ? g.node(n.inputs[0].node).op : "";
    batch_norms_after_conv += in == "Conv2D" || in == "DepthwiseConv2dNative" || in == "MatMul";
  }
  // oneDNN's preferred layout here, and the other one (NHWC if it prefers blocks, else the CPU's block).
  const int64_t other_block = OpRegistry::global().activation_blocks("onednn").at(1);
  for (const Variant& v : {Variant{"reference", 0}, Variant{"onednn", -1}, Variant{"onednn", other_block}}) {
    INFO("backend " << std::string(v.backend) << ", block " << v.block);
    const Backend& backend = find_backend(v.backend);
    Session plain(g, &vars, {&backend});
    const Tensor want = plain.run({{images, x}}, {net.logits})[0];
    OptimizeOptions opt;
    opt.backend = &backend;
    opt.block = v.block;
    OptimizedGraph og = optimize_for_inference(g, vars, {images, net.logits}, opt);
    const Graph& fast = og.graph();
    // Every convolution and dense layer fused; every batch norm right after
    // one folded into it, and the others (resnet_v2's pre-activation ones
    // follow the residual Add) made 1x1 depthwise convolutions that take
    // the activation after them.
    const int batch_norms = count_ops(g, "FusedBatchNorm");
    CHECK(og.stats().fused == count_ops(g, "Conv2D") + count_ops(g, "DepthwiseConv2dNative") + count_ops(g, "MatMul") +
                                  batch_norms - batch_norms_after_conv);
    CHECK(count_ops(fast, "Conv2D") + count_ops(fast, "DepthwiseConv2dNative") + count_ops(fast, "MatMul") == 0);
    CHECK(og.stats().batch_norms_folded == batch_norms);
    CHECK(count_ops(fast, "FusedBatchNorm") == 0);
    for (const std::string& relu : relus_after_batch_norm) CHECK_MESSAGE(!fast.find(relu), relu);
    for (const std::string& pad : pads_before_conv) CHECK_MESSAGE(!fast.find(pad), pad);
    CHECK(og.stats().post_ops > 0);
    CHECK(og.stats().nodes_after < og.stats().nodes_before);
    if (v.block > 0) CHECK(og.stats().relayouts > 0);
    Session session(fast, &vars, {&backend});
    const Tensor got = session.run({{og.tensor(images), x}}, {og.tensor(net.logits)})[0];
    expect_same(got, want);
    // With the static memory plan (as modules run it): the recording run
    // and a run in the arena.
    SessionOptions planned_options;
    planned_options.backend = &backend;
    planned_options.plan_memory = true;
    Session planned(fast, &vars, planned_options);
    for (int run = 0; run < 2; ++run)
      expect_close(planned.run({{og.tensor(images), x}}, {og.tensor(net.logits)})[0], got, 0, 0);
    CHECK(planned.last_arena_bytes() > 0);
    if (std::string(v.backend) == "onednn")
      for (const auto& [node, kernel] : session.last_kernels())
        if (fast.node(*fast.find(node)).op == "_FusedConv2D") CHECK_MESSAGE(kernel == "onednn", node);
  }
}

}  // namespace

TEST_CASE("optimised graphs of the built-in nets equal the unoptimised ones on both backends") {
  // tests/modules/default_nets.h: one net per builder unless HUB_TEST_LARGE_NETS=1.
  const bool all = test_all_nets();
  for (const std::string& name : nets::net_names()) {
    if (!all && !default_test_nets().count(name)) continue;
    // mobilenet_v1_<multiplier>_<size> is mobilenet_v1_<multiplier> at 64x64.
    if (name.rfind("mobilenet_v1_", 0) == 0 && name.size() > 16) continue;
    check_net(name);
  }
}

namespace {

// mobilenet_v1_025 at 32x32 as a module: signatures "default" (logits) and
// "features", randomised batch-norm statistics as its weights.
ModuleSpec small_mobilenet() {
  return create_module_spec([](ModuleBuilder& b) {
    Scope s = b.scope();
    Output images = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 32, 32, 3}, "images");
    nets::NetOptions o;
    o.num_classes = 5;
    nets::Net net = nets::build_net("mobilenet_v1_025_128", s, images, o);
    b.add_signature("default", {{"images", images}}, {{"default", net.logits}});
    b.add_signature("features", {{"images", images}}, {{"default", net.features}});
    VariableStore vars;
    vars.initialize(b.graph());
    randomise(vars, 7);
    for (const std::string& name : vars.names()) b.initial_values().set(name, vars.at(name));
  });
}

Tensor run_plain(Module& m, const Tensor& x) {
  const Graph& g = m.graph();
  const SignatureInfo& si = m.spec().signature();
  Session session(g, &m.variables());
  return session.run({{g.tensor(si.inputs.at("images").tensor_name), x}},
                     {g.tensor(si.outputs.at("default").tensor_name)})[0];
}

}  // namespace

TEST_CASE("inference modules run the optimised graph; training modules and HUB_GRAPH_OPT=0 the graph itself") {
  const ModuleSpec spec = small_mobilenet();
  const Tensor x = random_tensor({3, 32, 32, 3}, 5, 0, 1);
  ::setenv("HUB_GRAPH_LAYOUT", "blocked", 1);  // one optimised graph for every batch size
  Module m(spec);
  ::unsetenv("HUB_GRAPH_LAYOUT");
  const Graph& fast = m.execution_graph();
  CHECK(&fast != &m.graph());
  CHECK(count_ops(fast, "_FusedConv2D") ==
        count_ops(m.graph(), "Conv2D") + count_ops(m.graph(), "DepthwiseConv2dNative"));
  CHECK(count_ops(fast, "FusedBatchNorm") == 0);
  const Tensor y = m(x);
  CHECK(&m.execution_graph() == &fast);
  m(x);
  CHECK(&m.execution_graph() == &fast);
  expect_same(y, run_plain(m, x));
  // Both signatures come from the one optimised graph.
  CHECK(&m.execution_graph() == &fast);
  const Tensor features = m("features", x);
  CHECK(features.shape() == Shape({3, 256}));
  // Other batch sizes, alternating (a plan per batch size).
  for (int64_t batch : {1, 2, 1, 3}) {
    const Tensor xb = random_tensor({batch, 32, 32, 3}, 40 + batch, 0, 1);
    expect_same(m(xb), run_plain(m, xb));
  }

  SUBCASE("a variable write makes the module optimise again from the new value") {
    const std::string mean = "MobilenetV1/Conv2d_13_pointwise/BatchNorm/moving_mean";
    REQUIRE(m.variable_map().contains(mean));
    m.variable_map().at(mean).assign(random_tensor(m.variable_map().at(mean).value().shape(), 99, -2, 2));
    const Tensor y2 = m(x);
    expect_same(y2, run_plain(m, x));
    double change = 0;  // the write shows in the output
    for (int64_t i = 0; i < y.num_elements(); ++i)
      change = std::max(change, static_cast<double>(std::fabs(y2.data<float>()[i] - y.data<float>()[i])));
    CHECK(change > 1e-3 * max_abs(y));
  }
  SUBCASE("HUB_GRAPH_OPT=0 at construction") {
    ::setenv("HUB_GRAPH_OPT", "0", 1);
    Module off(spec);
    ::unsetenv("HUB_GRAPH_OPT");
    CHECK(&off.execution_graph() == &off.graph());
    expect_close(off(x), run_plain(off, x), 0, 0);
  }
  SUBCASE("trainable and {train} instances are not optimised") {
    Module trainable(spec, {}, true);
    CHECK(&trainable.execution_graph() == &trainable.graph());
  }
}

TEST_CASE("a contest runs each way once untimed, then in timed turns, and settles on the fastest call") {
  Contest c({0, 8, 16}, 2);
  CHECK_FALSE(c.settled());
  // Untimed first calls: way 8's slow first call does not count against it.
  const std::vector<std::pair<int64_t, double>> calls = {{0, 1.0}, {8, 100.0}, {16, 1.0},   // untimed
                                                         {0, 3.0}, {8, 2.5},   {16, 4.0},   // round 1
                                                         {0, 2.0}, {8, 2.4},   {16, 0.5}};  // round 2
  for (const auto& [way, seconds] : calls) {
    REQUIRE_FALSE(c.settled());
    CHECK(c.next() == way);
    c.record(seconds);
  }
  CHECK(c.settled());
  CHECK(c.next() == 16);  // its 0.5 s call beats 2.0 and 2.4
  c.record(9.0);          // settled: later calls are not timed
  CHECK(c.next() == 16);

  Contest d({0, 8});
  CHECK(d.next() == 0);
  d.record(1.0);
  d.drop(8);  // the same as way 0: a single way is settled
  CHECK(d.settled());
  CHECK(d.ways() == std::vector<int64_t>{0});
  d.drop(0);  // the last way stays
  CHECK(d.next() == 0);
  CHECK(Contest({8}).settled());
  CHECK_THROWS_AS(Contest({}), Error);
}

TEST_CASE("an inference module times its layouts per set of input shapes; HUB_GRAPH_LAYOUT fixes one") {
  const ModuleSpec spec = small_mobilenet();
  const std::vector<int64_t> offered = OpRegistry::global().activation_blocks(default_backend().name());
  REQUIRE(offered.size() == 2);  // oneDNN: NHWC and its channel-blocked layout, preferred first
  CHECK(std::count(offered.begin(), offered.end(), int64_t{0}) == 1);
  auto blocked = [](Module& m) { return count_ops(m.execution_graph(), "_Relayout") > 0; };
  auto input = [](int64_t batch) { return random_tensor({batch, 32, 32, 3}, 60 + batch, 0, 1); };

  SUBCASE("fixed") {
    for (const std::string mode : {"nhwc", "blocked"}) {
      INFO(mode);
      ::setenv("HUB_GRAPH_LAYOUT", mode.c_str(), 1);
      Module m(spec);
      ::unsetenv("HUB_GRAPH_LAYOUT");
      for (int64_t batch : {1, 4}) {
        expect_same(m(input(batch)), run_plain(m, input(batch)));
        CHECK(blocked(m) == (mode == "blocked"));
      }
    }
  }
  SUBCASE("auto: the preferred layout first, then turns, then each batch size keeps the faster") {
    Module m(spec);
    CHECK(blocked(m) == (offered[0] > 0));
    const int turns = Contest::calls_to_settle(2);
    std::map<int64_t, const Graph*> chosen;
    for (int64_t batch : {1, 4, 2}) {
      INFO("batch " << batch);
      const Tensor want = run_plain(m, input(batch));
      for (int call = 0; call < turns + 2; ++call) {
        expect_same(m(input(batch)), want);
        if (call < turns) CHECK(blocked(m) == (offered[call % 2] > 0));  // turns, preferred first
        if (call >= turns) {                                             // settled
          auto [it, first] = chosen.emplace(batch, &m.execution_graph());
          if (!first) CHECK(it->second == &m.execution_graph());
        }
      }
    }
    // Settled batch sizes keep only the graphs they run in.
    for (int64_t batch : {1, 4, 2}) {
      m(input(batch));
      CHECK(&m.execution_graph() == chosen[batch]);
    }
  }
  SUBCASE("an unknown layout is refused at construction") {
    ::setenv("HUB_GRAPH_LAYOUT", "nchw", 1);
    CHECK_THROWS_WITH_AS(Module{spec}, doctest::Contains("HUB_GRAPH_LAYOUT='nchw': expected auto, nhwc or blocked"),
                         Error);
    ::unsetenv("HUB_GRAPH_LAYOUT");
  }
}

TEST_CASE("an imported ONNX model goes through the same passes") {
  TempDir dir("optimize_onnx");
  const ModuleSpec spec = small_mobilenet();
  const std::string onnx = (dir.path / "m.onnx").string();
  onnx_interop::export_onnx(spec, onnx, {});
  Module m(onnx_interop::import_onnx(onnx));
  const Graph& fast = m.execution_graph();
  CHECK(count_ops(fast, "_FusedConv2D") ==
        count_ops(m.graph(), "Conv2D") + count_ops(m.graph(), "DepthwiseConv2dNative"));
  CHECK(count_ops(fast, "_FusedConv2D") == 28);  // MobileNet v1: 14 + 13 depthwise, and the 1x1 logits
  CHECK(count_ops(fast, "FusedBatchNorm") == 0);
  const Tensor x = random_tensor({2, 32, 32, 3}, 8, 0, 1);
  Module original(spec);
  expect_same(m(x), original(x));
  expect_same(m(x), run_plain(m, x));
}

TEST_CASE("an imported TensorFlow SavedModel goes through the same passes") {
  TempDir dir("optimize_tf");
  const ModuleSpec spec = small_mobilenet();
  const std::string saved = (dir.path / "saved_model").string();
  tf::export_saved_model(spec, saved);
  Module m(tf::import_saved_model(saved));
  const Graph& fast = m.execution_graph();
  CHECK(count_ops(fast, "_FusedConv2D") == 28);
  CHECK(count_ops(fast, "FusedBatchNorm") == 0);
  const Tensor x = random_tensor({2, 32, 32, 3}, 9, 0, 1);
  Module original(spec);
  expect_same(m(x), original(x));
  expect_same(m(x), run_plain(m, x));
}

TEST_CASE("a zero Pad of the spatial dims becomes the convolution's own padding; other pads stay") {
  Graph g;
  Scope s(g);
  Output x = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 9, 10, 5}, "x");
  Output w = ops::constant(s, random_tensor({3, 3, 5, 4}, 3, -1, 1), "w");
  Output dw = ops::constant(s, random_tensor({3, 3, 5, 1}, 4, -1, 1), "dw");
  // Asymmetric, before a strided VALID convolution: absorbed.
  Output a = ops::conv2d(s, ops::pad(s, x, {0, 0, 1, 2, 2, 1, 0, 0}, "pad_a"), w, {{2, 2}, "VALID"}, "conv_a");
  // Before an EXPLICIT depthwise convolution: the pads add up.
  ops::ConvOptions explicit_pads{{1, 1}, "EXPLICIT"};
  explicit_pads.explicit_paddings = {1, 0, 2, 2};
  Output b = ops::depthwise_conv2d(s, ops::pad(s, x, {0, 0, 1, 0, 0, 1, 0, 0}, "pad_b"), dw, explicit_pads, "conv_b");
  // Not zeros, not constant, over the channels, or before a SAME convolution: they stay.
  Output c = ops::conv2d(s, ops::pad(s, x, {0, 0, 1, 1, 1, 1, 0, 0}, ops::PadMode::kConstant, 0.5, "pad_c"), w,
                         {{1, 1}, "VALID"}, "conv_c");
  Output d = ops::conv2d(s, ops::pad(s, x, {0, 0, 1, 1, 1, 1, 0, 0}, ops::PadMode::kReflect, 0, "pad_d"), w,
                         {{1, 1}, "VALID"}, "conv_d");
  Output e = ops::depthwise_conv2d(s, ops::pad(s, x, {0, 0, 1, 1, 1, 1, 0, 1}, "pad_e"),
                                   ops::constant(s, random_tensor({3, 3, 6, 1}, 5, -1, 1), "dw6"), {{1, 1}, "VALID"},
                                   "conv_e");
  Output f = ops::conv2d(s, ops::pad(s, x, {0, 0, 1, 1, 1, 1, 0, 0}, "pad_f"), w, {{1, 1}, "SAME"}, "conv_f");
  const std::vector<Output> outs{a, b, c, d, e, f};
  VariableStore vars;
  const Tensor in = random_tensor({2, 9, 10, 5}, 6, -1, 1);
  for (const char* name : {"reference", "onednn"}) {
    INFO("backend " << name);
    const Backend& backend = find_backend(name);
    Session plain(g, &vars, {&backend});
    const std::vector<Tensor> want = plain.run({{x, in}}, outs);
    std::vector<Output> keep{x};
    keep.insert(keep.end(), outs.begin(), outs.end());
    OptimizeOptions opt;
    opt.backend = &backend;
    OptimizedGraph og = optimize_for_inference(g, vars, keep, opt);
    const Graph& fast = og.graph();
    CHECK(!fast.find("pad_a"));
    CHECK(!fast.find("pad_b"));
    for (const char* kept : {"pad_c", "pad_d", "pad_e", "pad_f"}) CHECK_MESSAGE(fast.find(kept), kept);
    std::vector<Output> fast_outs;
    for (Output o : outs) fast_outs.push_back(og.tensor(o));
    Session session(fast, &vars, {&backend});
    const std::vector<Tensor> got = session.run({{og.tensor(x), in}}, fast_outs);
    for (size_t i = 0; i < outs.size(); ++i) {
      INFO("output " << i);
      expect_close(got[i], want[i], 1e-5, 1e-5);
    }
  }
}
