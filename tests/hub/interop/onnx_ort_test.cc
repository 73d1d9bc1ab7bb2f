// ONNX Runtime as the independent reference: models written with Debian's
// python3-onnx in PyTorch's export style (tests/hub/interop/make_onnx_models.py:
// asymmetric pads, ceil_mode, count_include_pad, groups, Clip, HardSwish,
// Resize, Shape->Reshape chains, a small Vision Transformer, weights stored as
// float16, bfloat16 and double) are run by ONNX Runtime for Node
// (tests/js/run_ort.js) and by hub after import, on both CPU backends, and by
// ONNX Runtime again after hub converts them back to ONNX; outputs agree
// within 1e-4 relative.
#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "../module/quantize_testutil.h"
#include "hub/backend/backend.h"
#include "hub/core/fileio.h"
#include "hub/graph/session.h"
#include "hub/interop/onnx/exporter.h"
#include "hub/interop/onnx/importer.h"
#include "hub/module/quantize.h"
#include "onnx_testutil.h"
#include "subprocess.h"
#include "testutil.h"

namespace fs = std::filesystem;
using namespace hub;
using namespace hub::testing;

namespace {

// The model at `path`, checked to have `layers` Conv/Gemm nodes, each reading its weights through
// a DequantizeLinear of an int8 initializer (axis: ONNX's output channel) and its bias through one
// of an int32 initializer (scale input_scale * weight_scale): the QDQ pattern runtimes fuse into
// integer kernels.
::onnx::ModelProto check_qdq_layers(const std::string& path, int layers) {
  ::onnx::ModelProto m;
  REQUIRE(m.ParseFromString(read_file_bytes(path)));
  std::map<std::string, const ::onnx::NodeProto*> producer;
  for (const auto& n : m.graph().node()) producer[n.output(0)] = &n;
  std::map<std::string, int> initializer_type;
  for (const auto& t : m.graph().initializer()) initializer_type[t.name()] = t.data_type();
  int found = 0;
  for (const auto& n : m.graph().node()) {
    if (n.op_type() != "Conv" && n.op_type() != "Gemm") continue;
    ++found;
    INFO(n.op_type() << " " << n.output(0));
    REQUIRE(n.input_size() == 3);
    for (int i : {1, 2}) {
      const ::onnx::NodeProto* dq = producer.at(n.input(i));
      CHECK(dq->op_type() == "DequantizeLinear");
      CHECK(initializer_type[dq->input(0)] == (i == 1 ? ::onnx::TensorProto::INT8 : ::onnx::TensorProto::INT32));
      for (const auto& a : dq->attribute())
        if (a.name() == "axis") CHECK(a.i() == (i == 1 && n.op_type() == "Gemm" ? 1 : 0));
    }
  }
  CHECK(found == layers);
  return m;
}

}  // namespace

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
    CHECK(want[0].num_elements() > 0);
    if (name == "detector") CHECK(want[0].shape()[0] >= 3);  // several boxes kept, of several classes
    ModuleSpec spec = onnx_interop::import_onnx(model);
    for (const char* backend : {"reference", "onednn"}) {
      INFO("backend " << backend);
      TensorMap out = run_signature(spec, "default", {{m["input"].get<std::string>(), input}}, backend);
      expect_close(out.at(m["output"].get<std::string>()), want[0], 1e-5, 1e-4);
    }
    // Converted back to ONNX (`hub convert --to onnx`), ONNX Runtime computes the same again.
    const std::string back = (dir.path / (name + ".back.onnx")).string();
    onnx_interop::export_onnx(spec, back);
    std::vector<Tensor> again =
        run_onnx_runtime(back, {{m["input"].get<std::string>(), input}}, dir.path / (name + ".back"));
    REQUIRE(again.size() == 1);
    expect_close(again[0], want[0], 1e-5, 1e-4);
  }
}

