// The resolver converts foreign models on install (hub/resolver/resolver.h):
// a TF Hub module archive served on loopback becomes a hub module in the
// cache, once, with its source format recorded; other import options are
// another entry; an archive wrapping the model in one folder, a SavedModel
// archive and an ONNX file convert too; a model that fails to import leaves
// nothing in the cache, and its error names the archive and the model's
// file, never the folder it was unpacked to.
#include <doctest/doctest.h>

#include <filesystem>

#include "../interop/tf_testutil.h"
#include "fetch_testutil.h"
#include "http_server.h"
#include "hub/core/digest.h"
#include "hub/interop/onnx/exporter.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/state.h"
#include "hub/resolver/cache.h"
#include "hub/resolver/resolver.h"
#include "resolver_testutil.h"
#include "testutil.h"

namespace fs = std::filesystem;
using namespace hub;
using namespace hub::testing;

namespace {

const Tensor kW = make({3, 2}, {1, -1, 2, 0.5f, -2, 3});

// A TF Hub image feature module (TF1 resource variable, tag sets {} and
// {train}, 2x2 images): features = mean over the pixels, times `w`.
void write_tfhub_module(const fs::path& dir) {
  tfp::SavedModel sm;
  for (bool train : {false, true}) {
    tfp::MetaGraphDef* mg = sm.add_meta_graphs();
    if (train) mg->mutable_meta_info_def()->add_tags("train");
    TfGraph g(mg->mutable_graph_def());
    g.placeholder("images", {-1, 2, 2, 3});
    g.constant("axes", Tensor::from_vector<int32_t>({2}, {1, 2}));
    g.op("mean", "Mean", {"images", "axes"});
    const std::string w = g.resource_variable("w", {3, 2});
    g.op("features", "MatMul", {"mean", w});
    *mg->mutable_saver_def() = g.saver({{"w", "w"}});
    (*mg->mutable_signature_def())["default"] = tf_signature({{"images", {"images:0", DType::kFloat32, {-1, 2, 2, 3}}}},
                                                             {{"default", {"features:0", DType::kFloat32, {-1, 2}}}});
    (*mg->mutable_collection_def())["hub_module_attachments"].mutable_bytes_list()->add_value(
        image_module_info_attachment(2, 2));
  }
  write_saved_model(dir.string(), sm, {{"w", kW}});
  write_tfhub_module_def(dir.string());
}

// The module's output for images whose pixels average to (1, 2, 3).
void check_features(const fs::path& module_dir) {
  Module m(load_module_spec(module_dir.string()));
  Tensor images = make({1, 2, 2, 3}, {0, 2, 3, 2, 2, 3, 0, 2, 3, 2, 2, 3});
  // [1, 2, 3] x w = [1 + 4 - 6, -1 + 1 + 9]
  expect_close(m(images), make({1, 2}, {-1, 9}));
}

// The real validator: the module must load.
resolver::ResolverOptions loading_options(const Sandbox& sb) {
  resolver::ResolverOptions o = sb.options();
  o.validator = {};
  return o;
}

}  // namespace

TEST_CASE("a TF Hub module archive is converted into a module on install, once per options") {
  Sandbox sb;
  write_tfhub_module(sb.root / "tfhub");
  const std::string archive = make_tar(dir_entries(sb.root / "tfhub"));
  HttpServer server;
  server.route("/module.tar.gz", [&](const HttpRequest& r, HttpConn& c) { serve_body(r, c, archive); });
  const std::string url = server.url("/module.tar.gz");
  resolver::Resolver resolver(loading_options(sb));

  resolver::Resolution r = resolver.resolve(url);
  CHECK_FALSE(r.cached);
  CHECK(r.source_format == "tf_hub_module");
  check_features(r.dir);
  ModuleSpec spec = load_module_spec(r.dir.string());
  CHECK(spec.tag_sets() == std::vector<TagSet>{TagSet{}, TagSet{"train"}});
  CHECK(get_expected_image_size(spec) == std::pair<int64_t, int64_t>{2, 2});
  resolver::Cache cache(sb.cache);
  auto entry = cache.read_entry(resolver::cache_key(url));
  REQUIRE(entry.has_value());
  CHECK(entry->source_format == "tf_hub_module");
  CHECK(entry->import_options.empty());
  CHECK(entry->sha256 == sha256_hex(archive));
  // Nothing but the converted module in the entry (no unpacked source).
  CHECK(list_tree(entry->module_dir) == std::vector<std::string>{"assets", "module.pb", "variables.safetensors"});

  // Again: a cache hit, still saying what it was converted from.
  resolver::Resolution again = resolver.resolve(url);
  CHECK(again.cached);
  CHECK(again.dir == r.dir);
  CHECK(again.source_format == "tf_hub_module");
  CHECK(server.requests("/module.tar.gz") == 1);

  // Other import options: another entry beside the first.
  resolver::ResolverOptions only_inference = loading_options(sb);
  only_inference.import.tag_sets = {TagSet{}};
  resolver::Resolution other = resolver::Resolver(only_inference).resolve(url);
  CHECK(other.dir != r.dir);
  CHECK(load_module_spec(other.dir.string()).tag_sets() == std::vector<TagSet>{TagSet{}});
  CHECK(server.requests("/module.tar.gz") == 2);
  auto other_entry = cache.read_entry(
      resolver::import_cache_key(resolver::cache_key(url), interop::options_key(only_inference.import)));
  REQUIRE(other_entry.has_value());
  CHECK(other_entry->import_options == R"({"tag_sets":[[]]})");
  CHECK(resolver::Resolver(loading_options(sb)).resolve(url).dir == r.dir);
}

