// quantize_module (hub/module/quantize.h) on a small MobileNet-like module
// (conv + batch norm + Relu6, depthwise + batch norm + Relu, pointwise,
// average pool, dense): the written module is standard QDQ ops with int8
// weights, loads back with its quantization record (format_version 2 and later), runs
// on int8 oneDNN primitives, and stays close to the float module.
#include "hub/module/quantize.h"

#include <doctest/doctest.h>

#include <cmath>

#include "fixtures.h"
#include "hub/ops/conv2d.h"
#include "hub/ops/fused.h"
#include "hub/ops/pool.h"
#include "quantize_testutil.h"
#include "testutil.h"

using namespace hub;
using namespace hub::testing;
using hub::quantize_test::images;
using hub::quantize_test::small_net;

namespace {

int count_int8_layers(Module& m) {
  int n = 0;
  for (const Node& node : m.execution_graph().nodes())
    if (node.op == "_FusedConv2D" || node.op == "_FusedMatMul") n += ops::quantization_of(node.attrs).quantized();
  return n;
}

}  // namespace

TEST_CASE("quantize_module: QDQ graph, int8 weights, quantization record, close to float") {
  const ModuleSpec spec = small_net();
  for (bool per_channel : {false, true}) {
    CAPTURE(per_channel);
    QuantizeOptions o;
    o.per_channel = per_channel;
    QuantizeReport report;
    const ModuleSpec q = quantize_module(spec, images(40, 100), o, &report);
    CHECK(report.layers == 4);  // conv, depthwise, pointwise, dense
    CHECK(report.examples == 40);
    // The inputs of the four layers: the image, the outputs of conv and depthwise (which
    // requantize into the next layer) and the pooled features. The pointwise output stays
    // float: the average pool that reads it is no int8 layer.
    CHECK(report.activations == 4);
    CHECK(report.notes.empty());

    REQUIRE(q.quantization().has_value());
    const QuantizationInfo& info = *q.quantization();
    CHECK(info.method == "minmax");
    CHECK(info.calibration_images == 40);
    REQUIRE(info.weights.size() == 4);
    // Per channel: one scale per output channel (the depthwise filter's 8, dense 5).
    std::vector<int64_t> scales;
    for (const QuantizedWeights& w : info.weights) scales.push_back(w.scales);
    CHECK(scales == (per_channel ? std::vector<int64_t>{8, 8, 16, 5} : std::vector<int64_t>{1, 1, 1, 1}));
    for (const QuantizedActivation& a : info.activations) {
      CAPTURE(a.tensor);
      CHECK(a.range.min <= a.range.max);
      // uint8 with TensorFlow's nudging: the range maps onto [0, 255] around the zero point.
      CHECK(a.scale ==
            doctest::Approx((std::max(a.range.max, 0.0f) - std::min(a.range.min, 0.0f)) / 255).epsilon(1e-5));
    }
    // The graph is standard ops: int8 weights as variables, QuantizeLinear / DequantizeLinear pairs.
    int quantize_ops = 0, int8_vars = 0;
    for (const Node& n : q.graph().nodes()) {
      quantize_ops += n.op == "QuantizeLinear";
      CHECK(n.op.rfind("_", 0) != 0);  // no internal fused ops in a module
    }
    for (const VariableInfo& v : q.variables())
      int8_vars += v.dtype == DType::kInt8 && v.name.size() > 18 &&
                   v.name.compare(v.name.size() - 18, 18, "/weights_quantized") == 0;
    CHECK(quantize_ops == 4);
    CHECK(int8_vars == 4);
    CHECK(q.tag_sets() == std::vector<TagSet>{TagSet{}});
    CHECK(get_expected_image_size(q) == std::pair<int64_t, int64_t>{16, 16});

    // Written and read back: the record kept; runs in int8, close to float.
    TempDir dir("hub_quantize");
    Module(q).export_to(dir / "q");
    const ModuleSpec loaded = load_module_spec(dir / "q");
    REQUIRE(loaded.quantization().has_value());
    CHECK(loaded.quantization()->activations.size() == 4);
    CHECK(loaded.quantization()->weights[3].variable == info.weights[3].variable);
    Module fm(spec), qm(loaded);
    const Tensor test = random_tensor({32, 16, 16, 3}, 999, 0.0f, 1.0f);
    const Tensor want = fm({{"images", test}}).at("logits"), got = qm({{"images", test}}).at("logits");
    CHECK(count_int8_layers(qm) == 4);
    double range = 0, err = 0;
    for (int64_t i = 0; i < want.num_elements(); ++i) {
      range = std::max(range, std::fabs(static_cast<double>(want.data<float>()[i])));
      err = std::max(err, std::fabs(static_cast<double>(got.data<float>()[i] - want.data<float>()[i])));
    }
    CHECK(err < 0.05 * range);  // 8-bit activations and weights: a few percent at most
  }
}

