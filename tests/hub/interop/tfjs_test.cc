// hub/interop/tf/tfjs: TensorFlow.js graph models. TensorFlow.js itself is
// the reference: tests/js/tfjs_graph_model.js writes a graph model using
// every TensorFlow op hub maps (weights sharded and partly quantized to
// uint8, uint16 and float16) and runs it with TF.js's GraphModel; hub
// imports the model.json and must give the same outputs on both CPU backends
// (1e-5 relative). Dequantization against values worked out by hand
// (uint8/uint16 affine, float16 including subnormals and the largest
// normal, int32 rounding halves up), and bad files: a shard path leaving the
// folder, absolute or missing, too few or too many bytes, nesting too deep,
// malformed JSON, a layers model, an unknown quantization or weight dtype, a
// Const without a weight: each a clear error.
#include "hub/interop/tf/tfjs.h"

#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "hub/core/fileio.h"
#include "hub/interop/onnx/exporter.h"
#include "onnx_testutil.h"
#include "subprocess.h"
#include "testutil.h"

namespace fs = std::filesystem;
using namespace hub;
using namespace hub::testing;
using nlohmann::json;

namespace {

std::string tfjs_missing() {
  if (!fs::exists(kJsDir / "node_modules" / "@tensorflow" / "tfjs"))
    return "TensorFlow.js is not installed (npm ci --ignore-scripts in tests/js)";
  if (!fs::exists("/usr/bin/node") && !fs::exists("/usr/local/bin/node")) return "node is not installed";
  return "";
}

void write(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

template <class T>
std::string raw(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

json shape_json(const std::vector<int64_t>& dims) {
  json d = json::array();
  for (int64_t x : dims) d.push_back({{"size", std::to_string(x)}});
  return {{"dim", d}};
}

json node(const std::string& name, const std::string& op, std::vector<std::string> inputs, json attr = json::object()) {
  return {{"name", name}, {"op", op}, {"input", inputs}, {"attr", attr}};
}

json const_node(const std::string& name, const std::string& dtype, const std::vector<int64_t>& dims) {
  return node(
      name, "Const", {},
      {{"dtype", {{"type", dtype}}}, {"value", {{"tensor", {{"dtype", dtype}, {"tensorShape", shape_json(dims)}}}}}});
}

// model.json: y_k = x + c_k for the float weights, and Identity of the int
// weight; weights as given (one group, one shard "w.bin").
json quantized_model(const json& weights) {
  const json T = {{"type", "DT_FLOAT"}};
  json nodes = json::array();
  nodes.push_back(node("x", "Placeholder", {}, {{"dtype", T}, {"shape", {{"shape", shape_json({3})}}}}));
  for (const char* w : {"u8", "u16", "f16"}) {
    nodes.push_back(const_node(w, "DT_FLOAT", {3}));
    nodes.push_back(node(std::string("y_") + w, "AddV2", {"x", w}, {{"T", T}}));
  }
  nodes.push_back(const_node("i32", "DT_INT32", {4}));
  nodes.push_back(node("y_i32", "Identity", {"i32"}, {{"T", {{"type", "DT_INT32"}}}}));
  return {{"format", "graph-model"},
          {"modelTopology", {{"node", nodes}}},
          {"weightsManifest", json::array({{{"paths", {"w.bin"}}, {"weights", weights}}})}};
}

json quantized_weights() {
  return json::array({
      {{"name", "u8"},
       {"shape", {3}},
       {"dtype", "float32"},
       {"quantization", {{"dtype", "uint8"}, {"min", -1.0}, {"scale", 0.5}}}},
      {{"name", "u16"},
       {"shape", {3}},
       {"dtype", "float32"},
       {"quantization", {{"dtype", "uint16"}, {"min", 0.25}, {"scale", 0.001}}}},
      {{"name", "f16"}, {"shape", {3}}, {"dtype", "float32"}, {"quantization", {{"dtype", "float16"}}}},
      {{"name", "i32"},
       {"shape", {4}},
       {"dtype", "int32"},
       {"quantization", {{"dtype", "uint8"}, {"min", -2.0}, {"scale", 0.5}}}},
  });
}

std::string quantized_bytes() {
  return raw<uint8_t>({0, 1, 255}) + raw<uint16_t>({0, 1000, 65535}) + raw<uint16_t>({0x3c00, 0x8001, 0x7bff}) +
         raw<uint8_t>({1, 3, 4, 5});
}

std::string write_model(const fs::path& dir, const json& model, const std::string& bin) {
  fs::create_directories(dir);
  write(dir / "model.json", model.dump());
  write(dir / "w.bin", bin);
  return (dir / "model.json").string();
}

}  // namespace

TEST_CASE("TensorFlow.js agrees with hub on a graph model using every mapped op") {
  HUB_SKIP_UNLESS(tfjs_missing().empty(), tfjs_missing());
  TempDir dir("tfjs");
  Child c = Child::spawn({"node", (kJsDir / "tfjs_graph_model.js").string(), dir.path.string()});
  ChildResult r = c.wait(120, "TensorFlow.js (tests/js/tfjs_graph_model.js)");
  REQUIRE_MESSAGE((r.exited && r.code == 0), "tfjs_graph_model.js failed: " << r.output);
  const std::string model = dir / "model/model.json";
  REQUIRE(tf::is_tfjs_graph_model(model));
  ModuleSpec spec = tf::import_tfjs(model);
  // Weights of weight inputs became variables, dequantized.
  CHECK(spec.weights().count("w1"));
  CHECK(spec.weights().count("w3"));
  const json outputs = json::parse(read_file_bytes(dir / "outputs.json"));
  const Tensor input = read_float_bin(dir.path / "input.bin", {2, 10, 10, 3});
  // Tokens of run-time batch and length: both dims unknown in the signature.
  const Tensor tokens = read_float_bin(dir.path / "tokens.bin", {2, 5, 4});
  CHECK(spec.input_info().at("tokens").shape == Shape{kUnknownDim, kUnknownDim, 4});
  for (const char* backend : {"reference", "onednn"}) {
    INFO("backend " << std::string(backend));
    TensorMap got = run_signature(spec, "default", {{"images", input}, {"tokens", tokens}}, backend);
    REQUIRE(got.size() == outputs.size());
    for (const auto& [name, o] : outputs.items()) {
      INFO("output " << name);
      Tensor want =
          read_float_bin(dir.path / o["file"].get<std::string>(), Shape(o["shape"].get<std::vector<int64_t>>()));
      // The reference kernels are the semantic check; oneDNN's vectorised
      // exp/log (LogSoftmax) are within 1e-5 absolute, as tests/hub/ops check.
      expect_close(got.at(name), want, std::string(backend) == "reference" ? 1e-6 : 1e-5, 1e-5);
    }
  }
  // TensorFlow 1 enters the inner loop's w through the outer loop's Enter (an Enter of an Enter), a form
  // TensorFlow.js cannot run: in that form the graph computes what TensorFlow.js computed above.
  const json original = json::parse(read_file_bytes(model));
  json edited = original;
  for (json& n : edited["modelTopology"]["node"])
    if (n["name"] == "v1n/while/inner/w") n["input"] = {"v1n/while/w/Enter"};
  write(dir / "model/model.json", edited.dump());
  const TensorMap chained =
      run_signature(tf::import_tfjs(model), "default", {{"images", input}, {"tokens", tokens}}, "reference");
  expect_close(chained.at("v1nest"), read_float_bin(dir / "v1nest.bin", Shape{2, 12}), 1e-6, 1e-5);
  // A TensorArray of unknown element shape written in a loop, no gather of it stating one: its rank is
  // unknown where the loop writes it.
  edited = original;
  for (json& n : edited["modelTopology"]["node"])
    if (n["name"] == "v1rnn") n["attr"]["element_shape"] = {{"shape", {{"unknownRank", true}}}};
  write(dir / "model/model.json", edited.dump());
  expect_error(
      Code::kUnimplemented, [&] { tf::import_tfjs(model); },
      "a TensorArray of unknown element shape written in a loop needs element_shape");
}

TEST_CASE("a TF.js graph model converted to ONNX computes in ONNX Runtime what TensorFlow.js computes") {
  // tfjs -> hub -> `hub convert --to onnx` -> ONNX Runtime, against TensorFlow.js on the same inputs: every
  // mapped op's export, the control flow (loops, a TensorList loop, Ifs, a TensorFlow 1 cond) included.
  HUB_SKIP_UNLESS(tfjs_missing().empty(), tfjs_missing());
  HUB_SKIP_UNLESS(onnx_references_available(), onnx_references_missing());
  TempDir dir("tfjs_onnx");
  Child c = Child::spawn({"node", (kJsDir / "tfjs_graph_model.js").string(), dir.path.string()});
  ChildResult r = c.wait(120, "TensorFlow.js (tests/js/tfjs_graph_model.js)");
  REQUIRE_MESSAGE((r.exited && r.code == 0), "tfjs_graph_model.js failed: " << r.output);
  const ModuleSpec spec = tf::import_tfjs(dir / "model/model.json");
  const std::string onnx = (dir.path / "model.onnx").string();
  onnx_interop::export_onnx(spec, onnx);
  ::onnx::ModelProto m;
  REQUIRE(m.ParseFromString(read_file_bytes(onnx)));
  const Tensor input = read_float_bin(dir.path / "input.bin", {2, 10, 10, 3});
  const Tensor tokens = read_float_bin(dir.path / "tokens.bin", {2, 5, 4});
  const std::vector<Tensor> got = run_onnx_runtime(onnx, {{"images", input}, {"tokens", tokens}}, dir.path / "ort");
  REQUIRE(static_cast<int>(got.size()) == m.graph().output_size());
  const json outputs = json::parse(read_file_bytes(dir / "outputs.json"));
  for (int i = 0; i < m.graph().output_size(); ++i) {
    const std::string name = m.graph().output(i).name();
    INFO("output " << name);
    REQUIRE(outputs.contains(name));
    const json& o = outputs[name];
    // The int outputs come back as float32 (exact); ONNX Runtime's exp, tanh and convolutions differ from
    // TensorFlow.js's in the last bits.
    expect_close(got[static_cast<size_t>(i)],
                 read_float_bin(dir.path / o["file"].get<std::string>(), Shape(o["shape"].get<std::vector<int64_t>>())),
                 1e-5, 1e-4);
  }
}

TEST_CASE("TF.js weights dequantize as TensorFlow.js does, worked by hand") {
  TempDir dir("tfjs_quant");
  ModuleSpec spec = tf::import_tfjs(write_model(dir.path, quantized_model(quantized_weights()), quantized_bytes()));
  Module m(spec);
  TensorMap out = m({{"x", Tensor::zeros(DType::kFloat32, {3})}});
  // q * scale + min.
  expect_close(out.at("y_u8"), Tensor::floats({-1.0f, -0.5f, 126.5f}), 0, 0);
  expect_close(
      out.at("y_u16"),
      Tensor::floats({0.25f, static_cast<float>(1000 * 0.001 + 0.25), static_cast<float>(65535 * 0.001 + 0.25)}), 0, 0);
  // 0x3c00 = 1; 0x8001 = -2^-24 (the smallest subnormal); 0x7bff = 65504.
  expect_close(out.at("y_f16"), Tensor::floats({1.0f, -5.9604644775390625e-08f, 65504.0f}), 0, 0);
  // round(q * 0.5 - 2), halves up: -1.5 -> -1, -0.5 -> 0, 0 -> 0, 0.5 -> 1.
  CHECK(out.at("y_i32").to_vector<int32_t>() == std::vector<int32_t>{-1, 0, 0, 1});
  CHECK(spec.signature().outputs.size() == 4);  // the sinks, under their node names
  CHECK(std::get<std::string>(spec.attached().at("source_format")) == "tfjs_graph_model");
}

TEST_CASE("bad TF.js models: each a clear error naming model.json") {
  TempDir dir("tfjs_bad");
  const json good = quantized_model(quantized_weights());
  const std::string bin = quantized_bytes();
  int k = 0;
  auto model = [&](const json& m, const std::string& b) { return write_model(dir.path / std::to_string(k++), m, b); };
  auto with_paths = [&](const json& paths) {
    json m = good;
    m["weightsManifest"][0]["paths"] = paths;
    return m;
  };

  expect_error(
      Code::kInvalidArgument, [&] { tf::import_tfjs(model(with_paths({"../w.bin"}), bin)); },
      "shard path '../w.bin' must be relative and stay in the model's folder");
  expect_error(
      Code::kInvalidArgument, [&] { tf::import_tfjs(model(with_paths({"/etc/passwd"}), bin)); },
      "shard path '/etc/passwd' must be relative");
  {
    const std::string m = model(with_paths({"link.bin"}), bin);
    fs::create_symlink("/etc/hostname", fs::path(m).parent_path() / "link.bin");
    expect_error(
        Code::kInvalidArgument, [&] { tf::import_tfjs(m); }, "shard 'link.bin' leaves the model's folder");
  }
  expect_error(
      Code::kNotFound,
      [&] {
        tf::import_tfjs(model(with_paths({"w.bin", "w2.bin"}), bin));
      },
      "shard 'w2.bin' is not a regular file");
  expect_error(
      Code::kCorruption, [&] { tf::import_tfjs(model(good, bin.substr(0, bin.size() - 1))); },
      "weight 'i32': the group's shards hold 18 bytes, this weight needs bytes 15 to 19");
  expect_error(
      Code::kCorruption, [&] { tf::import_tfjs(model(good, bin + "x")); },
      "weight group 0: its shards hold 20 bytes, its weights need 19");
  {
    json m = good;
    m["weightsManifest"][0]["weights"][2]["quantization"]["dtype"] = "int4";
    expect_error(
        Code::kUnimplemented, [&] { tf::import_tfjs(model(m, bin)); }, "quantization dtype 'int4' is not supported");
    m = good;
    m["weightsManifest"][0]["weights"][0]["dtype"] = "string";
    expect_error(
        Code::kUnimplemented, [&] { tf::import_tfjs(model(m, bin)); }, "weight 'u8': dtype 'string' is not supported");
    m = good;
    m["weightsManifest"][0]["weights"].erase(3);
    expect_error(
        Code::kCorruption, [&] { tf::import_tfjs(model(m, bin.substr(0, 15))); },
        "Const node 'i32' has no weight in weightsManifest");
    m = good;
    m["format"] = "layers-model";
    expect_error(
        Code::kCorruption, [&] { tf::import_tfjs(model(m, bin)); }, "format is 'layers-model', not 'graph-model'");
    CHECK_FALSE(tf::is_tfjs_graph_model(dir / std::to_string(k - 1) + "/model.json"));
    m = good;
    m["modelTopology"]["node"][2]["op"] = "Softsign";
    expect_error(
        Code::kUnimplemented, [&] { tf::import_tfjs(model(m, bin)); },
        "node 'y_u8' (Softsign): op Softsign is not supported");
  }
  {
    // 100 nested arrays inside an otherwise valid model.
    std::string deep = good.dump();
    deep.insert(deep.size() - 1, ",\"userDefinedMetadata\":" + std::string(100, '[') + std::string(100, ']'));
    fs::create_directories(dir.path / "deep");
    write(dir.path / "deep/model.json", deep);
    expect_error(
        Code::kCorruption, [&] { tf::import_tfjs(dir / "deep/model.json"); }, "JSON nested deeper than 32 levels");
    write(dir.path / "deep/model.json", "{\"format\": \"graph-model\", ");
    expect_error(
        Code::kCorruption, [&] { tf::import_tfjs(dir / "deep/model.json"); }, "not valid JSON at byte");
  }
}

TEST_CASE("TensorFlow 1 control flow worked by hand: a run-time cond in a while loop; a loop that is not one") {
  // i = 0, a = 1; while i < 3: a = cond(i < 2, a * 3, a - 1); i += 1 — so a = 3, 9, 8. The bad form has the
  // loop's Switch read the Enter instead of the Merge.
  TempDir dir("tfjs_tf1_control_flow");
  const json i32 = {{"type", "DT_INT32"}}, b = {{"type", "DT_BOOL"}};
  auto node = [&](const std::string& name, const std::string& op, const json& inputs, json attr = json::object()) {
    if (!attr.contains("T") && op != "LoopCond") attr["T"] = i32;
    return json{{"name", name}, {"op", op}, {"input", inputs}, {"attr", attr}};
  };
  auto constant = [&](const std::string& name, const json& inputs, int value) {
    return json{
        {"name", name},
        {"op", "Const"},
        {"input", inputs},
        {"attr",
         {{"dtype", i32},
          {"value", {{"tensor", {{"dtype", "DT_INT32"}, {"tensorShape", json::object()}, {"intVal", {value}}}}}}}}};
  };
  auto enter = [&](const std::string& name, const std::string& from, bool is_constant) {
    return node(name, "Enter", {from}, {{"frame_name", {{"s", "ZnJhbWU="}}}, {"is_constant", {{"b", is_constant}}}});
  };
  const json merge2 = {{"N", {{"i", "2"}}}};
  auto model = [&](const std::string& switch_input) {
    const json nodes = {
        constant("zero", json::array(), 0), constant("one", json::array(), 1), constant("three", json::array(), 3),
        enter("f/Enter", "zero", false), enter("f/Enter_1", "one", false), enter("f/Limit", "three", true),
        node("f/Merge", "Merge", {"f/Enter", "f/NextIteration"}, merge2),
        node("f/Merge_1", "Merge", {"f/Enter_1", "f/NextIteration_1"}, merge2),
        node("f/Less", "Less", {"f/Merge", "f/Limit"}), node("f/LoopCond", "LoopCond", {"f/Less"}),
        node("f/Switch", "Switch", {switch_input, "f/LoopCond"}),
        node("f/Switch_1", "Switch", {"f/Merge_1", "f/LoopCond"}), node("f/Identity", "Identity", {"f/Switch:1"}),
        node("f/Identity_1", "Identity", {"f/Switch_1:1"}),
        // The cond, its predicate computed from the loop variable.
        constant("f/two", {"^f/Identity"}, 2), node("f/p", "Less", {"f/Identity", "f/two"}),
        node("f/c/Switch", "Switch", {"f/p", "f/p"}, {{"T", b}}),
        node("f/c/switch_t", "Identity", {"f/c/Switch:1"}, {{"T", b}}),
        node("f/c/switch_f", "Identity", {"f/c/Switch"}, {{"T", b}}),
        node("f/c/pred_id", "Identity", {"f/p"}, {{"T", b}}),
        node("f/c/Switch_1", "Switch", {"f/Identity_1", "f/c/pred_id"}), constant("f/c/k", {"^f/c/switch_t"}, 3),
        node("f/c/mul", "Mul", {"f/c/Switch_1:1", "f/c/k"}), constant("f/c/d", {"^f/c/switch_f"}, 1),
        node("f/c/sub", "Sub", {"f/c/Switch_1", "f/c/d"}), node("f/c/Merge", "Merge", {"f/c/sub", "f/c/mul"}, merge2),
        constant("f/one", {"^f/Identity"}, 1), node("f/add", "AddV2", {"f/Identity", "f/one"}),
        node("f/NextIteration", "NextIteration", {"f/add"}), node("f/NextIteration_1", "NextIteration", {"f/c/Merge"}),
        node("f/Exit", "Exit", {"f/Switch"}), node("f/Exit_1", "Exit", {"f/Switch_1"}),
        node("y", "Identity", {"f/Exit_1"})};
    return json{{"format", "graph-model"},
                {"signature", {{"outputs", {{"y:0", {{"name", "y:0"}, {"dtype", "DT_INT32"}}}}}}},
                {"modelTopology", {{"node", nodes}}},
                {"weightsManifest", json::array()}};
  };
  Module good(tf::import_tfjs(write_model(dir.path / "good", model("f/Merge"), "")));
  CHECK(good(TensorMap{}).at("y").to_vector<int32_t>() == std::vector<int32_t>{8});
  expect_error(
      Code::kInvalidArgument, [&] { tf::import_tfjs(write_model(dir.path / "bad", model("f/Enter"), "")); },
      "the TensorFlow 1 while loop 'frame': its Switch 'f/Switch' does not read a Merge");
}

TEST_CASE("TensorFlow 1 TensorArrays outside loops, worked by hand: scatters, reads, a write, size, gather") {
  TempDir dir("tfjs_tensor_arrays");
  const json f32 = {{"type", "DT_FLOAT"}}, i32 = {{"type", "DT_INT32"}};
  auto node = [](const std::string& name, const std::string& op, const json& inputs, const json& attr) {
    return json{{"name", name}, {"op", op}, {"input", inputs}, {"attr", attr}};
  };
  auto ints = [&](const std::string& name, const std::vector<int>& v, bool scalar) {
    json shape = scalar ? json::object() : json{{"dim", {{{"size", std::to_string(v.size())}}}}};
    const json tensor = {{"dtype", "DT_INT32"}, {"tensorShape", shape}, {"intVal", v}};
    return node(name, "Const", json::array(), {{"dtype", i32}, {"value", {{"tensor", tensor}}}});
  };
  auto array = [&](const std::string& name, bool known_shape) {
    json shape = known_shape ? json{{"dim", {{{"size", "2"}}}}} : json{{"unknownRank", true}};
    return node(name, "TensorArrayV3", {"three"}, {{"dtype", f32}, {"element_shape", {{"shape", shape}}}});
  };
  const json nodes = {
      node("x", "Placeholder", json::array(),
           {{"dtype", f32}, {"shape", {{"shape", {{"dim", {{{"size", "3"}}, {{"size", "2"}}}}}}}}}),
      ints("zero", {0}, true), ints("one", {1}, true), ints("three", {3}, true), ints("in_order", {0, 1, 2}, false),
      ints("shuffled", {2, 0, 1}, false),
      // unstack: rows 0, 1, 2 of x in order; read row 1; write row 1 over row 0.
      array("ta", true), node("unstack", "TensorArrayScatterV3", {"ta", "in_order", "x", "ta:1"}, {{"T", f32}}),
      node("row1", "TensorArrayReadV3", {"ta", "one", "unstack"}, {{"dtype", f32}}),
      node("written", "TensorArrayWriteV3", {"ta", "zero", "row1", "unstack"}, {{"T", f32}}),
      node("size", "TensorArraySizeV3", {"ta", "written"}, json::object()),
      node("all", "TensorArrayGatherV3", {"ta", "in_order", "written"}, {{"dtype", f32}}),
      // A scatter in another order onto a new array of unknown element shape: out[2] = x[0], out[0] = x[1], ...
      array("tb", false), node("scattered", "TensorArrayScatterV3", {"tb", "shuffled", "x", "tb:1"}, {{"T", f32}}),
      node("placed", "TensorArrayGatherV3", {"tb", "in_order", "scattered"}, {{"dtype", f32}})};
  json outputs = json::object();
  for (const char* o : {"row1", "size", "all", "placed"})
    outputs[std::string(o) + ":0"] = {{"name", std::string(o) + ":0"}};
  const json model = {
      {"format", "graph-model"},
      {"signature", {{"inputs", {{"x:0", {{"name", "x:0"}, {"dtype", "DT_FLOAT"}}}}}, {"outputs", outputs}}},
      {"modelTopology", {{"node", nodes}}},
      {"weightsManifest", json::array()}};
  Module m(tf::import_tfjs(write_model(dir.path, model, "")));
  const TensorMap out = m({{"x", make({3, 2}, {1, 2, 3, 4, 5, 6})}});
  expect_close(out.at("row1"), Tensor::floats({3, 4}));
  CHECK(out.at("size").to_vector<int32_t>() == std::vector<int32_t>{3});
  expect_close(out.at("all"), make({3, 2}, {3, 4, 3, 4, 5, 6}));
  expect_close(out.at("placed"), make({3, 2}, {3, 4, 5, 6, 1, 2}));
}

TEST_CASE("TF.js control flow that calls itself, or loops on a float condition, is refused clearly") {
  TempDir dir("tfjs_control_flow_bad");
  auto node = [](const std::string& name, const std::string& op, const json& inputs, const json& attr) {
    return json{{"name", name}, {"op", op}, {"input", inputs}, {"attr", attr}};
  };
  const json f32 = {{"type", "DT_FLOAT"}};
  auto types = [](int n) { return json{{"list", {{"type", std::vector<std::string>(n, "DT_FLOAT")}}}}; };
  auto model = [&](const json& nodes, const json& functions) {
    return json{{"format", "graph-model"},
                {"signature",
                 {{"inputs", {{"x:0", {{"name", "x:0"}, {"dtype", "DT_FLOAT"}}}}},
                  {"outputs", {{"y:0", {{"name", "y:0"}, {"dtype", "DT_FLOAT"}}}}}}},
                {"modelTopology", {{"node", nodes}, {"library", {{"function", functions}}}}},
                {"weightsManifest", json::array()}};
  };
  // A function of float arguments `args`, returning its node `ret` as one float.
  auto function = [&](const std::string& name, const std::vector<std::string>& args, const json& body,
                      const std::string& ret) {
    json inputs = json::array();
    for (const std::string& a : args) inputs.push_back({{"name", a}, {"type", "DT_FLOAT"}});
    return json{
        {"signature", {{"name", name}, {"inputArg", inputs}, {"outputArg", {{{"name", "r"}, {"type", "DT_FLOAT"}}}}}},
        {"nodeDef", body},
        {"ret", {{"r", ret}}}};
  };
  json axes = node("axes", "Const", json::array(), {{"dtype", {{"type", "DT_INT32"}}}});
  axes["attr"]["value"] = {
      {"tensor", {{"dtype", "DT_INT32"}, {"tensorShape", {{"dim", {{{"size", "1"}}}}}}, {"intVal", {0}}}}};
  auto sum = [&](const std::string& name, const std::string& of, const std::string& axes_tensor) {
    return node(name, "Sum", {of, axes_tensor},
                {{"T", f32}, {"Tidx", {{"type", "DT_INT32"}}}, {"keep_dims", {{"b", false}}}});
  };
  const json x =
      node("x", "Placeholder", json::array(), {{"dtype", f32}, {"shape", {{"shape", {{"dim", {{{"size", "2"}}}}}}}}});
  // An If whose branch holds an If calling that same branch (on a scalar condition): nesting without end.
  auto if_attrs = [&](int inputs) {
    return json{{"Tcond", f32},
                {"Tin", types(inputs)},
                {"Tout", types(1)},
                {"then_branch", {{"func", {{"name", "again"}}}}},
                {"else_branch", {{"func", {{"name", "again"}}}}}};
  };
  const json again =
      function("again", {"c", "a"}, {node("inner", "StatelessIf", {"c", "c", "a"}, if_attrs(2))}, "inner:output:0");
  const std::string recursive = write_model(
      dir.path / "recursive",
      model({x, axes, sum("s", "x", "axes"), node("y", "StatelessIf", {"s", "s", "x"}, if_attrs(2))}, {again}), "");
  expect_error(
      Code::kInvalidArgument, [&] { tf::import_tfjs(recursive); }, "control flow nests deeper than 32");
  // A While whose condition function returns a float (TensorFlow's Python API makes it a bool).
  json axes_in_body = axes;
  axes_in_body["name"] = "k";
  const json while_attrs = {
      {"T", types(1)}, {"cond", {{"func", {{"name", "float_cond"}}}}}, {"body", {{"func", {{"name", "step"}}}}}};
  const json float_cond = function("float_cond", {"a"}, {axes_in_body, sum("n", "a", "k:output:0")}, "n:output:0");
  const json step = function("step", {"a"}, {node("t", "Tanh", {"a"}, {{"T", f32}})}, "t:y:0");
  const std::string float_loop = write_model(
      dir.path / "float_loop", model({x, node("y", "StatelessWhile", {"x"}, while_attrs)}, {float_cond, step}), "");
  expect_error(
      Code::kUnimplemented, [&] { tf::import_tfjs(float_loop); },
      "the condition function returns float32[], not a bool of one element");
}