TEST_CASE("a model in a folder of the archive, a SavedModel archive and an ONNX file convert too") {
  Sandbox sb;
  write_tfhub_module(sb.root / "src" / "mobile_features");
  write_file(sb.root / "wrapped.tar.gz", make_tar(dir_entries(sb.root / "src")));
  resolver::Resolution wrapped = resolver::Resolver(loading_options(sb)).resolve((sb.root / "wrapped.tar.gz").string());
  CHECK(wrapped.source_format == "tf_hub_module");
  check_features(wrapped.dir);

  fs::remove(sb.root / "src" / "mobile_features" / "tfhub_module.pb");
  write_file(sb.root / "saved.tar", make_tar(dir_entries(sb.root / "src" / "mobile_features"), false));
  resolver::Resolution saved =
      resolver::Resolver(loading_options(sb)).resolve("file://" + (sb.root / "saved.tar").string());
  CHECK(saved.source_format == "tf_saved_model");
  check_features(saved.dir);

  // y = x * 3 as ONNX, written by hub's exporter.
  ModuleSpec triple = create_module_spec([](ModuleBuilder& b) {
    Scope s = b.scope();
    Output x = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 2}, "x");
    b.add_signature("default", {{"x", x}}, {{"y", ops::mul(s, x, ops::constant(s, Tensor::scalar<float>(3)), "y")}});
  });
  onnx_interop::export_onnx(triple, (sb.root / "triple.onnx").string());
  resolver::Resolution onnx = resolver::Resolver(loading_options(sb)).resolve((sb.root / "triple.onnx").string());
  CHECK(onnx.source_format == "onnx");
  expect_close(Module(load_module_spec(onnx.dir.string()))(make({1, 2}, {1, -2})), make({1, 2}, {3, -6}));
}

TEST_CASE("a foreign model that does not import leaves nothing in the cache") {
  Sandbox sb;
  write_tfhub_module(sb.root / "tfhub");
  // An op hub does not map.
  tfp::SavedModel sm;
  {
    std::string bytes = read_file(sb.root / "tfhub" / "saved_model.pb");
    REQUIRE(sm.ParseFromString(bytes));
  }
  for (auto& mg : *sm.mutable_meta_graphs())
    for (auto& n : *mg.mutable_graph_def()->mutable_node())
      if (n.name() == "mean") n.set_op("Softsign");
  std::string bytes;
  REQUIRE(sm.SerializeToString(&bytes));
  write_file(sb.root / "tfhub" / "saved_model.pb", bytes);
  const std::string archive = make_tar(dir_entries(sb.root / "tfhub"));
  HttpServer server;
  server.route("/bad.tar.gz", [&](const HttpRequest& r, HttpConn& c) { serve_body(r, c, archive); });
  const std::string url = server.url("/bad.tar.gz");
  try {
    resolver::Resolver(loading_options(sb)).resolve(url);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kUnimplemented);
    const std::string message = e.what();
    CHECK(message.find("module '" + url + "': archive " + url +
                       ": importing 'the archive's root' (TF Hub module): saved_model.pb") != std::string::npos);
    CHECK(message.find("node 'mean' (Softsign)") != std::string::npos);
    CHECK(message.find(".tmp") == std::string::npos);
  }
  check_cache_empty(sb);
  // Neither a module nor a model: the usual error.
  write_file(sb.root / "notes.tar.gz", make_tar({{"notes.txt", TarEntry::kFile, "hello"}}));
  expect_error(
      Code::kCorruption, [&] { resolver::Resolver(loading_options(sb)).resolve((sb.root / "notes.tar.gz").string()); },
      "no module.pb");
}

TEST_CASE("tfhub.dev URLs are fetched in TF Hub's compressed format") {
  CHECK(resolver::download_url("https://tfhub.dev/google/imagenet/mobilenet_v1_100_224/feature_vector/1") ==
        "https://tfhub.dev/google/imagenet/mobilenet_v1_100_224/feature_vector/"
        "1?tf-hub-format=compressed");
  CHECK(resolver::download_url("HTTPS://TFHub.dev/m/1") == "HTTPS://TFHub.dev/m/1?tf-hub-format=compressed");
  for (const char* unchanged : {"https://tfhub.dev/m/1?tf-hub-format=compressed", "https://example.com/m.tar.gz",
                                "https://tfhub.dev.example.com/m/1", "/local/tfhub.dev/m.tar.gz"})
    CHECK(resolver::download_url(unchanged) == unchanged);
  Sandbox sb;
  write_file(sb.root / "a.tar.gz", good_archive());
  write_file(sb.root / "a.tar", make_tar(module_entries(), false));
  write_file(sb.root / "a.onnx", "\x08\x07");
  CHECK(resolver::is_archive_file(sb.root / "a.tar.gz"));
  CHECK(resolver::is_archive_file(sb.root / "a.tar"));
  CHECK_FALSE(resolver::is_archive_file(sb.root / "a.onnx"));
  CHECK_FALSE(resolver::is_archive_file(sb.root));
  CHECK_FALSE(resolver::is_archive_file(sb.root / "missing"));
}
