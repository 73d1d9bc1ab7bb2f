// retrain() end to end on generated images with a tiny feature module
// (tests/retrain/retrain_testutil.h), the bottleneck cache across runs, bad
// input, the distortions, and the TensorBoard logs (read back by the
// independent reader of tests/modules/train/event_reader.h).
#include "retrain/retrain.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "hub/core/error.h"
#include "hub/image/image.h"
#include "hub/image/resize.h"
#include "hub/interop/tf/proto/graph.pb.h"
#include "hub/module/module.h"
#include "hub/ops/quantize.h"
#include "modules/train/event_reader.h"
#include "retrain/bottleneck_cache.h"
#include "retrain/distort.h"
#include "retrain_run.h"
#include "retrain_testutil.h"
#include "testutil.h"

namespace fs = std::filesystem;
using namespace hub;
using namespace hub::retrain;
using namespace hub::retrain_test;

namespace {

// The cached vector of a bottleneck file (layout of retrain/bottleneck_cache.h).
std::vector<float> read_bottleneck(const fs::path& p) {
  std::string bytes = read_text(p);
  REQUIRE(bytes.size() >= 20);
  REQUIRE(bytes.substr(0, 8) == "HUBBOTL1");
  uint32_t dim;
  std::memcpy(&dim, bytes.data() + 12, 4);
  REQUIRE(bytes.size() == 20 + 4 * static_cast<size_t>(dim));
  std::vector<float> v(dim);
  std::memcpy(v.data(), bytes.data() + 20, 4 * dim);
  return v;
}

}  // namespace

TEST_CASE("retrain: end to end on generated colour classes") {
  Workspace w;
  RetrainConfig c = w.config("model");
  RetrainResult r = retrain::retrain(c, local_modules());
  CHECK(r.images_skipped == 0);
  CHECK(r.bottlenecks_computed == 75);
  CHECK(r.bottlenecks_cached == 0);
  CHECK(r.test_examples > 0);
  CHECK(r.final_test_accuracy >= 0.9);

  // Only the module and the labels next to each other; no temporaries.
  CHECK(list_dir(w.tmp.path / "out") == std::vector<std::string>{"model", "model_labels.txt"});
  CHECK(read_text(c.output_labels) == "blue\ngreen\nred\n");
  CHECK(read_text(fs::path(c.output_graph) / "assets" / "labels.txt") == "blue\ngreen\nred\n");

  ModuleSpec spec = load_module_spec(c.output_graph);
  CHECK(get_expected_image_size(spec) == std::pair<int64_t, int64_t>{8, 8});
  CHECK(get_num_image_channels(spec) == 3);
  Module m(spec);
  int correct = 0, total = 0;
  for (size_t k = 0; k < class_names().size(); ++k)
    for (int i : {0, 1, 2, 3}) {
      CAPTURE(class_names()[k]);
      CAPTURE(i);
      Tensor probs = m(load_batch(w.images / class_names()[k] / image_name(i)));
      REQUIRE(probs.spec_string() == "float32[1,3]");
      std::vector<float> p = probs.to_vector<float>();
      float sum = 0;
      for (float v : p) {
        CHECK(v >= 0.0f);
        CHECK(v <= 1.0f);
        sum += v;
      }
      CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
      int best = static_cast<int>(std::max_element(p.begin(), p.end()) - p.begin());
      correct += best == static_cast<int>(k);
      ++total;
    }
  CHECK(correct == total);

  // The feature_vector signature reproduces the feature module: mean * W.
  Tensor img = load_batch(w.images / "red" / image_name(0));
  std::vector<float> px = img.to_vector<float>();
  std::vector<double> mean(3, 0.0);
  for (size_t j = 0; j < px.size(); ++j) mean[j % 3] += px[j] / 64.0;
  std::vector<float> want(4);
  std::vector<float> wv = projection().to_vector<float>();
  for (int o = 0; o < 4; ++o) want[o] = static_cast<float>(mean[0] * wv[o] + mean[1] * wv[4 + o] + mean[2] * wv[8 + o]);
  testing::expect_close(m.call_single("feature_vector", img), Tensor::from_vector<float>({1, 4}, want), 1e-5, 1e-5);
  // ... and the bottleneck cached for that image is the same vector.
  fs::path cached =
      w.tmp.path / "bottlenecks" / "red" / (image_name(0) + "_" + module_tag(w.module.string()) + ".bottleneck");
  REQUIRE(fs::exists(cached));
  testing::expect_close(Tensor::from_vector<float>({1, 4}, read_bottleneck(cached)),
                        Tensor::from_vector<float>({1, 4}, want), 1e-5, 1e-5);
  // Logs for TensorBoard.
  CHECK(!list_dir(w.tmp.path / "logs" / "train").empty());
  CHECK(!list_dir(w.tmp.path / "logs" / "validation").empty());
}

