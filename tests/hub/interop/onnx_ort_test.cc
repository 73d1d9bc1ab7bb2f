// ONNX Runtime as the independent reference: models written with Debian's
// python3-onnx in PyTorch's export style (tests/hub/interop/make_onnx_models.py:
// asymmetric pads, ceil_mode, count_include_pad, groups, Clip, HardSwish,
// Resize, Shape->Reshape chains) are run by ONNX Runtime for Node
// (tests/js/run_ort.js) and by hub after import, on both CPU backends;
// outputs agree within 1e-4 relative.
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

TEST_CASE("an int8 module exports as an ONNX QDQ model that ONNX Runtime runs like hub") {
  HUB_SKIP_UNLESS(onnx_references_available(), onnx_references_missing());
  TempDir dir("onnx_ort_int8");
  QuantizeOptions o;
  o.per_channel = true;
  const ModuleSpec q = quantize_module(quantize_test::small_net(), quantize_test::images(32, 5), o);
  const std::string model = (dir.path / "int8.onnx").string();
  onnx_interop::export_onnx(q, model);
  // Every convolution and Gemm reads its weights straight from a DequantizeLinear of an int8
  // initializer (with the channel axis of ONNX's layout), the QDQ pattern runtimes fuse.
  ::onnx::ModelProto m;
  REQUIRE(m.ParseFromString(read_file_bytes(model)));
  std::map<std::string, const ::onnx::NodeProto*> producer;
  for (const auto& n : m.graph().node()) producer[n.output(0)] = &n;
  std::map<std::string, int> int8_initializers;
  for (const auto& t : m.graph().initializer())
    int8_initializers[t.name()] = t.data_type() == ::onnx::TensorProto::INT8;
  int layers = 0;
  for (const auto& n : m.graph().node()) {
    if (n.op_type() != "Conv" && n.op_type() != "Gemm") continue;
    ++layers;
    const ::onnx::NodeProto* w = producer.at(n.input(1));
    CHECK(w->op_type() == "DequantizeLinear");
    CHECK(int8_initializers[w->input(0)] == 1);
    for (const auto& a : w->attribute())
      if (a.name() == "axis") CHECK(a.i() == (n.op_type() == "Conv" ? 0 : 1));
  }
  CHECK(layers == 4);
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
}
