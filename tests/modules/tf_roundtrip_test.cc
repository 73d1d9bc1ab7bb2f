// Every built-in network, exported as `hub export` does (initial weights),
// converted to a TensorFlow SavedModel (hub convert --to savedmodel) and
// imported back (hub import), gives the module's own outputs on every
// signature, with the same variables (names, values, trainability). So does
// a quantization-aware export (FakeQuant nodes and range variables).
//
// To keep the suite fast, one net of each family runs (each family's
// variants differ only in depth or width: the same ops and attributes);
// HUB_TEST_LARGE_NETS=1 runs them all, AlexNet and the VGGs included.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

#include "hub/interop/onnx_testutil.h"
#include "hub/interop/tf/saved_model.h"
#include "hub/interop/tf/saved_model_export.h"
#include "hub/module/module.h"
#include "modules/nets/nets.h"
#include "modules/slim/quantize.h"
#include "modules/train/train.h"
#include "testutil.h"

namespace fs = std::filesystem;
using namespace hub;
using namespace hub::testing;

namespace {

// The smallest image each net takes (keeps the suite fast); 0 = its own size.
int64_t saved_model_test_size(const std::string& name) {
  if (name.rfind("mobilenet", 0) == 0 || name.rfind("resnet", 0) == 0) return 64;
  return 0;
}

int fake_quants(const Graph& g) {
  int n = 0;
  for (const Node& node : g.nodes())
    n += node.op == "FakeQuantWithMinMaxVars" || node.op == "FakeQuantWithMinMaxVarsPerChannel";
  return n;
}

// quantize: exported as `hub export --quantize` does, with the activation
// ranges set to [-1 - k/10, 2 + k/10] for the k-th range (not the fresh
// [0, 0], whose fake quant outputs zeros).
void saved_model_round_trip(const std::string& name, const TempDir& dir, bool quantize = false) {
  INFO("net " << name << (quantize ? " (fake-quantized)" : ""));
  train::ExportConfig c;
  c.model_name = name;
  c.num_classes = 7;
  c.image_size = saved_model_test_size(name);
  c.output_dir = (dir.path / name).string();
  c.quantize = quantize;
  train::export_module(c);
  ModuleSpec spec = load_module_spec(c.output_dir);
  if (quantize) {
    Module m(spec);
    int k = 0;
    for (const std::string& v : m.variable_map().names()) {
      if (!slim::is_activation_range(v)) continue;
      const bool is_min = v.substr(v.size() - 4) == "/min";
      m.variable_map().at(v).assign(Tensor::scalar<float>(is_min ? -1.0f - 0.1f * k : 2.0f + 0.1f * k));
      k += is_min ? 0 : 1;
    }
    REQUIRE(k > 0);
    m.export_to((dir.path / (name + "_ranges")).string());
    spec = load_module_spec((dir.path / (name + "_ranges")).string());
    CHECK(fake_quants(spec.graph()) == 2 * k);
  }
  const std::string saved = (dir.path / (name + ".savedmodel")).string();
  tf::export_saved_model(spec, saved);
  ModuleSpec back = tf::import_saved_model(saved);

  REQUIRE(back.variables().size() == spec.variables().size());
  for (size_t k = 0; k < spec.variables().size(); ++k) {
    const VariableInfo &a = spec.variables()[k], &b = back.variables()[k];
    CHECK(a.name == b.name);
    CHECK(a.trainable == b.trainable);
    const Tensor &wa = spec.weights().at(a.name), &wb = back.weights().at(b.name);
    CHECK((wa.shape() == wb.shape() && std::memcmp(wa.raw_data(), wb.raw_data(), wa.nbytes()) == 0));
  }
  CHECK(fake_quants(back.graph()) == fake_quants(spec.graph()));
  auto [h, w] = get_expected_image_size(spec);
  Tensor images = random_tensor({2, h, w, get_num_image_channels(spec)}, 17, 0, 1);
  for (const std::string& sig : spec.signature_names()) {
    INFO("signature " << sig);
    const std::string input = spec.input_info(sig).begin()->first;
    TensorMap want = run_signature(spec, sig, {{input, images}}, "onednn");
    TensorMap got = run_signature(back, sig, {{input, images}}, "onednn");
    REQUIRE(got.size() == want.size());
    for (const auto& [key, t] : want) expect_close(got.at(key), t, 0, 0);
  }
}

}  // namespace

TEST_CASE("built-in nets survive hub -> TensorFlow SavedModel -> hub") {
  TempDir dir("tf_roundtrip");
  const bool large = std::getenv("HUB_TEST_LARGE_NETS") != nullptr;
  const std::set<std::string> representative = {
      "lenet",        "cifarnet",     "mnist",        "cifar10",      "inception_v1",
      "inception_v3", "resnet_v1_50", "resnet_v2_50", "mobilenet_v1", "mobilenet_v1_025_128"};
  for (const std::string& name : nets::net_names()) {
    if (!large && !representative.count(name)) {
      MESSAGE(name << ": set HUB_TEST_LARGE_NETS=1 to include it");
      continue;
    }
    saved_model_round_trip(name, dir);
    std::error_code ec;  // the files of one net at a time
    for (const auto& e : fs::directory_iterator(dir.path)) fs::remove_all(e.path(), ec);
  }
}

TEST_CASE("a quantization-aware export survives hub -> TensorFlow SavedModel -> hub") {
  TempDir dir("tf_roundtrip_qat");
  saved_model_round_trip("lenet", dir, true);
  saved_model_round_trip("mobilenet_v1_025_128", dir, true);
}