namespace {
// TensorFlow's fake quantization, written out for one value (the test's own
// copy of the formula in hub/ops/quantize.h, on the op's nudged grid).
float fake_quant(float x, float lo, float hi, bool narrow = false) {
  const ops::QuantParams p = ops::nudged_quant_params(lo, hi, 8, narrow);
  const float clamped = std::min(std::max(x, p.nudged_min), p.nudged_max);
  return std::floor((clamped - p.nudged_min) / p.scale + 0.5f) * p.scale + p.nudged_min;
}
}  // namespace

TEST_CASE("retrain --quantize: a fake-quantized head on cached bottlenecks, kept in the module") {
  Workspace w;
  RetrainResult plain = retrain::retrain(w.config("float"), local_modules());
  CHECK(plain.bottlenecks_computed == 75);
  RetrainConfig c = w.config("quantized");
  c.quantize = true;
  RetrainResult r = retrain::retrain(c, local_modules());
  // The fake quantization is in the head, after the cache.
  CHECK(r.bottlenecks_cached == 75);
  CHECK(r.bottlenecks_computed == 0);
  CHECK(r.final_test_accuracy >= 0.9);

  ModuleSpec spec = load_module_spec(c.output_graph);
  const Graph& g = spec.graph();
  std::map<std::string, const Node*> quants;  // by the scope that holds them
  for (const Node& n : g.nodes())
    if (n.op == "FakeQuantWithMinMaxVars" || n.op == "FakeQuantWithMinMaxVarsPerChannel")
      quants[n.name.substr(0, n.name.rfind('/'))] = &n;
  REQUIRE(quants.size() == 3);
  for (const char* layer : {"final_retrain_ops/bottleneck", "final_retrain_ops/Wx_plus_b"}) {
    CAPTURE(layer);
    const std::string scope = std::string(layer) + "/act_quant";
    REQUIRE(quants.count(scope));
    const Node& n = *quants.at(scope);
    CHECK_FALSE(n.attrs.get_bool("narrow_range"));
    CHECK(g.node(n.inputs[1]).name == scope + "/min");
    CHECK(g.node(n.inputs[2]).name == scope + "/max");
    CHECK(g.node(n.inputs[1]).op == "Variable");
  }
  REQUIRE(quants.count("final_retrain_ops/weights/final_weights_quant"));
  const Node& wq = *quants.at("final_retrain_ops/weights/final_weights_quant");
  CHECK(wq.op == "FakeQuantWithMinMaxVarsPerChannel");  // per class (the weights' columns)
  CHECK(wq.attrs.get_bool("narrow_range"));
  CHECK(g.node(g.node(wq.inputs[0]).inputs[0]).name == "final_retrain_ops/weights/final_weights");

  // The module's logits are the head computed by hand from its variables:
  // fq(fq(features) fq_narrow(W[:, o], -max|W[:, o]|, max|W[:, o]|) + b).
  Module m(spec);
  auto var = [&](const std::string& name) { return m.variable_map().at(name).value().to_vector<float>(); };
  const std::vector<float> weights = var("final_retrain_ops/weights/final_weights");
  const std::vector<float> biases = var("final_retrain_ops/biases/final_biases");
  const float in_lo = var("final_retrain_ops/bottleneck/act_quant/min")[0];
  const float in_hi = var("final_retrain_ops/bottleneck/act_quant/max")[0];
  const float out_lo = var("final_retrain_ops/Wx_plus_b/act_quant/min")[0];
  const float out_hi = var("final_retrain_ops/Wx_plus_b/act_quant/max")[0];
  CHECK(in_hi > in_lo);
  CHECK(out_hi > 0);
  CHECK(out_lo < 0);
  std::vector<float> max_abs(3, 0.0f);  // per class
  for (size_t j = 0; j < weights.size(); ++j) max_abs[j % 3] = std::max(max_abs[j % 3], std::fabs(weights[j]));
  int correct = 0, total = 0;
  for (size_t k = 0; k < class_names().size(); ++k)
    for (int i : {0, 1, 2, 3}) {
      Tensor img = load_batch(w.images / class_names()[k] / image_name(i));
      const std::vector<float> features = m.call_single("feature_vector", img).to_vector<float>();
      const std::vector<float> logits = m.call_single("logits", img).to_vector<float>();
      REQUIRE(logits.size() == 3);
      for (size_t o = 0; o < 3; ++o) {
        double sum = biases[o];
        for (size_t j = 0; j < features.size(); ++j)
          sum += fake_quant(features[j], in_lo, in_hi) * fake_quant(weights[j * 3 + o], -max_abs[o], max_abs[o], true);
        CHECK(logits[o] == doctest::Approx(fake_quant(static_cast<float>(sum), out_lo, out_hi)).epsilon(1e-5));
      }
      const std::vector<float> p = m(img).to_vector<float>();
      correct += std::max_element(p.begin(), p.end()) - p.begin() == static_cast<std::ptrdiff_t>(k);
      ++total;
    }
  CHECK(correct == total);

  // Not with --fine_tune; nothing written.
  RetrainConfig both = w.config("both");
  both.quantize = true;
  both.fine_tune = true;
  expect_retrain_error(both, Code::kInvalidArgument, {"--quantize", "--fine_tune"},
                       {"float", "float_labels.txt", "quantized", "quantized_labels.txt"});
}

