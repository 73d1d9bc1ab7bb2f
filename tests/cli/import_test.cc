// `hub import` and `hub convert` through the built binary (HUB_EXE), in
// separate processes (tests/subprocess.h):
//   - an ONNX model in PyTorch's export style (Debian's python3-onnx, via
//     tests/hub/interop/make_onnx_models.py) imported, then `hub run` on the
//     module gives what ONNX Runtime gives on the ONNX file;
//   - a built-in net exported as a module, `hub convert --to onnx`, and
//     imported back: `hub run` gives the same outputs on both modules;
//   - SRC as a URL on loopback with #sha256= (converted into $HUB_CACHE_DIR
//     on the way), a wrong digest, a hub module archive;
//   - --output_dir: new, an empty folder, a non-empty one (refused unless
//     --overwrite), and the --json output;
//   - bad inputs (missing, unknown format, truncated): exit non-zero naming
//     the file, nothing left beside the output;
//   - examples/onnx_job.sh end to end with small settings (ONNX MobileNet ->
//     import -> retrain -> convert --to onnx -> same top-1 in hub classify
//     and ONNX Runtime).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../hub/interop/onnx_testutil.h"
#include "../hub/resolver/http_server.h"
#include "hub/core/digest.h"
#include "hub/core/fileio.h"
#include "hub/tensor/npy.h"
#include "subprocess.h"
#include "testutil.h"

namespace fs = std::filesystem;
using namespace hub;
using namespace hub::testing;

namespace {

using Run = HubRun;

// `hub ARGS` with the cache in `cache` (HUB_CACHE_DIR), so no test touches the user's.
Run hub_cli(const std::vector<std::string>& args, const fs::path& cache) {
  return run_hub(args, {{"HUB_CACHE_DIR", cache.string()}, {"OMP_WAIT_POLICY", "passive"}});
}

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// `hub run MODULE --input FILE.npy --output_dir OUT`: the outputs by name.
std::map<std::string, Tensor> hub_run(const fs::path& module, const fs::path& input, const fs::path& out,
                                      const fs::path& cache, const std::string& signature = "default") {
  Run r = hub_cli(
      {"run", module.string(), "--signature", signature, "--input", input.string(), "--output_dir", out.string()},
      cache);
  REQUIRE_MESSAGE(r.code == 0, r.out << r.err);
  std::map<std::string, Tensor> outputs;
  for (const std::string& name : names_in(out)) outputs[name] = read_npy((out / name).string());
  REQUIRE_FALSE(outputs.empty());
  return outputs;
}

// 'text' (GCC 12 warns falsely about "'" + std::string temporaries).
std::string quoted(const std::string& text) {
  std::string out(1, '\'');
  out += text;
  out += '\'';
  return out;
}

void expect_same_outputs(const std::map<std::string, Tensor>& got, const std::map<std::string, Tensor>& want) {
  REQUIRE(got.size() == want.size());
  for (const auto& [name, t] : want) {
    CAPTURE(name);
    REQUIRE(got.count(name));
    expect_close(got.at(name), t, 1e-6, 1e-5);
  }
}

}  // namespace

TEST_CASE("hub import of a PyTorch-style ONNX model, then hub run, gives ONNX Runtime's outputs") {
  HUB_SKIP_UNLESS(onnx_references_available(), onnx_references_missing());
  TempDir t("hub_cli_import");
  write_pytorch_style_models(t.path / "onnx");
  const nlohmann::json manifest = nlohmann::json::parse(read_file_bytes(t.path / "onnx" / "manifest.json"));
  const auto& cnn = manifest.at("cnn");
  const Shape shape(cnn.at("shape").get<std::vector<int64_t>>());
  const Tensor x = read_float_bin(t.path / "onnx" / "cnn.input.bin", shape);
  write_npy(t / "x.npy", x);

  Run r = hub_cli({"import", t / "onnx/cnn.onnx", "--output_dir", t / "cnn", "--json"}, t.path / "cache");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  CHECK(doc.at("source_format") == "onnx");
  CHECK(doc.at("output_dir") == t / "cnn");
  CHECK(doc.at("tag_sets").at(0).at("signatures") == nlohmann::json::array({"default"}));
  // Imported here, not through the cache.
  CHECK_FALSE(fs::exists(t.path / "cache"));

  const auto got = hub_run(t.path / "cnn", t.path / "x.npy", t.path / "out", t.path / "cache");
  const std::vector<Tensor> want =
      run_onnx_runtime(t / "onnx/cnn.onnx", {{cnn.at("input").get<std::string>(), x}}, t.path / "ort");
  REQUIRE(want.size() == 1);
  const std::string output = cnn.at("output").get<std::string>();
  REQUIRE(got.count(output + ".npy"));
  expect_close(got.at(output + ".npy"), want[0], 1e-5, 1e-4);
}