TEST_CASE("an int8 module exports as an ONNX QDQ model that ONNX Runtime runs like hub") {
  HUB_SKIP_UNLESS(onnx_references_available(), onnx_references_missing());
  TempDir dir("onnx_ort_int8");
  QuantizeOptions o;
  o.per_channel = true;
  const ModuleSpec q = quantize_module(quantize_test::small_net(), quantize_test::images(32, 5), o);
  const std::string model = (dir.path / "int8.onnx").string();
  onnx_interop::export_onnx(q, model);
  const ::onnx::ModelProto m = check_qdq_layers(model, 4);
  for (const auto& n : m.graph().node()) CHECK(n.op_type() != "Add");
  std::set<std::string> read;
  for (const auto& n : m.graph().node())
    for (const std::string& i : n.input()) read.insert(i);
  for (const auto& t : m.graph().initializer()) CHECK_MESSAGE(read.count(t.name()), t.name() << " is unused");
  const Tensor x = random_tensor({4, 16, 16, 3}, 77, 0.0f, 1.0f);
  const std::vector<Tensor> ort = run_onnx_runtime(model, {{"images", x}}, dir.path / "int8");
  Module hub_int8(q);
  const Tensor want = hub_int8({{"images", x}}).at("default");
  REQUIRE(ort.size() == 2);
  // Outputs in key order: default (probabilities), logits. Both compute in int8; rounding may
  // move an 8-bit value by a step, so the probabilities agree to about a percent.
  expect_close(ort[0], want, 0.02, 0.0);
  // Imported back, the QDQ model runs like the int8 module it came from.
  expect_close(run_signature(onnx_interop::import_onnx(model), "default", {{"images", x}}, "onednn").at("default"),
               want, 0.02, 0.0);
}

TEST_CASE("ONNX Runtime's own int8 form of the float model (python3-onnx QDQ) runs like hub's int8 module") {
  HUB_SKIP_UNLESS(onnx_references_available(), onnx_references_missing());
  TempDir dir("onnx_ort_qdq");
  QuantizeOptions o;
  o.per_channel = true;
  const ModuleSpec f = quantize_test::small_net();
  const ModuleSpec q = quantize_module(f, quantize_test::images(32, 5), o);
  onnx_interop::export_onnx(f, (dir.path / "float.onnx").string());
  // The activation records as `hub info --json` prints them; the script reads only these.
  nlohmann::json activations = nlohmann::json::array();
  for (const QuantizedActivation& a : q.quantization()->activations)
    activations.push_back({{"tensor", a.tensor}, {"scale", a.scale}, {"zero_point", a.zero_point}});
  write_file_atomic((dir.path / "info.json").string(),
                    nlohmann::json{{"quantization", {{"activations", activations}}}}.dump());
  INFO("activations " << activations.dump());
  const fs::path model = dir.path / "ort_int8.onnx";
  const std::string summary = write_ort_qdq_model(dir.path / "float.onnx", dir.path / "info.json", model);
  // The pointwise layer's output, its average pool and the transpose before the reshape take the
  // reshape's parameters (hub shares them the same way).
  CHECK_MESSAGE(summary.find("4 int8 layers, 4 activations from") != std::string::npos, summary);
  CHECK_MESSAGE(summary.find(", 3 sharing a later one's parameters") != std::string::npos, summary);

  // ONNX Runtime's pattern, and each layer reads a dequantized input too; no batch norm, bias Add
  // or Relu6 Clip is left (all folded or implied).
  const ::onnx::ModelProto m = check_qdq_layers(model.string(), 4);
  std::set<std::string> dequantized;
  for (const auto& n : m.graph().node()) {
    CHECK(n.op_type() != "BatchNormalization");
    CHECK(n.op_type() != "Add");
    CHECK_MESSAGE(n.op_type() != "Clip", n.output(0) << " is still clipped");
    if (n.op_type() == "DequantizeLinear") dequantized.insert(n.output(0));
    if (n.op_type() == "Conv" || n.op_type() == "Gemm") CHECK(dequantized.count(n.input(0)) == 1);
  }

  const Tensor x = random_tensor({4, 16, 16, 3}, 77, 0.0f, 1.0f);
  const std::vector<Tensor> ort = run_onnx_runtime(model.string(), {{"images", x}}, dir.path / "ort_int8");
  REQUIRE(ort.size() == 2);
  // Same activation grid, weights quantized on each side from the same float weights: the
  // probabilities agree to about a percent (a rounding may move an 8-bit value by a step).
  expect_close(ort[0], Module(q)({{"images", x}}).at("default"), 0.02, 0.0);
}