TEST_CASE("retrain: summaries as retrain.py writes them, in a --summaries_dir wiped first") {
  namespace ev = hub::event_test;
  Workspace w(8);
  RetrainConfig c = w.config("model");
  c.how_many_training_steps = 12;
  c.eval_step_interval = 5;
  // A previous run's logs are deleted, as retrain.py does.
  write_text(w.tmp.path / "logs" / "stale.txt", "old");
  write_text(w.tmp.path / "logs" / "train" / "events.out.tfevents.1.old", "old");
  retrain::retrain(c, local_modules());
  CHECK(list_dir(w.tmp.path / "logs") == std::vector<std::string>{"train", "validation"});

  std::vector<ev::Event> train = ev::read_events_dir(w.tmp.path / "logs" / "train");
  std::vector<ev::Event> validation = ev::read_events_dir(w.tmp.path / "logs" / "validation");
  // train: the head's graph, then the merged summary of every step.
  REQUIRE(train.size() == 2 + 12);
  REQUIRE(train[1].what == 4);
  tf::proto::GraphDef def;
  REQUIRE(def.ParseFromString(train[1].graph_def));
  std::set<std::string> nodes;
  for (const auto& n : def.node()) nodes.insert(n.name());
  for (const char* n :
       {"input/BottleneckInputPlaceholder", "input/GroundTruthInput", "final_retrain_ops/weights/final_weights",
        "final_retrain_ops/biases/final_biases", "final_result"})
    CHECK_MESSAGE(nodes.count(n), n);
  const std::vector<std::string> tags = {"final_retrain_ops/weights/summaries/mean",
                                         "final_retrain_ops/weights/summaries/stddev",
                                         "final_retrain_ops/weights/summaries/max",
                                         "final_retrain_ops/weights/summaries/min",
                                         "final_retrain_ops/weights/summaries/histogram",
                                         "final_retrain_ops/biases/summaries/mean",
                                         "final_retrain_ops/biases/summaries/stddev",
                                         "final_retrain_ops/biases/summaries/max",
                                         "final_retrain_ops/biases/summaries/min",
                                         "final_retrain_ops/biases/summaries/histogram",
                                         "final_retrain_ops/Wx_plus_b/pre_activations",
                                         "activations",
                                         "accuracy",
                                         "cross_entropy"};
  for (int64_t step = 0; step < 12; ++step) {
    const ev::Event& e = train[2 + step];
    CHECK(e.step == step);
    std::vector<std::string> got;
    for (const ev::Value& v : e.values) got.push_back(v.tag);
    CHECK(got == tags);
  }
  // Before the first update the biases are zeros.
  CHECK(train[2].find("final_retrain_ops/biases/summaries/max")->simple_value == 0.0f);
  CHECK(train[2].find("final_retrain_ops/biases/summaries/histogram")->histo.num == 3);
  CHECK(train[2].find("final_retrain_ops/weights/summaries/histogram")->histo.num == 12);  // 4 features x 3 classes

  // validation: at the evaluation steps (every 5th and the last), after the
  // step's update; at the last one the head is the exported one.
  REQUIRE(validation.size() == 1 + 4);
  std::vector<int64_t> steps;
  for (size_t i = 1; i < validation.size(); ++i) steps.push_back(validation[i].step);
  CHECK(steps == std::vector<int64_t>{0, 5, 10, 11});
  const ev::Event& last = validation.back();
  for (const std::string& tag : tags) CHECK_MESSAGE(last.find(tag), tag);
  Module m(load_module_spec(c.output_graph));
  std::vector<float> wv = m.variable_map().at("final_retrain_ops/weights/final_weights").value().to_vector<float>();
  double mean = 0, squares = 0;
  for (float x : wv) mean += x / 12.0;
  for (float x : wv) squares += (x - mean) * (x - mean) / 12.0;
  CHECK(last.find("final_retrain_ops/weights/summaries/mean")->simple_value == doctest::Approx(mean).epsilon(1e-5));
  CHECK(last.find("final_retrain_ops/weights/summaries/stddev")->simple_value ==
        doctest::Approx(std::sqrt(squares)).epsilon(1e-5));
  CHECK(last.find("final_retrain_ops/weights/summaries/max")->simple_value == *std::max_element(wv.begin(), wv.end()));
  const ev::Histogram& h = last.find("final_retrain_ops/weights/summaries/histogram")->histo;
  CHECK(h.min == *std::min_element(wv.begin(), wv.end()));
  const ev::Value* accuracy = last.find("accuracy");
  CHECK(accuracy->simple_value >= 0.0f);
  CHECK(accuracy->simple_value <= 1.0f);
  const ev::Histogram& probs = last.find("activations")->histo;
  CHECK(probs.min >= 0.0);
  CHECK(probs.max <= 1.0);
  CHECK(probs.sum == doctest::Approx(probs.num / 3));  // each row of 3 probabilities sums to 1

  // A --summaries_dir holding the run's inputs is refused, and nothing is deleted.
  RetrainConfig bad = w.config("model2");
  bad.summaries_dir = w.tmp.path.string();
  expect_retrain_error(bad, Code::kInvalidArgument, {"--summaries_dir", "--image_dir"}, {"model", "model_labels.txt"});
  CHECK(fs::exists(w.images / "red"));
  CHECK(fs::exists(w.tmp.path / "logs" / "train"));
  // ... as is a file.
  bad.summaries_dir = (w.images / "red" / image_name(0)).string();
  expect_retrain_error(bad, Code::kInvalidArgument, {"--summaries_dir", "is not a folder"},
                       {"model", "model_labels.txt"});
  CHECK(fs::exists(w.images / "red" / image_name(0)));
}