TEST_CASE("hub convert --to onnx of a built-in net, imported back, runs the same") {
  TempDir t("hub_cli_import");
  const fs::path cache = t.path / "cache";
  Run r = hub_cli({"export", "--model_name", "cifarnet", "--output_dir", t / "cifarnet"}, cache);
  REQUIRE_MESSAGE(r.code == 0, r.out << r.err);
  r = hub_cli({"convert", t / "cifarnet", "--to", "onnx", "--output", t / "cifarnet.onnx", "--signature",
               "classification", "--json"},
              cache);
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  CHECK(doc.at("to") == "onnx");
  CHECK(doc.at("opset") == 13);
  r = hub_cli({"import", t / "cifarnet.onnx", "--output_dir", t / "back"}, cache);
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(r.out.find("imported " + (t / "cifarnet.onnx") + " (onnx) -> " + (t / "back")) != std::string::npos);

  write_npy(t / "images.npy", random_tensor({2, 32, 32, 3}, 5, 0, 1));
  const auto a = hub_run(t.path / "cifarnet", t.path / "images.npy", t.path / "a", cache, "classification");
  const auto b = hub_run(t.path / "back", t.path / "images.npy", t.path / "b", cache);
  REQUIRE(a.count("default.npy"));
  CHECK(a.at("default.npy").shape() == Shape{2, 10});
  expect_same_outputs(b, a);

  // --to onnx onto an existing file: refused, then replaced with --overwrite.
  const std::string before = read_file_bytes(t / "cifarnet.onnx");
  r = hub_cli({"convert", t / "cifarnet", "--to", "onnx", "--output", t / "cifarnet.onnx", "--opset", "17"}, cache);
  CHECK(r.code == exit_code(Code::kAlreadyExists));
  CHECK(r.err.find("(--overwrite replaces it)") != std::string::npos);
  CHECK(read_file_bytes(t / "cifarnet.onnx") == before);
  r = hub_cli(
      {"convert", t / "cifarnet", "--to", "onnx", "--output", t / "cifarnet.onnx", "--opset", "17", "--overwrite"},
      cache);
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(read_file_bytes(t / "cifarnet.onnx") != before);
  CHECK(names_in(t.path) == std::vector<std::string>{"a", "b", "back", "cifarnet", "cifarnet.onnx", "images.npy"});
}

TEST_CASE("hub import of a URL with #sha256= goes through the resolver; a module archive is refused") {
  TempDir t("hub_cli_import");
  const fs::path cache = t.path / "cache";
  Run r = hub_cli({"export", "--model_name", "lenet", "--output_dir", t / "lenet"}, cache);
  REQUIRE_MESSAGE(r.code == 0, r.out << r.err);
  r = hub_cli({"convert", t / "lenet", "--to", "onnx", "--output", t / "lenet.onnx"}, cache);
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const std::string onnx = read_file_bytes(t / "lenet.onnx");
  HttpServer server;
  server.route("/lenet.onnx", [&](const HttpRequest& q, HttpConn& c) { serve_body(q, c, onnx); });
  const std::string url = server.url("/lenet.onnx");

  // A wrong digest: DataLoss, nothing written or cached.
  r = hub_cli({"import", url + "#sha256=" + std::string(64, '0'), "--output_dir", t / "m"}, cache);
  CHECK(r.code == exit_code(Code::kDataLoss));
  CHECK(r.err.find("sha256 mismatch") != std::string::npos);
  CHECK_FALSE(fs::exists(t.path / "m"));

  r = hub_cli({"import", url + "#sha256=" + sha256_hex(onnx), "--output_dir", t / "m", "--json"}, cache);
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(nlohmann::json::parse(r.out).at("source_format") == "onnx");
  write_npy(t / "digits.npy", random_tensor({3, 28, 28, 1}, 8, 0, 1));
  expect_same_outputs(hub_run(t.path / "m", t.path / "digits.npy", t.path / "out_m", cache),
                      hub_run(t.path / "lenet", t.path / "digits.npy", t.path / "out_l", cache));
  // The cached conversion serves another import without a download.
  r = hub_cli({"import", url, "--output_dir", t / "m2", "-q"}, cache);
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(server.requests("/lenet.onnx") == 2);  // the wrong digest's, then the right one's
  CHECK(fs::exists(t.path / "m2" / "module.pb"));

  // A hub module archive needs no import.
  r = hub_cli({"export", "--model_name", "lenet", "--output_dir", t / "pack/lenet"}, cache);
  REQUIRE(r.code == 0);
  Child tar = Child::spawn({"tar", "czf", t / "lenet.tar.gz", "-C", t / "pack/lenet", "."});
  REQUIRE(tar.wait(60, "tar").code == 0);
  r = hub_cli({"import", t / "lenet.tar.gz", "--output_dir", t / "m3"}, cache);
  CHECK(r.code == exit_code(Code::kInvalidArgument));
  CHECK(r.err.find("is a hub module already: nothing to import") != std::string::npos);
  CHECK_FALSE(fs::exists(t.path / "m3"));
}

