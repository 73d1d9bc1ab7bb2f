// `hub import` and `hub convert --to savedmodel` through the built binary
// (HUB_EXE, set by tests/meson.build). A TF Hub module built by hand with the
// retrain tests' feature network (per-channel mean, then the "projection"
// matrix) imports with its image size, and `hub retrain --module` on it does
// exactly what it does on the same network as a native module: the same
// bottlenecks, accuracy and classifier outputs; so does `hub retrain
// --tfhub_module URL` of the module's archive on a loopback server, which
// the resolver converts on install. `hub convert` writes a
// SavedModel that `hub import` reads back to the same outputs. Errors exit
// with the error's code and leave nothing behind.
#include <doctest/doctest.h>

#include <cstdlib>

#include "../resolver/http_server.h"
#include "../resolver/resolver_testutil.h"
#include "hub/interop/tf/proto/tfhub_module.pb.h"
#include "hub/module/module.h"
#include "retrain/retrain_testutil.h"
#include "subprocess.h"
#include "testutil.h"
#include "tf_testutil.h"

namespace fs = std::filesystem;
using namespace hub;
using hub::retrain_test::class_names;
using hub::retrain_test::image_name;
using hub::retrain_test::projection;
using hub::retrain_test::read_text;
using hub::retrain_test::write_class_images;
using hub::testing::Child;
using hub::testing::TempDir;

namespace {

struct Run {
  int rc;
  std::string out;  // stdout and stderr
};

Run hub_cli(const std::vector<std::string>& args, const fs::path& cache = "") {
  const char* exe = std::getenv("HUB_EXE");
  REQUIRE_MESSAGE(exe != nullptr, "HUB_EXE is not set (run through meson test)");
  std::string cmd = "exec \"$0\"";
  for (size_t i = 0; i < args.size(); ++i) cmd += " \"${" + std::to_string(i + 1) + "}\"";
  cmd += " 2>&1";
  std::vector<std::string> argv = {"/bin/sh", "-c", cmd, exe};
  argv.insert(argv.end(), args.begin(), args.end());
  testing::ChildOptions o;
  if (!cache.empty()) o.env = {{"HUB_CACHE_DIR", cache.string()}};
  testing::ChildResult r = Child::spawn(argv, o).wait(120, "hub " + (args.empty() ? "" : args[0]));
  return {r.exited ? r.code : -1, r.output};
}

// The retrain tests' feature module as a TF Hub module: TF1 resource
// variables, tag sets {} and {train}, image_module_info 8x8.
void write_tfhub_feature_module(const fs::path& dir) {
  using namespace hub::testing;
  tfp::SavedModel sm;
  for (bool train : {false, true}) {
    tfp::MetaGraphDef* mg = sm.add_meta_graphs();
    if (train) mg->mutable_meta_info_def()->add_tags("train");
    TfGraph g(mg->mutable_graph_def());
    g.placeholder("module/images", {-1, 8, 8, 3});
    g.constant("module/axes", Tensor::from_vector<int32_t>({2}, {1, 2}));
    g.op("module/Mean", "Mean", {"module/images", "module/axes"});
    std::string w = g.resource_variable("projection", {3, 4});
    g.op("module/features", "MatMul", {"module/Mean", w});
    *mg->mutable_saver_def() = g.saver({{"projection", "projection"}});
    (*mg->mutable_signature_def())["default"] =
        tf_signature({{"images", {"module/images:0", DType::kFloat32, {-1, 8, 8, 3}}}},
                     {{"default", {"module/features:0", DType::kFloat32, {-1, 4}}}});
    (*mg->mutable_collection_def())["hub_module_attachments"].mutable_bytes_list()->add_value(
        image_module_info_attachment(8, 8));
  }
  write_saved_model(dir.string(), sm, {{"projection", projection()}});
  write_tfhub_module_def(dir.string());
}

std::vector<std::string> retrain_args(const fs::path& root, const std::string& module, const std::string& name) {
  return {"retrain",
          "--image_dir",
          (root / "images").string(),
          "--tfhub_module",
          module,
          "--bottleneck_dir",
          (root / (name + "_bottlenecks")).string(),
          "--summaries_dir",
          (root / (name + "_logs")).string(),
          "--intermediate_output_graphs_dir",
          (root / (name + "_intermediate")).string(),
          "--output_graph",
          (root / (name + "_classifier")).string(),
          "--output_labels",
          (root / (name + "_labels.txt")).string(),
          "--how_many_training_steps",
          "100",
          "--learning_rate",
          "0.5",
          "--testing_percentage",
          "20",
          "--eval_step_interval",
          "50",
          "--random_seed",
          "3"};
}

}  // namespace