TEST_CASE("retrain: the bottleneck cache is reused, repaired and keyed by the module") {
  Workspace w;
  RetrainConfig c = w.config("first");
  c.how_many_training_steps = 20;
  RetrainResult first = retrain::retrain(c, local_modules());
  CHECK(first.bottlenecks_computed == 75);
  CHECK(first.bottlenecks_cached == 0);

  RetrainConfig c2 = w.config("second");
  c2.how_many_training_steps = 20;
  RetrainResult again = retrain::retrain(c2, local_modules());
  CHECK(again.bottlenecks_computed == 0);
  CHECK(again.bottlenecks_cached == 75);

  // A damaged file (one value byte changed: the CRC no longer matches) and a
  // truncated one are recomputed, and the rewritten files equal the originals.
  const std::string tag = module_tag(w.module.string());
  fs::path damaged = w.tmp.path / "bottlenecks" / "green" / (image_name(4) + "_" + tag + ".bottleneck");
  fs::path truncated = w.tmp.path / "bottlenecks" / "blue" / (image_name(7) + "_" + tag + ".bottleneck");
  REQUIRE(fs::exists(damaged));
  REQUIRE(fs::exists(truncated));
  std::string damaged_bytes = read_text(damaged), truncated_bytes = read_text(truncated);
  std::string bad = damaged_bytes;
  bad[bad.size() - 2] ^= 0x40;
  write_text(damaged, bad);
  write_text(truncated, truncated_bytes.substr(0, 13));
  RetrainConfig c3 = w.config("third");
  c3.how_many_training_steps = 20;
  RetrainResult repaired = retrain::retrain(c3, local_modules());
  CHECK(repaired.bottlenecks_computed == 2);
  CHECK(repaired.bottlenecks_cached == 73);
  CHECK(read_text(damaged) == damaged_bytes);
  CHECK(read_text(truncated) == truncated_bytes);

  // Other weights at the same path: the fingerprint differs, nothing is reused.
  fs::remove_all(w.module);
  export_feature_module(w.module, 1);
  RetrainConfig c4 = w.config("fourth");
  c4.how_many_training_steps = 20;
  RetrainResult other = retrain::retrain(c4, local_modules());
  CHECK(other.bottlenecks_computed == 75);
  CHECK(other.bottlenecks_cached == 0);
  // The vector now is the one of the new weights (4th column unchanged, first 3 scaled by 3/4).
  std::vector<float> now = read_bottleneck(damaged);
  std::string old_bytes = damaged_bytes.substr(20);
  std::vector<float> old_values(4);
  std::memcpy(old_values.data(), old_bytes.data(), 16);
  for (int o = 0; o < 3; ++o) CHECK(now[o] == doctest::Approx(old_values[o] * 0.75f).epsilon(1e-5));
  CHECK(now[3] == doctest::Approx(old_values[3]).epsilon(1e-5));

  // Another path (same weights) has another tag: its own files.
  fs::path module2 = w.tmp.path / "module2";
  export_feature_module(module2, 1);
  RetrainConfig c5 = w.config("fifth");
  c5.module = module2.string();
  c5.how_many_training_steps = 20;
  RetrainResult moved = retrain::retrain(c5, local_modules());
  CHECK(moved.bottlenecks_computed == 75);
  CHECK(fs::exists(w.tmp.path / "bottlenecks" / "green" /
                   (image_name(4) + "_" + module_tag(module2.string()) + ".bottleneck")));
  CHECK(fs::exists(damaged));
}