TEST_CASE("quantize_module: percentile calibration narrows ranges; bad options and data are errors") {
  const ModuleSpec spec = small_net();
  QuantizeOptions p;
  p.method = "percentile";
  p.percentile = 99.0;
  QuantizeReport report;
  const ModuleSpec q = quantize_module(spec, images(24, 7), p, &report);
  const ModuleSpec m = quantize_module(spec, images(24, 7), {});
  CHECK(report.examples == 24);
  CHECK(q.quantization()->method.rfind("percentile(99", 0) == 0);
  const auto& pa = q.quantization()->activations;
  const auto& ma = m.quantization()->activations;
  REQUIRE(pa.size() == ma.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    CHECK(pa[i].range.max <= ma[i].range.max);
    CHECK(pa[i].range.min >= ma[i].range.min);
  }
  // The input image's values are uniform in [0, 1): its 99th percentile is near 0.99.
  CHECK(pa[0].range.max == doctest::Approx(0.99).epsilon(0.02));

  QuantizeOptions bad;
  bad.method = "entropy";
  expect_error(
      Code::kInvalidArgument, [&] { quantize_module(spec, images(8, 1), bad); }, "method 'entropy'");
  bad.method = "percentile";
  bad.percentile = 30;
  expect_error(
      Code::kInvalidArgument, [&] { quantize_module(spec, images(8, 1), bad); }, "outside (50, 100]");
  expect_error(
      Code::kInvalidArgument, [&] { quantize_module(spec, [](const auto&) {}, {}); }, "fed no examples");
  expect_error(
      Code::kInvalidArgument,
      [&] {
        quantize_module(spec, [](const auto& feed) { feed(random_tensor({1, 8, 8, 3}, 1)); }, {});
      },
      "does not fit input");
  // Nothing to quantize: a module without convolutions or matmuls.
  const ModuleSpec plain = create_module_spec([](ModuleBuilder& b) {
    Scope s = b.scope();
    Output x = ops::placeholder(s, DType::kFloat32, Shape{kUnknownDim, 4}, "x");
    b.add_signature("default", x, ops::relu(s, x));
  });
  expect_error(
      Code::kInvalidArgument,
      [&] {
        quantize_module(plain, [](const auto& feed) { feed(random_tensor({2, 4}, 1)); }, {});
      },
      "no convolution or matmul");
}

TEST_CASE("quantize_module: a max pool between int8 layers runs on the 8-bit values") {
  const ModuleSpec spec = create_module_spec([](ModuleBuilder& b) {
    Scope s = b.scope();
    Output x = ops::placeholder(s, DType::kFloat32, Shape{kUnknownDim, 12, 12, 3}, "images");
    Output h = ops::relu(s, ops::conv2d(s, x, quantize_test::weights(s, "c1", {3, 3, 3, 6}, 1, 0.5f)));
    h = ops::max_pool(s, h, {2, 2}, {2, 2}, "VALID");
    h = ops::conv2d(s, h, quantize_test::weights(s, "c2", {3, 3, 6, 4}, 2, 0.5f));
    b.add_signature("default", x, h, "images");
  });
  QuantizeReport report;
  const ModuleSpec q = quantize_module(
      spec,
      [](const auto& feed) {
        feed(random_tensor({8, 12, 12, 3}, 3, 0.0f, 1.0f));
      },
      {}, &report);
  CHECK(report.notes.empty());
  // The pool's input and output carry the same parameters.
  REQUIRE(q.quantization()->activations.size() == 3);
  Module m(q);
  const Tensor x = random_tensor({2, 12, 12, 3}, 4, 0.0f, 1.0f);
  const Tensor got = m(x), want = Module(spec)(x);
  int pools = 0;
  for (const Node& n : m.execution_graph().nodes())
    if (n.op == "MaxPool") {
      ++pools;
      CHECK(m.execution_graph().spec(n.inputs[0]).dtype == DType::kUInt8);
    }
  CHECK(pools == 1);
  CHECK(count_int8_layers(m) == 2);
  double range = 0, err = 0;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    range = std::max(range, std::fabs(static_cast<double>(want.data<float>()[i])));
    err = std::max(err, std::fabs(static_cast<double>(got.data<float>()[i] - want.data<float>()[i])));
  }
  CHECK(err < 0.05 * range);
}