TEST_CASE(
    "hub import of a TF Hub module, or its archive served as tfhub.dev does, then hub retrain on "
    "it "
    "as on the native module") {
  TempDir t("tf_cli");
  write_class_images(t.path / "images", 15);
  write_tfhub_feature_module(t.path / "tfhub");
  Run r = hub_cli({"import", (t.path / "tfhub").string(), "--output_dir", (t.path / "imported").string()});
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  CHECK(r.out.find("(tf_hub_module)") != std::string::npos);
  CHECK(r.out.find("tag set {train}: signatures default") != std::string::npos);
  ModuleSpec imported = load_module_spec((t.path / "imported").string());
  CHECK(get_expected_image_size(imported) == std::pair<int64_t, int64_t>{8, 8});

  retrain_test::export_feature_module(t.path / "native");
  Run a = hub_cli(retrain_args(t.path, t / "imported", "a"));
  REQUIRE_MESSAGE(a.rc == 0, a.out);
  Run b = hub_cli(retrain_args(t.path, t / "native", "b"));
  REQUIRE_MESSAGE(b.rc == 0, b.out);
  // The module as a TF Hub archive (files at the root) on loopback: the
  // resolver converts it when it installs it into the cache.
  const std::string archive = testing::make_tar(testing::dir_entries(t.path / "tfhub"));
  testing::HttpServer server;
  server.route("/feature_vector/1",
               [&](const testing::HttpRequest& q, testing::HttpConn& c) { testing::serve_body(q, c, archive); });
  Run c = hub_cli(retrain_args(t.path, server.url("/feature_vector/1"), "c"), t.path / "cache");
  REQUIRE_MESSAGE(c.rc == 0, c.out);
  Run cached = hub_cli({"cache", "list", "--json"}, t.path / "cache");
  REQUIRE_MESSAGE(cached.rc == 0, cached.out);
  CHECK(cached.out.find("\"source_format\": \"tf_hub_module\"") != std::string::npos);
  auto final_line = [](const std::string& out) {
    const size_t at = out.find("Final test accuracy = ");
    return at == std::string::npos ? std::string("(none)") : out.substr(at, out.find('\n', at) - at);
  };
  CHECK(final_line(a.out) != "(none)");
  CHECK(final_line(a.out) == final_line(b.out));
  CHECK(final_line(c.out) == final_line(b.out));
  CHECK(read_text(t.path / "a_labels.txt") == read_text(t.path / "b_labels.txt"));
  // The classifiers agree on every image.
  Module ca(load_module_spec((t.path / "a_classifier").string())),
      cb(load_module_spec((t.path / "b_classifier").string())),
      cc(load_module_spec((t.path / "c_classifier").string()));
  Tensor images = testing::random_tensor({5, 8, 8, 3}, 9, 0, 1);
  testing::expect_close(ca(images), cb(images), 1e-6, 1e-5);
  testing::expect_close(cc(images), cb(images), 1e-6, 1e-5);
}

TEST_CASE("hub convert --to savedmodel, then hub import, gives the same module outputs") {
  TempDir t("tf_cli");
  retrain_test::export_feature_module(t.path / "native");
  Run r =
      hub_cli({"convert", (t.path / "native").string(), "--to", "savedmodel", "--output", (t.path / "saved").string()});
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  CHECK(fs::exists(t.path / "saved" / "saved_model.pb"));
  CHECK(fs::exists(t.path / "saved" / "variables" / "variables.index"));
  r = hub_cli({"import", (t.path / "saved").string(), "--output_dir", (t.path / "back").string()});
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  CHECK(r.out.find("(tf_saved_model)") != std::string::npos);
  Module a(load_module_spec((t.path / "native").string())), b(load_module_spec((t.path / "back").string()));
  Tensor images = testing::random_tensor({3, 8, 8, 3}, 4, 0, 1);
  testing::expect_close(b(images), a(images), 0, 0);
}

TEST_CASE("hub import and hub convert errors: exit codes, messages, nothing written") {
  TempDir t("tf_cli");
  fs::create_directories(t.path / "junk");
  retrain_test::write_text(t.path / "junk" / "notes.txt", "not a model");
  Run r = hub_cli({"import", (t.path / "junk").string(), "--output_dir", (t.path / "out").string()});
  CHECK(r.rc == exit_code(Code::kInvalidArgument));
  CHECK(r.out.find("unrecognized format: expected a SavedModel directory (saved_model.pb), a TF Hub module "
                   "(tfhub_module.pb), a TF.js model.json (format graph-model) or an ONNX model") != std::string::npos);
  CHECK_FALSE(fs::exists(t.path / "out"));

  write_tfhub_feature_module(t.path / "tfhub");
  fs::create_directories(t.path / "exists");
  retrain_test::write_text(t.path / "exists" / "mine.txt", "keep");
  r = hub_cli({"import", (t.path / "tfhub").string(), "--output_dir", (t.path / "exists").string()});
  CHECK(r.rc == exit_code(Code::kAlreadyExists));
  CHECK(r.out.find("is not an empty folder; refusing to replace it (--overwrite replaces it)") != std::string::npos);
  CHECK(read_text(t.path / "exists" / "mine.txt") == "keep");
  r = hub_cli(
      {"import", (t.path / "tfhub").string(), "--output_dir", (t.path / "out").string(), "--image_size", "4,4"});
  CHECK(r.rc == exit_code(Code::kInvalidArgument));
  CHECK(r.out.find("the image and label options apply to ONNX models only") != std::string::npos);
  r = hub_cli({"import", (t.path / "tfhub").string(), "--output_dir", (t.path / "out").string(), "--tag_set", "serve"});
  CHECK(r.rc == exit_code(Code::kNotFound));
  CHECK(r.out.find("no graph with the tag set {serve}") != std::string::npos);
  CHECK_FALSE(fs::exists(t.path / "out"));
  r = hub_cli({"import", (t.path / "tfhub").string(), "--output_dir", (t.path / "out").string(), "--tag_set", ""});
  REQUIRE_MESSAGE(r.rc == 0, r.out);
  CHECK(load_module_spec((t.path / "out").string()).tag_sets() == std::vector<TagSet>{TagSet{}});

  r = hub_cli({"convert", (t.path / "out").string(), "--to", "savedmodel", "--output", (t.path / "exists").string()});
  CHECK(r.rc == exit_code(Code::kAlreadyExists));
  // A flag of the other target is a usage error.
  r = hub_cli({"convert", (t.path / "out").string(), "--to", "savedmodel", "--output", (t.path / "sm").string(),
               "--opset", "13"});
  CHECK(r.rc == 2);
  CHECK(r.out.find("apply to --to onnx only") != std::string::npos);
  CHECK_FALSE(fs::exists(t.path / "sm"));
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(t.path)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{"exists", "junk", "out", "tfhub"});
}