TEST_CASE("retrain: bad input is an Error naming the problem, and nothing is written") {
  Workspace w(21);
  fs::create_directories(w.tmp.path / "out");
  auto cfg = [&] {
    RetrainConfig c = w.config("model");
    c.how_many_training_steps = 5;
    return c;
  };

  SUBCASE("missing image_dir") {
    RetrainConfig c = cfg();
    c.image_dir = (w.tmp.path / "nope").string();
    expect_retrain_error(c, Code::kNotFound, {"--image_dir", "nope", "does not exist"});
  }
  SUBCASE("empty image_dir") {
    RetrainConfig c = cfg();
    fs::create_directories(w.tmp.path / "empty" / "no_images_here");
    c.image_dir = (w.tmp.path / "empty").string();
    expect_retrain_error(c, Code::kInvalidArgument, {"--image_dir", "no class folders with images"});
  }
  SUBCASE("one class") {
    RetrainConfig c = cfg();
    write_class_images(w.tmp.path / "one", 3);
    fs::remove_all(w.tmp.path / "one" / "green");
    fs::remove_all(w.tmp.path / "one" / "red");
    c.image_dir = (w.tmp.path / "one").string();
    expect_retrain_error(c, Code::kInvalidArgument, {"only one class", "'blue'"});
  }
  SUBCASE("output_graph already exists") {
    RetrainConfig c = cfg();
    write_text(fs::path(c.output_graph) / "keep.txt", "mine");
    expect_retrain_error(c, Code::kAlreadyExists, {c.output_graph, "already exists"}, {"model"});
    CHECK(list_dir(c.output_graph) == std::vector<std::string>{"keep.txt"});
    CHECK(read_text(fs::path(c.output_graph) / "keep.txt") == "mine");
  }
  SUBCASE("a module that is not an image feature-vector module") {
    RetrainConfig c = cfg();
    fs::path hpt = w.tmp.path / "half_plus_two";
    export_half_plus_two(hpt);
    c.module = hpt.string();
    expect_retrain_error(
        c, Code::kInvalidArgument,
        {hpt.string(), "not an image feature-vector module", "'x'", "expected float32 [batch, H, W, C]"});
  }
  SUBCASE("a module whose output is not [batch, D]") {
    RetrainConfig c = cfg();
    fs::path ident = w.tmp.path / "identity";
    Module(create_module_spec([](ModuleBuilder& b) {
      Scope s = b.scope();
      Output x = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 8, 8, 3}, "images");
      b.add_signature(kDefaultSignature, {{"images", x}}, {{"default", ops::mul(s, x, ops::scalar(s, 2.0f))}});
    })).export_to(ident.string());
    c.module = ident.string();
    expect_retrain_error(c, Code::kInvalidArgument,
                         {"not an image feature-vector module", "expected float32 [batch, D]"});
  }
  SUBCASE("missing module") {
    RetrainConfig c = cfg();
    c.module = (w.tmp.path / "no_module").string();
    Error e = expect_error([&] { retrain::retrain(c, local_modules()); });
    CHECK_MESSAGE(std::string(e.what()).find("no_module") != std::string::npos, e.what());
    CHECK(list_dir(w.tmp.path / "out").empty());
  }
  SUBCASE("bad numbers name their flag") {
    RetrainConfig c = cfg();
    c.learning_rate = 0;
    expect_retrain_error(c, Code::kInvalidArgument, {"--learning_rate"});
    c = cfg();
    c.how_many_training_steps = 0;
    expect_retrain_error(c, Code::kInvalidArgument, {"--how_many_training_steps"});
    c = cfg();
    c.random_brightness = 100;
    expect_retrain_error(c, Code::kInvalidArgument, {"--random_brightness"});
    c = cfg();
    c.testing_percentage = 60;
    c.validation_percentage = 50;
    expect_retrain_error(c, Code::kInvalidArgument, {"--testing_percentage", "--validation_percentage"});
  }
  SUBCASE("a class whose images are all unreadable") {
    RetrainConfig c = cfg();
    for (int i = 0; i < 21; ++i) {
      std::string name = "b";  // (not "b" + std::string: GCC 12's -Wrestrict false positive)
      name += std::to_string(i) + ".jpg";
      write_text(w.images / "Broken" / name, i % 2 ? "" : "not a jpeg");
    }
    expect_retrain_error(c, Code::kInvalidArgument, {"Broken", "no readable training images"});
  }
}

