// Modules: building specs, calling signatures, variable_map, export -> load
// round trips (bit for bit), tag sets, composition and format upgrades.
#include "hub/module/module.h"

#include <doctest/doctest.h>
#include <stdlib.h>

#include <filesystem>

#include "hub/core/fileio.h"
#include "hub/module/module_proto.h"
#include "hub/module/safetensors.h"
#include "hub/ops/activation.h"
#include "hub/ops/control_flow.h"
#include "hub/ops/conv2d.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/math.h"
#include "hub/ops/matmul.h"
#include "hub/ops/reduction.h"
#include "hub/ops/state.h"
#include "module_testutil.h"
#include "signatures/upgrade.h"
#include "testutil.h"

namespace fs = std::filesystem;
using namespace hub;
using hub::testing::half_plus_two;
using hub::testing::random_tensor;
using hub::testing::TempDir;

TEST_CASE("half_plus_two: build, call, assign, query") {
  ModuleSpec spec = create_module_spec(half_plus_two);
  CHECK(spec.tag_sets() == std::vector<TagSet>{TagSet{}});
  CHECK(spec.signature_names() == std::vector<std::string>{"default"});
  const TensorInfo& x = spec.input_info().at("x");
  CHECK(x.dtype == DType::kFloat32);
  CHECK(x.shape == Shape{kUnknownDim});
  CHECK(spec.output_info().at("y").tensor_name == "y");
  REQUIRE(spec.variables().size() == 2);
  CHECK(spec.variables()[0].name == "a");
  CHECK(spec.variables()[1].name == "b");

  Module m(spec);
  // Initializers: zeros.
  CHECK(m({10, 3, 4}).to_vector<float>() == std::vector<float>{0, 0, 0});
  m.variable_map().at("a").assign(0.5f);
  m.variable_map().at("b").assign(Tensor::scalar<float>(2.0f));
  CHECK(m({10, 3, 4}).to_vector<float>() == std::vector<float>{7, 3.5f, 4});
  CHECK(m("default", Tensor::floats({4})).to_vector<float>() == std::vector<float>{4});
  TensorMap out = m("default", {{"x", Tensor::floats({-2})}});
  CHECK(out.at("y").to_vector<float>() == std::vector<float>{1});
  CHECK(m.variable_map().at("a").value().item<float>() == 0.5f);

  // assign checks dtype and shape and names the variable.
  auto expect_assign_error = [&](const Tensor& t) {
    try {
      m.variable_map().at("a").assign(t);
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.code() == Code::kInvalidArgument);
      CHECK(std::string(e.what()).find("variable 'a'") != std::string::npos);
    }
  };
  expect_assign_error(Tensor::floats({1, 2}));
  expect_assign_error(Tensor::scalar<int32_t>(1));
  CHECK_THROWS_AS(m.variable_map().at("nope"), Error);
  // The spec is untouched by assignments to a Module: a new Module starts over.
  Module fresh(spec);
  CHECK(fresh({10}).to_vector<float>() == std::vector<float>{0});
}

TEST_CASE("export -> load gives identical outputs, queries and bytes") {
  TempDir tmp("hub_module_test");
  ModuleSpec spec = create_module_spec([](ModuleBuilder& b) {
    half_plus_two(b);
    b.set_image_info(224, 192, 3);
    b.attach("note", std::string("hello"));
    b.attach("scale", 0.25);
    b.set_metadata({"hp2", "half plus two", "1.0", "Apache-2.0", "tests"});
  });
  Module m(spec);
  m.variable_map().at("a").assign(0.1f);  // not exactly representable: checks bits survive
  m.variable_map().at("b").assign(-3.3f);
  m.export_to(tmp / "m");
  ModuleSpec loaded = load_module_spec(tmp / "m");
  CHECK(loaded.source() == tmp / "m");
  CHECK(loaded.signature_names() == spec.signature_names());
  CHECK(loaded.input_info().at("x").shape == Shape{kUnknownDim});
  CHECK(loaded.metadata().name == "hp2");
  CHECK(loaded.metadata().author == "tests");
  CHECK(get_expected_image_size(loaded) == std::pair<int64_t, int64_t>{224, 192});
  CHECK(get_num_image_channels(loaded) == 3);
  CHECK(std::get<std::string>(loaded.attached().at("note")) == "hello");
  CHECK(std::get<double>(loaded.attached().at("scale")) == 0.25);
  CHECK(fs::is_directory(tmp / "m/assets"));

  Tensor x = random_tensor({17}, 7, -100, 100);
  Module m2(loaded);
  CHECK(identical(m2(x), m(x)));
  // Exporting the reloaded module gives byte-identical files.
  m2.export_to(tmp / "m2");
  CHECK(read_file_bytes(tmp / "m/module.pb") == read_file_bytes(tmp / "m2/module.pb"));
  CHECK(read_file_bytes(tmp / "m/variables.safetensors") == read_file_bytes(tmp / "m2/variables.safetensors"));
  // No temporary directories left beside the exports.
  int entries = 0;
  for (auto& e : fs::directory_iterator(tmp.path)) entries += e.path().filename().string()[0] == '.' ? 100 : 1;
  CHECK(entries == 2);
}

