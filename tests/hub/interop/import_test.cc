// hub/interop/import: the format of each kind of source recognised from its
// content (SavedModel and TF Hub folders, TF.js model.json as a file or a
// folder, ONNX files written by hub's ONNX exporter), the one
// "unrecognized format" error for everything else (a hub module folder, junk,
// a protobuf that is not ONNX), dispatch with options checked against the
// format, TF checkpoints recognised and refused with what to do instead, the
// options' canonical key, and import_to_directory writing a loadable module
// or nothing.
#include "hub/interop/import.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "hub/core/digest.h"
#include "hub/interop/onnx/exporter.h"
#include "hub/interop/tf/bundle.h"
#include "hub/interop/tf/checkpoint_state.h"
#include "hub/interop/tf/proto/saved_model.pb.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/state.h"
#include "testutil.h"
#include "tf_testutil.h"

namespace fs = std::filesystem;
using namespace hub;
using namespace hub::testing;

namespace {

// y = relu(x) + 1 as a SavedModel graph.
tfp::SavedModel tiny_saved_model() {
  tfp::SavedModel sm;
  tfp::MetaGraphDef* mg = sm.add_meta_graphs();
  mg->mutable_meta_info_def()->add_tags("serve");
  TfGraph g(mg->mutable_graph_def());
  g.placeholder("x", {-1, 3});
  g.op("relu", "Relu", {"x"});
  g.constant("one", Tensor::scalar<float>(1));
  g.op("y", "AddV2", {"relu", "one"});
  (*mg->mutable_signature_def())["serving_default"] =
      tf_signature({{"x", {"x:0", DType::kFloat32, {-1, 3}}}}, {{"y", {"y:0", DType::kFloat32, {-1, 3}}}});
  return sm;
}

void write(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
}

const char* kTfjs = R"({"format": "graph-model", "modelTopology": {"node": [
  {"name": "x", "op": "Placeholder", "attr": {"dtype": {"type": "DT_FLOAT"}, "shape": {"shape": {"dim": [{"size": "-1"}, {"size": "3"}]}}}},
  {"name": "y", "op": "Relu", "input": ["x"], "attr": {"T": {"type": "DT_FLOAT"}}}]}, "weightsManifest": []})";

}  // namespace

TEST_CASE("formats are recognised from the content; anything else is one clear error") {
  TempDir dir("import");
  write_saved_model(dir / "saved", tiny_saved_model(), {});
  write_saved_model(dir / "tfhub", tiny_saved_model(), {});
  write_tfhub_module_def(dir / "tfhub");
  write(dir.path / "tfjs" / "model.json", kTfjs);
  ModuleSpec relu = create_module_spec([](ModuleBuilder& b) {
    Scope s = b.scope();
    Output x = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 3}, "x");
    b.add_signature("default", {{"x", x}}, {{"y", s.op("Relu", {x}, {}, "y")}});
  });
  onnx_interop::export_onnx(relu, dir / "model.onnx");
  Module(relu).export_to(dir / "hubmodule");

  CHECK(interop::detect_format(dir / "saved") == interop::Format::kSavedModel);
  CHECK(interop::detect_format(dir / "tfhub") == interop::Format::kTfHubModule);
  CHECK(interop::detect_format(dir / "tfjs") == interop::Format::kTfjsGraphModel);
  CHECK(interop::detect_format(dir / "tfjs/model.json") == interop::Format::kTfjsGraphModel);
  CHECK(interop::detect_format(dir / "model.onnx") == interop::Format::kOnnx);
  // The names do not matter, the content does.
  fs::copy_file(dir / "model.onnx", dir / "model.bin");
  CHECK(interop::detect_format(dir / "model.bin") == interop::Format::kOnnx);
  fs::copy_file(dir / "tfjs/model.json", dir / "graph.txt");
  CHECK(interop::detect_format(dir / "graph.txt") == interop::Format::kTfjsGraphModel);

  const std::string unrecognized =
      "unrecognized format: expected a SavedModel directory (saved_model.pb), a TF Hub "
      "module (tfhub_module.pb), a TF.js model.json (format graph-model) or an ONNX model";
  expect_error(
      Code::kInvalidArgument, [&] { interop::detect_format(dir / "hubmodule"); }, "found a hub module folder already");
  expect_error(
      Code::kInvalidArgument, [&] { interop::detect_format(dir / "hubmodule"); }, unrecognized);
  // A protobuf whose fields are not ModelProto's (a SavedModel file), a
  // truncated ONNX file, a layers model, text.
  expect_error(
      Code::kInvalidArgument, [&] { interop::detect_format(dir / "saved/saved_model.pb"); }, unrecognized);
  std::string onnx_bytes;
  {
    std::ifstream in(dir / "model.onnx", std::ios::binary);
    onnx_bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  // Cut short, an ONNX file is still ONNX, and the importer says what is wrong.
  write(dir.path / "truncated.onnx", onnx_bytes.substr(0, onnx_bytes.size() - 3));
  CHECK(interop::detect_format(dir / "truncated.onnx") == interop::Format::kOnnx);
  expect_error(
      Code::kCorruption, [&] { interop::import_model(dir / "truncated.onnx"); },
      "truncated.onnx' is not a valid ONNX ModelProto (truncated or not ONNX)");
  write(dir.path / "head.onnx", onnx_bytes.substr(0, 1));
  expect_error(
      Code::kInvalidArgument, [&] { interop::detect_format(dir / "head.onnx"); }, unrecognized);
  write(dir.path / "layers" / "model.json", R"({"format": "layers-model", "modelTopology": {}})");
  expect_error(
      Code::kInvalidArgument, [&] { interop::detect_format(dir / "layers"); },
      "found a folder whose model.json is not a TF.js graph model");
  write(dir.path / "notes.txt", "hello");
  expect_error(
      Code::kInvalidArgument, [&] { interop::detect_format(dir / "notes.txt"); }, "found a file");
  expect_error(
      Code::kNotFound, [&] { interop::detect_format(dir / "missing"); }, "does not exist");
  CHECK_FALSE(interop::recognize_format(dir / "notes.txt").has_value());
  // A TensorFlow checkpoint (prefix, .index file, training folder) is
  // recognised, and importing it says how to use it instead.
  fs::create_directories(dir.path / "train");
  tf::write_bundle(dir / "train/model.ckpt-7", {{"w", make({2}, {1, 2})}});
  tf::write_checkpoint_state(dir / "train", {"model.ckpt-7", {"model.ckpt-7"}});
  for (const std::string& ckpt : {dir / "train/model.ckpt-7", dir / "train/model.ckpt-7.index", dir / "train"}) {
    CAPTURE(ckpt);
    CHECK(interop::detect_format(ckpt) == interop::Format::kTfCheckpoint);
    expect_error(
        Code::kInvalidArgument, [&] { interop::import_model(ckpt); },
        "is a TensorFlow checkpoint: it holds variables but no graph, so it is not a module; load "
        "it into a built-in net with hub train, eval or export --model_name NET "
        "--checkpoint_path");
  }
  // The ONNX branch imports through the ONNX importer.
  ModuleSpec onnx = interop::import_model(dir / "model.bin");
  expect_close(Module(onnx)(make({1, 3}, {-1, 0, 2})), make({1, 3}, {0, 0, 2}));
}