TEST_CASE("retrain: corrupt, empty and non-image files are skipped and counted") {
  Workspace w;
  // A truncated JPEG, an empty PNG, text named .jpg; three in red, one in blue.
  std::string jpeg = read_text(w.images / "red" / image_name(1));
  write_text(w.images / "red" / "cut.jpg", jpeg.substr(0, jpeg.size() / 2));
  write_text(w.images / "red" / "empty.png", "");
  write_text(w.images / "red" / "notes.jpg", "these are not pixels\n");
  write_text(w.images / "blue" / "fake.PNG", std::string("\x89PNG\r\n\x1a\n", 8) + "garbage garbage garbage");
  RetrainConfig c = w.config("model");
  RetrainResult r = retrain::retrain(c, local_modules());
  CHECK(r.images_skipped == 4);
  CHECK(r.bottlenecks_computed == 75);
  CHECK(r.final_test_accuracy >= 0.9);
  CHECK(fs::exists(fs::path(c.output_graph) / "module.pb"));
  // Skipped images are not cached: a rerun skips them again and computes nothing.
  RetrainConfig c2 = w.config("model2");
  c2.how_many_training_steps = 10;
  RetrainResult r2 = retrain::retrain(c2, local_modules());
  CHECK(r2.images_skipped == 4);
  CHECK(r2.bottlenecks_computed == 0);
  CHECK(r2.bottlenecks_cached == 75);
}

