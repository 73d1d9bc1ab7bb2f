// Every built-in network, exported as `hub export` does (initial weights),
// converted to ONNX (hub convert --to onnx) and imported back (hub import),
// gives the module's own outputs (1e-5 relative) — and ONNX Runtime, running
// the converted file, gives them too (1e-4 relative).
//
// By default the nets of default_test_nets() run (tests/modules/default_nets.h:
// one per builder, small images); the others (15-40 s each here: the large
// ones write and read 0.17-0.58 GB of weights twice) run when
// HUB_TEST_LARGE_NETS=1 is set. Their layers but
// Inception-ResNet v2's scaled residual sums (3x3 SAME and 7x7 VALID
// convolutions, max pooling, ReLU, squeeze, residual adds, 1x7/7x1
// factorized convolutions, separable convolutions) are covered by the
// default set.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <map>

#include "default_nets.h"
#include "hub/interop/onnx/exporter.h"
#include "hub/interop/onnx/importer.h"
#include "hub/interop/onnx_testutil.h"
#include "hub/module/module.h"
#include "modules/nets/nets.h"
#include "modules/train/train.h"
#include "testutil.h"

namespace fs = std::filesystem;
using namespace hub;
using namespace hub::testing;

namespace {

int64_t onnx_test_size(const std::string& name) {
  auto it = default_test_nets().find(name);
  return it == default_test_nets().end() ? 0 : it->second;
}

void onnx_round_trip(const std::string& name, const TempDir& dir, bool with_ort) {
  INFO("net " << name);
  train::ExportConfig c;
  c.model_name = name;
  c.num_classes = 7;
  c.image_size = onnx_test_size(name);
  c.output_dir = (dir.path / name).string();
  train::export_module(c);
  ModuleSpec spec = load_module_spec(c.output_dir);
  const std::string onnx = (dir.path / (name + ".onnx")).string();
  onnx_interop::OnnxExportOptions eo;
  eo.signature = "logits";
  onnx_interop::export_onnx(spec, onnx, eo);
  ModuleSpec back = onnx_interop::import_onnx(onnx);
  auto [h, w] = get_expected_image_size(spec);
  Tensor images = random_tensor({2, h, w, get_num_image_channels(spec)}, 17, 0, 1);
  Tensor want = run_signature(spec, "logits", {{"images", images}}, "onednn").at("default");
  Tensor got = run_signature(back, "default", {{"images", images}}, "onednn").at("default");
  expect_close(got, want, 1e-5, 1e-5);
  if (with_ort) {
    std::vector<Tensor> ort = run_onnx_runtime(onnx, {{"images", images}}, dir.path / (name + ".ort"));
    REQUIRE(ort.size() == 1);
    // Two independent float32 implementations (ONNX Runtime's MLAS, oneDNN)
    // through up to ~100 layers of random, unnormalised weights, whose
    // activations grow to 1e3..1e10: they agree to a few 1e-4 relative (on
    // AVX2, inception_v3's logits to 2.3e-4).
    expect_close(ort[0], want, 1e-5, 5e-4);
  }
}

}  // namespace

TEST_CASE("built-in nets survive hub -> ONNX -> hub, and ONNX Runtime agrees") {
  TempDir dir("onnx_roundtrip");
  const bool ort = onnx_references_available();
  if (!ort) MESSAGE("ONNX Runtime comparison skipped: " << onnx_references_missing());
  const bool large = test_all_nets();
  int skipped = 0;
  for (const std::string& name : nets::net_names()) {
    if (!large && !default_test_nets().count(name)) {
      ++skipped;
      continue;
    }
    onnx_round_trip(name, dir, ort);
    std::error_code ec;  // the files of one net at a time
    for (const auto& e : fs::directory_iterator(dir.path)) fs::remove_all(e.path(), ec);
  }
  if (skipped > 0) MESSAGE(skipped << " variants and large nets skipped: set HUB_TEST_LARGE_NETS=1 to include them");
}