TEST_CASE("import_model dispatches by format and checks the options against it") {
  TempDir dir("import");
  write_saved_model(dir / "saved", tiny_saved_model(), {});
  write(dir.path / "tfjs" / "model.json", kTfjs);
  const Tensor x = make({1, 3}, {-1, 0, 2});
  ModuleSpec sm = interop::import_model(dir / "saved");
  expect_close(Module(sm)("serving_default", {{"x", x}}).at("y"), make({1, 3}, {1, 1, 3}));
  ModuleSpec js = interop::import_model(dir / "tfjs");
  expect_close(Module(js)({{"x", x}}).at("y"), make({1, 3}, {0, 0, 2}));

  // Options as the resolver keys conversions: none is "", the order of tag
  // sets does not matter, labels count by their digest.
  CHECK(interop::options_key({}).empty());
  interop::ImportOptions a, b;
  a.tag_sets = {{"train"}, {}};
  b.tag_sets = {{}, {"train"}};
  a.onnx.mean = b.onnx.mean = {0.5};
  CHECK(interop::options_key(a) == interop::options_key(b));
  CHECK(interop::options_key(a) == R"({"mean":[0.5],"tag_sets":[[],["train"]]})");
  b.onnx.labels = "cat\n";
  CHECK(interop::options_key(b) ==
        R"({"labels_sha256":")" + sha256_hex("cat\n") + R"(","mean":[0.5],"tag_sets":[[],["train"]]})");

  interop::ImportOptions image;
  image.onnx.image_size = {4, 4};
  expect_error(
      Code::kInvalidArgument, [&] { interop::import_model(dir / "saved", image); },
      "is a SavedModel: the image and label options apply to ONNX models only");
  interop::ImportOptions tags;
  tags.tag_sets = {TagSet{}};
  expect_error(
      Code::kInvalidArgument, [&] { interop::import_model(dir / "tfjs", tags); },
      "is a TF.js graph model: tag sets apply to SavedModels and TF Hub modules only");
  // Importer errors carry the path and the format.
  tfp::SavedModel bad = tiny_saved_model();
  bad.mutable_meta_graphs(0)->mutable_graph_def()->mutable_node(1)->set_op("Softsign");
  write_saved_model(dir / "bad", bad, {});
  expect_error(
      Code::kUnimplemented, [&] { interop::import_model(dir / "bad"); },
      "(SavedModel): " + (dir / "bad") + "/saved_model.pb, tag set {}: node 'relu' (Softsign)");
}

TEST_CASE("import_to_directory writes a module, or nothing") {
  TempDir dir("import");
  write_saved_model(dir / "saved", tiny_saved_model(), {});
  interop::import_to_directory(dir / "saved", dir / "module");
  ModuleSpec back = load_module_spec(dir / "module");
  expect_close(Module(back)("serving_default", {{"x", make({1, 3}, {-1, 0, 2})}}).at("y"), make({1, 3}, {1, 1, 3}));
  CHECK(std::get<std::string>(back.attached().at("source_format")) == "tf_saved_model");
  expect_error(
      Code::kAlreadyExists, [&] { interop::import_to_directory(dir / "saved", dir / "module"); }, "already exists");
  tfp::SavedModel bad = tiny_saved_model();
  bad.mutable_meta_graphs(0)->mutable_graph_def()->mutable_node(1)->mutable_input(0)->assign("nowhere");
  write_saved_model(dir / "bad", bad, {});
  expect_error(
      Code::kInvalidArgument, [&] { interop::import_to_directory(dir / "bad", dir / "out"); }, "names no node");
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir.path)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"bad", "module", "saved"});
}