TEST_CASE("distort: options off equal a plain resize") {
  Tensor img = testing::random_tensor({13, 17, 3}, 5, 0.0f, 1.0f);
  DistortionOptions off;
  for (uint64_t seed : {0u, 1u, 99u})
    testing::expect_close(distort(img, 8, 10, off, seed), image::resize_bilinear(img, 8, 10), 1e-6, 0);
}

TEST_CASE("distort: flip mirrors the resized image for the seeds that flip") {
  Tensor img = testing::random_tensor({9, 11, 3}, 6, 0.0f, 1.0f);
  Tensor plain = image::resize_bilinear(img, 8, 8);
  std::vector<float> mirrored(8 * 8 * 3);
  std::vector<float> p = plain.to_vector<float>();
  for (int y = 0; y < 8; ++y)
    for (int x = 0; x < 8; ++x)
      for (int ch = 0; ch < 3; ++ch) mirrored[(y * 8 + x) * 3 + ch] = p[(y * 8 + (7 - x)) * 3 + ch];
  DistortionOptions o;
  o.flip_left_right = true;
  int flipped = 0, kept = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    std::vector<float> got = distort(img, 8, 8, o, seed).to_vector<float>();
    if (got == mirrored)
      ++flipped;
    else if (got == p)
      ++kept;
    else
      FAIL("seed " << seed << " gave neither the image nor its mirror");
  }
  // Probability 1/2 each: both must occur in 40 draws.
  CHECK(flipped > 5);
  CHECK(kept > 5);
}