TEST_CASE("image info is absent unless attached") {
  ModuleSpec spec = create_module_spec(half_plus_two);
  CHECK_THROWS_AS(get_expected_image_size(spec), Error);
  CHECK_THROWS_AS(get_num_image_channels(spec), Error);
}

TEST_CASE("every dtype round-trips: variables, constant attributes, unknown-dim signatures") {
  TempDir tmp("hub_module_test");
  std::vector<Tensor> consts = {
      Tensor::from_vector<float>({2}, {1.25f, -0.0f}), Tensor::from_vector<int32_t>({2, 1}, {-7, 1 << 30}),
      Tensor::from_vector<int64_t>({1}, {-(1LL << 60)}), Tensor::from_vector<uint8_t>({3}, {0, 200, 255}),
      Tensor::from_vector<bool>({2}, {true, false})};
  ModuleSpec spec = create_module_spec([&](ModuleBuilder& b) {
    Scope s = b.scope();
    OutputMap ins, outs;
    for (const Tensor& c : consts) {
      std::string n(dtype_name(c.dtype()));
      ops::VariableOptions vo;
      vo.dtype = c.dtype();
      vo.initializer = "ones";
      ops::variable(s, "var_" + n, c.shape(), vo);
      ins["in_" + n] = ops::placeholder(s, c.dtype(), {kUnknownDim, 2, kUnknownDim}, "in_" + n);
      outs["out_" + n] = ops::identity(s, ins["in_" + n], "out_" + n);
      outs["const_" + n] = ops::constant(s, c, "const_" + n);
    }
    b.add_signature("all", ins, outs);
  });
  Module m(spec);
  for (const Tensor& c : consts) {
    std::string n(dtype_name(c.dtype()));
    Tensor v = m.variable_map().at("var_" + n).value().clone();
    // Fill variables with the constants' values (same shapes).
    m.variable_map().at("var_" + n).assign(c);
    CHECK(!identical(v, c));
  }
  m.export_to(tmp / "m");
  ModuleSpec loaded = load_module_spec(tmp / "m");
  Module m2(loaded);
  TensorMap feeds;
  for (const Tensor& c : consts) {
    std::string n(dtype_name(c.dtype()));
    CHECK(identical(loaded.weights().at("var_" + n), c));
    CHECK(identical(m2.variable_map().at("var_" + n).value(), c));
    const TensorInfo& in = loaded.input_info("all").at("in_" + n);
    CHECK(in.dtype == c.dtype());
    CHECK(in.shape == Shape{kUnknownDim, 2, kUnknownDim});
    CHECK(loaded.output_info("all").at("out_" + n).shape == Shape{kUnknownDim, 2, kUnknownDim});
    Tensor f(c.dtype(), {1, 2, 3});
    f.fill(1);
    feeds["in_" + n] = f;
  }
  TensorMap a = m("all", feeds), b = m2("all", feeds);
  REQUIRE(a.size() == b.size());
  for (const auto& [k, t] : a) CHECK_MESSAGE(identical(t, b.at(k)), k);
  for (const Tensor& c : consts) CHECK(identical(b.at("const_" + std::string(dtype_name(c.dtype()))), c));
}

