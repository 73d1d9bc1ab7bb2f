#include "onnx_testutil.h"

#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "hub/backend/backend.h"
#include "hub/core/fileio.h"
#include "hub/graph/session.h"
#include "subprocess.h"
#include "testutil.h"

namespace fs = std::filesystem;

namespace hub::testing {

namespace {
const char* kPython = "/usr/bin/python3";
}  // namespace

std::string onnx_references_missing() {
  if (!fs::exists(kJsDir / "node_modules" / "onnxruntime-node"))
    return "ONNX Runtime for Node is not installed (npm ci --ignore-scripts in tests/js)";
  if (!fs::exists("/usr/bin/node") && !fs::exists("/usr/local/bin/node")) return "node is not installed";
  if (!fs::exists("/usr/lib/python3/dist-packages/onnx")) return "Debian's python3-onnx is not installed";
  return "";
}

bool onnx_references_available() { return onnx_references_missing().empty(); }

void write_pytorch_style_models(const fs::path& dir) {
  Child c = Child::spawn(
      {kPython, (fs::path(HUB_SOURCE_DIR) / "tests/hub/interop/make_onnx_models.py").string(), dir.string()});
  ChildResult r = c.wait(120, "make_onnx_models.py");
  REQUIRE_MESSAGE((r.exited && r.code == 0), "make_onnx_models.py failed: " << r.output);
}

std::string write_ort_qdq_model(const fs::path& float_model, const fs::path& quantization_json, const fs::path& out) {
  Child c = Child::spawn({kPython, (fs::path(HUB_SOURCE_DIR) / "bench/ort_qdq_model.py").string(), float_model.string(),
                          quantization_json.string(), out.string()});
  ChildResult r = c.wait(120, "ort_qdq_model.py");
  REQUIRE_MESSAGE((r.exited && r.code == 0), "ort_qdq_model.py failed: " << r.output);
  return r.output;
}

Tensor read_float_bin(const fs::path& path, const Shape& shape) {
  std::string bytes = read_file_bytes(path.string());
  Tensor t(DType::kFloat32, shape);
  REQUIRE_MESSAGE(bytes.size() == t.nbytes(), path.string()
                                                  << " has " << bytes.size() << " bytes for " << t.spec_string());
  std::memcpy(t.raw_data(), bytes.data(), bytes.size());
  return t;
}

void write_float_bin(const fs::path& path, const Tensor& t) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(t.raw_data()), static_cast<std::streamsize>(t.nbytes()));
  REQUIRE(out.good());
}

std::vector<Tensor> run_onnx_runtime(const std::string& model,
                                     const std::vector<std::pair<std::string, Tensor>>& inputs,
                                     const fs::path& scratch) {
  std::vector<std::string> argv{"node", (kJsDir / "run_ort.js").string(), model, scratch.string()};
  int k = 0;
  for (const auto& [name, t] : inputs) {
    fs::path file = scratch.string() + ".in" + std::to_string(k++) + ".bin";
    write_float_bin(file, t);
    std::string dims;
    for (int64_t d : t.shape().dims()) {
      if (!dims.empty()) dims += ',';
      dims += std::to_string(d);
    }
    argv.push_back(name + "=" + file.string() + ":" + dims);
  }
  Child c = Child::spawn(argv);
  ChildResult r = c.wait(120, "ONNX Runtime (tests/js/run_ort.js)");
  REQUIRE_MESSAGE((r.exited && r.code == 0), "run_ort.js failed on " << model << ": " << r.output);
  nlohmann::json manifest = nlohmann::json::parse(read_file_bytes(scratch.string() + ".json"));
  std::vector<Tensor> out;
  for (size_t i = 0; i < manifest.size(); ++i)
    out.push_back(read_float_bin(scratch.string() + "." + std::to_string(i) + ".bin",
                                 Shape(manifest[i]["shape"].get<std::vector<int64_t>>())));
  return out;
}

TensorMap run_signature(const ModuleSpec& spec, const std::string& signature, const TensorMap& inputs,
                        const std::string& backend) {
  const SignatureInfo& sig = spec.signature(signature);
  const Graph& g = spec.graph();
  VariableStore vars;
  for (const auto& [name, t] : spec.weights()) vars.set(name, t.clone());
  Session session(g, &vars, {&find_backend(backend)});
  FeedList feeds;
  for (const auto& [name, info] : sig.inputs) feeds.push_back({g.tensor(info.tensor_name), inputs.at(name)});
  std::vector<Output> fetches;
  for (const auto& [name, info] : sig.outputs) fetches.push_back(g.tensor(info.tensor_name));
  std::vector<Tensor> values = session.run(feeds, fetches);
  TensorMap out;
  size_t i = 0;
  for (const auto& [name, info] : sig.outputs) out[name] = values[i++];
  return out;
}

}  // namespace hub::testing