TEST_CASE("distort: brightness multiplies by one factor within the range; seeds are reproducible") {
  Tensor img = testing::random_tensor({8, 8, 3}, 7, 0.1f, 1.0f);
  std::vector<float> in = img.to_vector<float>();
  DistortionOptions o;
  o.random_brightness = 30;
  std::set<float> factors;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::vector<float> out = distort(img, 8, 8, o, seed).to_vector<float>();
    float f = out[0] / in[0];
    CHECK(f >= 0.7f - 1e-6f);
    CHECK(f <= 1.3f + 1e-6f);
    for (size_t j = 0; j < in.size(); ++j) CHECK(out[j] == doctest::Approx(in[j] * f).epsilon(1e-5));
    factors.insert(f);
    CHECK(distort(img, 8, 8, o, seed).to_vector<float>() == out);
  }
  CHECK(factors.size() > 10);
  // Input untouched (distort must not scale the caller's tensor in place).
  CHECK(img.to_vector<float>() == in);
}

TEST_CASE("distort: crop and scale take a window of the enlarged image; same seed, same output") {
  Tensor img = testing::random_tensor({20, 20, 3}, 8, 0.0f, 1.0f);
  DistortionOptions o;
  o.random_crop = 50;
  o.random_scale = 20;
  o.flip_left_right = true;
  o.random_brightness = 10;
  Tensor a = distort(img, 10, 10, o, 1234);
  CHECK(a.spec_string() == "float32[10,10,3]");
  CHECK(distort(img, 10, 10, o, 1234).to_vector<float>() == a.to_vector<float>());
  bool differs = false;
  for (uint64_t seed = 0; seed < 5 && !differs; ++seed)
    differs = distort(img, 10, 10, o, seed).to_vector<float>() != a.to_vector<float>();
  CHECK(differs);
  // Crop only: the output is a 10x10 window of the image resized to 15x15 (scale 1.5).
  DistortionOptions crop;
  crop.random_crop = 50;
  Tensor big = image::resize_bilinear(img, 15, 15);
  for (uint64_t seed = 0; seed < 5; ++seed) {
    std::vector<float> got = distort(img, 10, 10, crop, seed).to_vector<float>();
    bool found = false;
    for (int64_t top = 0; top <= 5 && !found; ++top)
      for (int64_t left = 0; left <= 5 && !found; ++left)
        found = image::crop(big, top, left, 10, 10).to_vector<float>() == got;
    CHECK_MESSAGE(found, "seed " << seed);
  }
}

TEST_CASE("distort: invalid percentages name the flag") {
  auto bad = [](DistortionOptions o, const std::string& flag) {
    Error e = expect_error([&] { validate(o); });
    CHECK(e.code() == Code::kInvalidArgument);
    CHECK_MESSAGE(std::string(e.what()).find(flag) != std::string::npos, e.what());
  };
  DistortionOptions o;
  o.random_crop = -1;
  bad(o, "--random_crop");
  o = {};
  o.random_scale = -0.5;
  bad(o, "--random_scale");
  o = {};
  o.random_brightness = 100;
  bad(o, "--random_brightness");
  o = {};
  o.random_brightness = -3;
  bad(o, "--random_brightness");
  o = {};
  o.random_crop = 10;
  o.random_scale = 10;
  o.random_brightness = 10;
  CHECK_NOTHROW(validate(o));
}

TEST_CASE("retrain: a short run with --flip_left_right and --random_crop exports a working module") {
  Workspace w;
  RetrainConfig c = w.config("model");
  c.flip_left_right = true;
  c.random_crop = 20;
  c.how_many_training_steps = 40;
  c.train_batch_size = 30;
  c.eval_step_interval = 20;
  RetrainResult r = retrain::retrain(c, local_modules());
  CHECK(r.bottlenecks_computed == 75);  // validation and test still use cached bottlenecks
  CHECK(r.final_test_accuracy >= 0.9);
  Module m(load_module_spec(c.output_graph));
  std::vector<float> p = m(load_batch(w.images / "green" / image_name(2))).to_vector<float>();
  REQUIRE(p.size() == 3);
  CHECK(std::max_element(p.begin(), p.end()) - p.begin() == 1);
  CHECK(list_dir(w.tmp.path / "out") == std::vector<std::string>{"model", "model_labels.txt"});
}