// A small CNN: two 3x3 SAME convolutions (3 -> 3 channels) with biases and ReLU.
namespace {
Output layer(const Scope& s, Output x, int64_t channels, const std::string& name) {
  Scope ls = s.sub(name);
  ops::VariableOptions vo;
  vo.initializer = "glorot_uniform";
  Output w = ops::variable(ls, "weights", {3, 3, channels, channels}, vo);
  Output b = ops::variable(ls, "biases", {channels});
  return ops::relu(ls, ops::bias_add(ls, ops::conv2d(ls, x, w), b), "relu");
}
void tiny_cnn(ModuleBuilder& b, const Attrs& args) {
  Scope s = b.scope().sub("TinyNet");
  Output images = ops::placeholder(b.scope(), DType::kFloat32, {kUnknownDim, 4, 4, 3}, "images");
  Output h = layer(s, images, 3, "conv1");
  h = layer(s, h, 3, "conv2");
  if (args.has("is_training") && args.get_bool("is_training")) h = ops::mul(s, h, ops::scalar(s, 0.5f), "dropout");
  b.add_signature("default", {{"images", images}}, {{"default", h}});
  b.set_image_info(4, 4, 3);
}
}  // namespace

TEST_CASE("network round trip: export -> load -> identical outputs bit for bit, both tag sets") {
  TempDir tmp("hub_module_test");
  ModuleSpec spec = create_module_spec(
      tiny_cnn, {{{}, Attrs().set("is_training", false)}, {{"train"}, Attrs().set("is_training", true)}});
  CHECK(spec.tag_sets().size() == 2);
  CHECK(spec.has_tag_set({"train"}));
  CHECK(spec.variables().size() == 4);
  Module m(spec);
  int seed = 1;
  for (const std::string& name : m.variable_map().names())
    m.variable_map().at(name).assign(random_tensor(m.variable_map().at(name).value().shape(), seed++, -1, 1));
  Module train(spec, {"train"}, /*trainable=*/true);
  for (const std::string& name : train.variable_map().names())
    train.variable_map().at(name).assign(m.variable_map().at(name).value());
  Tensor x = random_tensor({2, 4, 4, 3}, 99, 0, 1);
  Tensor y = m(x), y_train = train(x);
  // The training graph differs (the "dropout" halves the output).
  hub::testing::expect_close(y_train, hub::testing::make({2, 4, 4, 3}, [&] {
                               auto v = y.to_vector<float>();
                               for (float& f : v) f *= 0.5f;
                               return v;
                             }()));

  m.export_to(tmp / "net");
  ModuleSpec loaded = load_module_spec(tmp / "net");
  CHECK(loaded.tag_sets() == spec.tag_sets());
  Module lm(loaded), lt(loaded, {"train"});
  CHECK(identical(lm(x), y));
  CHECK(identical(lt(x), y_train));
  // trainable=false marks the instance's variables non-trainable.
  CHECK(lm.graph().variables(/*trainable_only=*/true).empty());
  CHECK(lt.graph().variables(true).empty());
  CHECK(Module(loaded, {}, true).graph().variables(true).size() == 4);
  CHECK_THROWS_AS(Module(loaded, {"serve"}), Error);
}

