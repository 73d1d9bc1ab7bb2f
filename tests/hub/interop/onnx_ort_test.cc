// ONNX Runtime as the independent reference: models written with Debian's
// python3-onnx in PyTorch's export style (tests/hub/interop/make_onnx_models.py:
// asymmetric pads, ceil_mode, count_include_pad, groups, Clip, HardSwish,
// Resize, Shape->Reshape chains) are run by ONNX Runtime for Node
// (tests/js/run_ort.js) and by hub after import, on both CPU backends;
// outputs agree within 1e-4 relative.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "hub/backend/backend.h"
#include "hub/core/fileio.h"
#include "hub/graph/session.h"
#include "hub/interop/onnx/importer.h"
#include "onnx_testutil.h"
#include "subprocess.h"
#include "testutil.h"

namespace fs = std::filesystem;
using namespace hub;
using namespace hub::testing;

TEST_CASE("ONNX Runtime agrees with hub on PyTorch-style models") {
  HUB_SKIP_UNLESS(onnx_references_available(), onnx_references_missing());
  TempDir dir("onnx_ort");
  write_pytorch_style_models(dir.path);
  const nlohmann::json manifest = nlohmann::json::parse(read_file_bytes((dir.path / "manifest.json").string()));
  for (const auto& [name, m] : manifest.items()) {
    INFO("model " << name);
    const std::string model = (dir.path / (name + ".onnx")).string();
    std::vector<int64_t> dims = m["shape"].get<std::vector<int64_t>>();
    Tensor input = read_float_bin(dir.path / (name + ".input.bin"), Shape(dims));
    std::vector<Tensor> want = run_onnx_runtime(model, {{m["input"].get<std::string>(), input}}, dir.path / name);
    REQUIRE(want.size() == 1);
    ModuleSpec spec = onnx_interop::import_onnx(model);
    for (const char* backend : {"reference", "onednn"}) {
      INFO("backend " << backend);
      TensorMap out = run_signature(spec, "default", {{m["input"].get<std::string>(), input}}, backend);
      expect_close(out.at(m["output"].get<std::string>()), want[0], 1e-5, 1e-4);
    }
  }
}