TEST_CASE("hub import --output_dir: new, empty or --overwrite; bad inputs name the file, leave nothing") {
  HUB_SKIP_UNLESS(onnx_references_available(), onnx_references_missing());
  TempDir t("hub_cli_import");
  const fs::path cache = t.path / "cache";
  write_pytorch_style_models(t.path / "onnx");
  const std::string model = t / "onnx/reshape_chain.onnx";
  fs::create_directories(t.path / "out");

  // Bad inputs: exit non-zero with a message naming the file; nothing left.
  const std::string bytes = read_file_bytes(model);
  write_file_atomic(t / "truncated.onnx", bytes.substr(0, bytes.size() / 2));
  write_file_atomic(t / "notes.txt", "not a model");
  struct Bad {
    std::string src;
    int code;
    std::string message;
  };
  for (const Bad& bad : std::vector<Bad>{
           {t / "missing.onnx", exit_code(Code::kNotFound), "no such file or directory: " + (t / "missing.onnx")},
           {t / "notes.txt", exit_code(Code::kInvalidArgument),
            quoted(t / "notes.txt") + ": unrecognized format: expected a SavedModel directory"},
           {t / "truncated.onnx", exit_code(Code::kCorruption),
            quoted(t / "truncated.onnx") + " is not a valid ONNX ModelProto (truncated or not ONNX)"},
       }) {
    CAPTURE(bad.src);
    Run r = hub_cli({"import", bad.src, "--output_dir", t / "out/m"}, cache);
    CHECK(r.code == bad.code);
    CHECK_MESSAGE(r.err.find(bad.message) != std::string::npos, r.err);
    CHECK(names_in(t.path / "out").empty());
  }

  // A new folder, then an empty one.
  Run r = hub_cli({"import", model, "--output_dir", t / "out/m"}, cache);
  REQUIRE_MESSAGE(r.code == 0, r.err);
  fs::create_directories(t.path / "empty");
  r = hub_cli({"import", model, "--output_dir", t / "empty"}, cache);
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(fs::exists(t.path / "empty" / "module.pb"));
  // Not empty: refused as it is, replaced whole with --overwrite.
  write_file_atomic(t / "out/m/extra.txt", "mine");
  r = hub_cli({"import", model, "--output_dir", t / "out/m"}, cache);
  CHECK(r.code == exit_code(Code::kAlreadyExists));
  CHECK(r.err.find("--output_dir " + quoted(t / "out/m") +
                   " already exists and is not an empty folder; refusing to replace it "
                   "(--overwrite replaces it)") != std::string::npos);
  CHECK(fs::exists(t.path / "out/m/extra.txt"));
  r = hub_cli({"import", model, "--output_dir", t / "out/m", "--overwrite"}, cache);
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(names_in(t.path / "out/m") == std::vector<std::string>{"assets", "module.pb", "variables.safetensors"});
  CHECK(names_in(t.path / "out") == std::vector<std::string>{"m"});
  // Options of another format fail before anything is written.
  r = hub_cli({"import", model, "--output_dir", t / "out/n", "--tag_set", "serve"}, cache);
  CHECK(r.code == exit_code(Code::kInvalidArgument));
  CHECK(r.err.find("tag sets apply to SavedModels and TF Hub modules only") != std::string::npos);
  CHECK(names_in(t.path / "out") == std::vector<std::string>{"m"});
  CHECK_FALSE(fs::exists(cache));
}

TEST_CASE(
    "examples/onnx_job.sh: ONNX MobileNet -> import -> retrain -> ONNX, same top-1 in ONNX "
    "Runtime") {
  HUB_SKIP_UNLESS(onnx_references_available(), onnx_references_missing());
  HUB_SKIP_UNLESS(fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"),
                  "Debian's dataset-fashion-mnist is not installed");
  const char* build = std::getenv("HUB_BUILD_DIR");
  REQUIRE_MESSAGE(build != nullptr, "HUB_BUILD_DIR is not set (run through meson test)");
  TempDir t("hub_cli_onnx_job");
  ChildOptions o;
  o.env = {{"PER_CLASS", "8"}, {"STEPS", "20"}, {"OMP_WAIT_POLICY", "passive"}};
  // stderr too (ONNX Runtime's warnings), shown only when it fails.
  Child job = Child::spawn({"/bin/sh", "-c", "exec /bin/bash \"$0\" \"$1\" \"$2\" 2>&1",
                            (fs::path(HUB_SOURCE_DIR) / "examples/onnx_job.sh").string(), build, t / "work"},
                           o);
  ChildResult r = job.wait(300, "examples/onnx_job.sh");
  REQUIRE_MESSAGE((r.exited && r.code == 0), r.output);
  CHECK(r.output.find("hub and ONNX Runtime agree on the top-1 class of all 20 held-out images") != std::string::npos);
  CHECK(fs::exists(t.path / "work" / "retrained.onnx"));
}