TEST_CASE("composition: a module applied inside another graph, exported as a new module") {
  TempDir tmp("hub_module_test");
  ModuleSpec feature_spec = create_module_spec(half_plus_two);
  for (bool trainable : {false, true}) {
    CAPTURE(trainable);
    Module features(feature_spec, {}, trainable);
    features.variable_map().at("a").assign(3.0f);
    features.variable_map().at("b").assign(1.0f);
    ModuleSpec combined = create_module_spec([&](ModuleBuilder& b) {
      Scope s = b.scope();
      Output x = ops::placeholder(s, DType::kFloat32, {kUnknownDim}, "input");
      OutputMap f = features.apply(b, s, {{"x", x}});
      // Applying twice gets a fresh scope.
      OutputMap f2 = features.apply(b, s, {{"x", f.at("y")}});
      ops::VariableOptions vo;
      vo.initializer = "constant";
      vo.init_params = {10.0};
      Output w = ops::variable(s.sub("head"), "w", {}, vo);
      b.add_signature("default", {{"x", x}}, {{"y", ops::mul(s, f2.at("y"), w, "logits")}});
    });
    const Graph& g = combined.graph();
    REQUIRE(g.find("module/a"));
    REQUIRE(g.find("module_1/a"));
    CHECK(g.node(*g.find("module/a")).attrs.get_bool("trainable") == trainable);
    CHECK(g.node(*g.find("head/w")).attrs.get_bool("trainable"));
    // y = 10 * (3 * (3x + 1) + 1)
    Module m(combined, {}, true);
    CHECK(m({1, 2}).to_vector<float>() == std::vector<float>{130, 220});
    const std::string dir = tmp / (trainable ? "t" : "f");
    m.export_to(dir);
    Module loaded(load_module_spec(dir));
    CHECK(loaded({1, 2}).to_vector<float>() == std::vector<float>{130, 220});
    CHECK(loaded.spec().weights().at("module/a").item<float>() == 3.0f);
  }
  // Inputs are checked.
  Module features(feature_spec);
  Graph g;
  Scope s(g);
  Output wrong = ops::placeholder(s, DType::kInt32, {kUnknownDim}, "wrong");
  CHECK_THROWS_AS(features.apply(s, {{"x", wrong}}), Error);
  CHECK_THROWS_AS(features.apply(s, {{"z", wrong}}), Error);
}

TEST_CASE("format upgrades are named functions chained on load") {
  ModuleDef def;
  def.set_format_version(1);
  static std::vector<std::string> applied;
  applied.clear();
  std::vector<FormatUpgrade> chain = {
      {2, "upgrade_v2_to_v3", [](ModuleDef& d) { applied.push_back("2->3 " + d.metadata().name()); }},
      {1, "upgrade_v1_to_v2", [](ModuleDef& d) {
         applied.push_back("1->2");
         d.mutable_metadata()->set_name("renamed");
       }}};
  upgrade_module_def(def, "m", chain, 3);
  CHECK(def.format_version() == 3);
  CHECK(applied == std::vector<std::string>{"1->2", "2->3 renamed"});

  def.set_format_version(4);
  try {
    upgrade_module_def(def, "mod_dir", chain, 3);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kFailedPrecondition);
    CHECK(std::string(e.what()).find("module mod_dir has format_version 4; this hub reads up to 3; upgrade hub") !=
          std::string::npos);
  }
  def.set_format_version(1);
  CHECK_THROWS_AS(upgrade_module_def(def, "m", {}, 2), Error);  // gap in the chain
  def.set_format_version(0);
  CHECK_THROWS_AS(upgrade_module_def(def, "m"), Error);
  // The real chain: version 3 is current (2 added int8 data and quantization records, 3 graph-valued
  // attributes); a version-1 module goes through both upgrades and is otherwise unchanged.
  CHECK(kModuleFormatVersion == 3);
  def.set_format_version(1);
  def.mutable_metadata()->set_name("kept");
  upgrade_module_def(def, "m");
  CHECK(def.format_version() == 3);
  CHECK(def.metadata().name() == "kept");
  REQUIRE(format_upgrades().size() == 2);
  CHECK(std::string(format_upgrades()[0].name) == "upgrade_v1_to_v2");
  CHECK(std::string(format_upgrades()[1].name) == "upgrade_v2_to_v3");
}

TEST_CASE("load_module_spec reads local directories only; handles need a Resolver (issue 15)") {
  TempDir tmp("hub_module_test");
  Module m(create_module_spec(half_plus_two));
  m.variable_map().at("a").assign(0.5f);
  m.export_to(tmp / "m");
  CHECK(Module(load_module_spec(tmp / "m"))({4}).to_vector<float>() == std::vector<float>{2});
  // Nothing installed at load time turns these into downloads or registry lookups.
  for (const std::string& handle :
       {"file://" + (tmp / "m"), std::string("https://example.invalid/m.tar.gz"), std::string("acme/net@1.0.0")}) {
    CAPTURE(handle);
    try {
      load_module_spec(handle);
      FAIL("loaded");
    } catch (const Error& e) {
      CHECK(e.code() == Code::kNotFound);
      CHECK(std::string(e.what()).find("Resolver::load") != std::string::npos);
    }
  }
}

