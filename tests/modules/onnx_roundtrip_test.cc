// Every built-in network, exported as `hub export` does (initial weights),
// converted to ONNX (hub convert --to onnx) and imported back (hub import),
// gives the module's own outputs (1e-5 relative) — and ONNX Runtime, running
// the converted file, gives them too (1e-4 relative).
//
// The nets with over 50 M parameters (AlexNet and the VGGs: 0.25-0.55 GB of
// weights written and read twice, about 40 s each here) run when
// HUB_TEST_LARGE_NETS=1 is set; their layers (3x3 SAME and 7x7 VALID
// convolutions, max pooling, ReLU, squeeze) are covered by the other nets.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>

#include "hub/interop/onnx/exporter.h"
#include "hub/interop/onnx/importer.h"
#include "hub/module/module.h"
#include "modules/nets/nets.h"
#include "modules/train/train.h"
#include "hub/interop/onnx_testutil.h"
#include "testutil.h"

namespace fs = std::filesystem;
using namespace hub;
using namespace hub::testing;

namespace {

// The smallest image each net takes (keeps the suite fast); 0 = its own size.
int64_t test_size(const std::string& name) {
  if (name.rfind("mobilenet", 0) == 0 || name.rfind("resnet", 0) == 0) return 64;
  return 0;
}

void round_trip(const std::string& name, const TempDir& dir, bool with_ort) {
  INFO("net " << name);
  train::ExportConfig c;
  c.model_name = name;
  c.num_classes = 7;
  c.image_size = test_size(name);
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
    expect_close(ort[0], want, 1e-5, 1e-4);
  }
}

}  // namespace

TEST_CASE("built-in nets survive hub -> ONNX -> hub, and ONNX Runtime agrees") {
  TempDir dir("onnx_roundtrip");
  const bool ort = onnx_references_available();
  if (!ort) MESSAGE("ONNX Runtime comparison skipped: " << onnx_references_missing());
  const bool large = std::getenv("HUB_TEST_LARGE_NETS") != nullptr;
  for (const std::string& name : nets::net_names()) {
    if (!large && (name == "alexnet_v2" || name.rfind("vgg", 0) == 0)) {
      MESSAGE(name << ": set HUB_TEST_LARGE_NETS=1 to include it");
      continue;
    }
    round_trip(name, dir, ort);
    std::error_code ec;  // the files of one net at a time
    for (const auto& e : fs::directory_iterator(dir.path)) fs::remove_all(e.path(), ec);
  }
}