TEST_CASE("loaded weights are views of the mapped variables file; writes never reach it") {
  TempDir tmp("hub_module_test");
  Module m(create_module_spec(half_plus_two));
  m.variable_map().at("a").assign(0.5f);
  m.variable_map().at("b").assign(2.0f);
  m.export_to(tmp / "m");
  const std::string st_path = tmp / "m/variables.safetensors";
  const std::string on_disk = read_file_bytes(st_path);

  Tensor a;
  {
    ModuleSpec spec = load_module_spec(tmp / "m");
    a = spec.weights().at("a");
    const Tensor& b = spec.weights().at("b");
    CHECK(a.item<float>() == 0.5f);
    CHECK(b.item<float>() == 2.0f);
    // One mapping of the whole file, shared by the weights.
    CHECK(a.shares_storage_with(b));
    CHECK(a.storage()->bytes == on_disk.size());

    // A Module of the spec gets its own copies: assigning to it changes
    // neither the spec's weights nor the file.
    Module loaded(spec);
    loaded.variable_map().at("a").assign(-1.0f);
    CHECK(loaded({4}).to_vector<float>() == std::vector<float>{-2});
    CHECK(spec.weights().at("a").item<float>() == 0.5f);
    CHECK(read_file_bytes(st_path) == on_disk);
  }
  // The spec (and every Module of it) is gone; the tensor keeps the mapping.
  CHECK(a.item<float>() == 0.5f);
  // Writing through the mapped tensor itself is private to this process.
  a.fill(7);
  CHECK(a.item<float>() == 7);
  CHECK(read_file_bytes(st_path) == on_disk);
  CHECK(Module(load_module_spec(tmp / "m"))({4}).to_vector<float>() == std::vector<float>{4});
}

TEST_CASE("control flow: a Loop and an If round-trip through export and load, and run the same") {
  // y = if (sum(x) > 0) then x * 2^3 by a loop of three doublings (scanning each) else -x.
  auto doubling = [] {
    Graph g;
    Scope s(g);
    Output i = ops::placeholder(s, DType::kInt64, {}, "i");
    Output cond = ops::placeholder(s, DType::kBool, {}, "cond");
    Output acc = ops::placeholder(s, DType::kFloat32, {-1}, "acc");
    Output next = ops::mul(s, acc, ops::scalar(s, 2));
    return make_subgraph(g, {i, cond, acc}, {cond, next, ops::identity(s, next, "scan")});
  };
  auto positive = [&] {
    Graph g;
    Scope s(g);
    Output x = ops::placeholder(s, DType::kFloat32, {-1}, "x");
    std::vector<Output> l = ops::loop(s, ops::constant(s, Tensor::scalar<int64_t>(3), "trips"),
                                      ops::constant(s, Tensor::scalar<bool>(true), "go"), {x}, {}, doubling());
    return make_subgraph(g, {x}, {l[0]});
  };
  auto negative = [] {
    Graph g;
    Scope s(g);
    Output x = ops::placeholder(s, DType::kFloat32, {-1}, "x");
    return make_subgraph(g, {x}, {ops::neg(s, x)});
  };
  ModuleSpec spec = create_module_spec([&](ModuleBuilder& b) {
    Scope s = b.scope();
    Output x = ops::placeholder(s, DType::kFloat32, {-1}, "x");
    Output cond = ops::greater(s, ops::sum(s, x), ops::scalar(s, 0));
    Output y = ops::if_(s, cond, {x}, positive(), negative())[0];
    b.add_signature("default", x, ops::identity(s, y, "y"), "x", "y");
  });
  TempDir tmp("hub_module_test");
  Module(spec).export_to(tmp / "m");
  Module loaded(load_module_spec(tmp / "m"));
  CHECK(loaded(Tensor::floats({1, -0.5f})).to_vector<float>() == std::vector<float>{8, -4});
  CHECK(loaded(Tensor::floats({-1, 0.5f})).to_vector<float>() == std::vector<float>{1, -0.5f});
  loaded.export_to(tmp / "m2");
  CHECK(read_file_bytes(tmp / "m/module.pb") == read_file_bytes(tmp / "m2/module.pb"));
}
