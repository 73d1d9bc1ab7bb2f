// retrain --fine_tune: which module variables train, the gradient they get
// (finite differences), a task only fine-tuning solves, batch norm in the
// {train} graph, the bottleneck cache left alone, and the flags' errors.
#include "retrain/fine_tune.h"

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "hub/interop/tf/proto/graph.pb.h"
#include "hub/module/module.h"
#include "modules/train/event_reader.h"
#include "retrain/retrain.h"
#include "retrain_run.h"
#include "retrain_testutil.h"
#include "testutil.h"

namespace fs = std::filesystem;
using namespace hub;
using namespace hub::retrain;
using namespace hub::retrain_test;

namespace {

// The two-tone task (retrain_testutil.h) with the tunable module.
struct TwoTone : Workspace {
  TwoTone() : Workspace(0) {
    write_two_tone_images(images, 40);
    export_tunable_module(module);
  }
  RetrainConfig config(const std::string& out) const {
    RetrainConfig c = Workspace::config(out);
    c.how_many_training_steps = 300;
    c.train_batch_size = 40;
    c.learning_rate = 1.0;
    c.fine_tune_learning_rate = 1.0;
    c.random_brightness = 10;  // keeps the class (r > g), so both runs may distort
    return c;
  }
};

// The accuracy of a retrained module on every image of `dir`'s class folders.
double accuracy_on_folder(const std::string& module_dir, const fs::path& dir) {
  Module m(load_module_spec(module_dir));
  int correct = 0, total = 0;
  std::vector<std::string> classes = list_dir(dir);
  for (size_t k = 0; k < classes.size(); ++k)
    for (const std::string& file : list_dir(dir / classes[k])) {
      std::vector<float> p = m(load_batch(dir / classes[k] / file)).to_vector<float>();
      correct += std::max_element(p.begin(), p.end()) - p.begin() == static_cast<std::ptrdiff_t>(k);
      ++total;
    }
  REQUIRE(total > 0);
  return static_cast<double>(correct) / total;
}

// The largest |a - b| of two float32 tensors of one shape.
double max_abs_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.spec_string() == b.spec_string());
  std::vector<float> x = a.to_vector<float>(), y = b.to_vector<float>();
  double d = 0;
  for (size_t i = 0; i < x.size(); ++i) d = std::max(d, std::abs(static_cast<double>(x[i]) - y[i]));
  return d;
}

const Tensor& weight(const ModuleSpec& spec, const std::string& name) {
  auto it = spec.weights().find(name);
  REQUIRE_MESSAGE(it != spec.weights().end(), name);
  return it->second;
}

}  // namespace

TEST_CASE("fine-tune: the selected module variables train, the others keep their values") {
  TwoTone w;
  RetrainConfig c = w.config("projection_only");
  c.how_many_training_steps = 20;
  c.fine_tune = true;
  c.fine_tune_scopes = "projection";
  RetrainResult r = retrain::retrain(c, local_modules());
  CHECK(r.fine_tuned_variables == std::vector<std::string>{"projection"});
  CHECK(!r.used_train_tags);  // the module has only {}
  ModuleSpec out = load_module_spec(c.output_graph);
  CHECK(max_abs_diff(weight(out, "module/projection"), tunable_projection()) > 1e-3);
  // Exactly their exported values: not selected, not trainable, not on the path.
  CHECK(weight(out, "module/offset").to_vector<float>() == std::vector<float>{0, 0});
  CHECK(weight(out, "module/scale").to_vector<float>() == std::vector<float>{1, 1});
  CHECK(weight(out, "module/unused").to_vector<float>() == std::vector<float>{0, 0});

  // Default scopes: every trainable variable the features depend on.
  c = w.config("all");
  c.how_many_training_steps = 20;
  c.fine_tune = true;
  r = retrain::retrain(c, local_modules());
  CHECK(r.fine_tuned_variables == std::vector<std::string>{"offset", "projection"});
  out = load_module_spec(c.output_graph);
  CHECK(max_abs_diff(weight(out, "module/projection"), tunable_projection()) > 1e-3);
  CHECK(max_abs_diff(weight(out, "module/offset"), Tensor::from_vector<float>({2}, {0, 0})) > 1e-4);
  CHECK(weight(out, "module/scale").to_vector<float>() == std::vector<float>{1, 1});
  CHECK(weight(out, "module/unused").to_vector<float>() == std::vector<float>{0, 0});
}

TEST_CASE("fine-tune: one SGD step moves every variable by -lr x its finite-difference gradient") {
  ModuleSpec spec = tunable_module_spec();
  FeatureModule f = check_feature_module(spec, "tunable");
  FineTuneOptions o;
  o.learning_rate = 0.3;
  o.head_learning_rate = 0.7;
  o.seed = 5;
  FineTuner t(spec, f, 3, o);
  CHECK(t.trained_variables() == std::vector<std::string>{"offset", "projection"});
  VariableStore& vars = t.variables();
  // Weights of order one everywhere, so that every gradient is too.
  vars.assign("module/projection", testing::random_tensor({3, 2}, 11));
  vars.assign("module/offset", testing::random_tensor({2}, 12));
  vars.assign("module/scale", Tensor::from_vector<float>({2}, {1.5f, -0.5f}));
  vars.assign("final_retrain_ops/weights/final_weights", testing::random_tensor({2, 3}, 13));
  vars.assign("final_retrain_ops/biases/final_biases", testing::random_tensor({3}, 14));
  Tensor images = testing::random_tensor({5, 8, 8, 3}, 15, 0.0f, 1.0f);
  Tensor labels = Tensor::from_vector<int64_t>({5}, {0, 2, 1, 1, 0});

  // Central differences of the loss, per element (float32: eps 1e-2).
  const std::map<std::string, double> rates = {{"module/projection", 0.3},
                                               {"module/offset", 0.3},
                                               {"final_retrain_ops/weights/final_weights", 0.7},
                                               {"final_retrain_ops/biases/final_biases", 0.7}};
  std::map<std::string, std::vector<double>> numeric;
  const float eps = 1e-2f;
  for (const auto& [name, lr] : rates) {
    Tensor& v = vars.at(name);
    for (int64_t i = 0; i < v.num_elements(); ++i) {
      const float keep = v.data<float>()[i];
      v.data<float>()[i] = keep + eps;
      const double up = t.loss(images, labels);
      v.data<float>()[i] = keep - eps;
      const double down = t.loss(images, labels);
      v.data<float>()[i] = keep;
      numeric[name].push_back((up - down) / (2.0 * eps));
    }
  }
  std::map<std::string, Tensor> before;
  for (const auto& [name, lr] : rates) before[name] = vars.at(name).clone();
  const Tensor scale_before = vars.at("module/scale").clone();
  const float loss_before = t.loss(images, labels);

  CHECK(t.step(images, labels) == doctest::Approx(loss_before).epsilon(1e-6));
  double largest = 0;
  for (const auto& [name, lr] : rates) {
    std::vector<float> b = before[name].to_vector<float>(), a = vars.at(name).to_vector<float>();
    for (size_t i = 0; i < a.size(); ++i) {
      CAPTURE(name);
      CAPTURE(i);
      const double step_gradient = (static_cast<double>(b[i]) - a[i]) / lr;
      CHECK(step_gradient == doctest::Approx(numeric[name][i]).epsilon(2e-2).scale(0.05));
      largest = std::max(largest, std::abs(numeric[name][i]));
    }
  }
  CHECK(largest > 0.05);  // the check compared real gradients, not zeros
  CHECK(vars.at("module/scale").to_vector<float>() == scale_before.to_vector<float>());
  CHECK(t.loss(images, labels) < loss_before);
}

TEST_CASE("fine-tune: solves a task the frozen features cannot") {
  TwoTone w;
  RetrainConfig frozen = w.config("frozen");
  frozen.fine_tune_learning_rate.reset();
  retrain::retrain(frozen, local_modules());
  RetrainConfig tuned = w.config("tuned");
  tuned.fine_tune = true;
  RetrainResult r = retrain::retrain(tuned, local_modules());
  const double frozen_accuracy = accuracy_on_folder(frozen.output_graph, w.images);
  const double tuned_accuracy = accuracy_on_folder(tuned.output_graph, w.images);
  CAPTURE(frozen_accuracy);
  CAPTURE(tuned_accuracy);
  // Red alone decides about 4/5 of the images (retrain_testutil.h).
  CHECK(frozen_accuracy < 0.9);
  CHECK(tuned_accuracy >= 0.97);
  CHECK(r.final_test_accuracy >= 0.9);
  // Green now counts against red in the first feature.
  std::vector<float> p = weight(load_module_spec(tuned.output_graph), "module/projection").to_vector<float>();
  CHECK(p[2] < -0.1f);
}

TEST_CASE("fine-tune: batch norm trains in the {train} graph and the export infers with its moving statistics") {
  Workspace w(0);
  write_class_images(w.images, 20);
  export_batch_norm_module(w.module);
  RetrainConfig c = w.config("model");
  c.fine_tune = true;
  c.fine_tune_scopes = "BatchNorm";  // beta; the projection stays, so BN's input per image is fixed
  c.how_many_training_steps = 30;
  c.train_batch_size = 30;
  c.eval_step_interval = 10;
  RetrainResult r = retrain::retrain(c, local_modules());
  CHECK(r.used_train_tags);
  CHECK(r.fine_tuned_variables == std::vector<std::string>{"BatchNorm/beta"});
  CHECK(r.final_test_accuracy >= 0.9);

  ModuleSpec out = load_module_spec(c.output_graph);
  CHECK(weight(out, "module/projection").to_vector<float>() == projection().to_vector<float>());
  std::vector<float> beta = weight(out, "module/BatchNorm/beta").to_vector<float>();
  std::vector<float> mean = weight(out, "module/BatchNorm/moving_mean").to_vector<float>();
  std::vector<float> var = weight(out, "module/BatchNorm/moving_variance").to_vector<float>();
  // The BN input x = means * W of every image, as the module computes it.
  std::vector<std::vector<double>> xs;
  for (const std::string& cls : class_names())
    for (const std::string& file : list_dir(w.images / cls)) {
      std::vector<float> px = load_batch(w.images / cls / file).to_vector<float>();
      std::vector<double> m(3, 0.0);
      for (size_t j = 0; j < px.size(); ++j) m[j % 3] += px[j] / 64.0;
      std::vector<float> wv = projection().to_vector<float>();
      std::vector<double> x(4);
      for (int o = 0; o < 4; ++o) x[o] = m[0] * wv[o] + m[1] * wv[4 + o] + m[2] * wv[8 + o];
      xs.push_back(x);
    }
  // With decay 0.5 the moving statistics are those of the last few batches:
  // near the data set's (they started at 0 and 1).
  for (int o = 0; o < 4; ++o) {
    double mu = 0, sq = 0;
    for (const auto& x : xs) mu += x[o] / static_cast<double>(xs.size());
    for (const auto& x : xs) sq += (x[o] - mu) * (x[o] - mu) / static_cast<double>(xs.size() - 1);
    CAPTURE(o);
    CHECK(mean[o] == doctest::Approx(mu).scale(1).epsilon(0.15));
    CHECK(var[o] == doctest::Approx(sq).epsilon(0.5));
  }
  // The exported inference graph normalizes with them: (x - mean) / sqrt(var + 0.001) + beta.
  Module m(out);
  Tensor got = m.call_single("feature_vector", load_batch(w.images / "red" / image_name(0)));
  std::vector<float> px = load_batch(w.images / "red" / image_name(0)).to_vector<float>();
  std::vector<double> mm(3, 0.0);
  for (size_t j = 0; j < px.size(); ++j) mm[j % 3] += px[j] / 64.0;
  std::vector<float> wv = projection().to_vector<float>(), want(4);
  for (int o = 0; o < 4; ++o) {
    double x = mm[0] * wv[o] + mm[1] * wv[4 + o] + mm[2] * wv[8 + o];
    want[o] = static_cast<float>((x - mean[o]) / std::sqrt(var[o] + 0.001) + beta[o]);
  }
  testing::expect_close(got, Tensor::from_vector<float>({1, 4}, want), 1e-4, 1e-4);
}

TEST_CASE("fine-tune: the bottleneck cache is neither read nor written") {
  TwoTone w;
  RetrainConfig frozen = w.config("frozen");
  frozen.fine_tune_learning_rate.reset();
  frozen.random_brightness = 0;  // cached bottlenecks for every image
  frozen.how_many_training_steps = 5;
  retrain::retrain(frozen, local_modules());
  // Damage every cached vector: a run that read them would rewrite them.
  std::map<fs::path, std::string> cache;
  for (const auto& e : fs::recursive_directory_iterator(frozen.bottleneck_dir))
    if (e.is_regular_file()) {
      write_text(e.path(), "not a bottleneck");
      cache[e.path()] = "not a bottleneck";
    }
  REQUIRE(cache.size() == 80);
  RetrainConfig tuned = w.config("tuned");
  tuned.fine_tune = true;
  tuned.how_many_training_steps = 5;
  RetrainResult r = retrain::retrain(tuned, local_modules());
  CHECK(r.bottlenecks_computed == 0);
  CHECK(r.bottlenecks_cached == 0);
  std::map<fs::path, std::string> after;
  for (const auto& e : fs::recursive_directory_iterator(frozen.bottleneck_dir))
    if (e.is_regular_file()) after[e.path()] = read_text(e.path());
  CHECK(after == cache);
  // A --bottleneck_dir that does not exist is not made.
  tuned = w.config("tuned2");
  tuned.fine_tune = true;
  tuned.how_many_training_steps = 5;
  tuned.bottleneck_dir = (w.tmp.path / "no_cache").string();
  retrain::retrain(tuned, local_modules());
  CHECK(!fs::exists(tuned.bottleneck_dir));
}

TEST_CASE("fine-tune: bad flags are errors naming the flag, and nothing is written") {
  TwoTone w;
  auto base = [&] {
    RetrainConfig c = w.config("model");
    c.fine_tune = true;
    c.how_many_training_steps = 2;
    return c;
  };
  RetrainConfig c = base();
  SUBCASE("scopes matching no variable list some") {
    c.fine_tune_scopes = "Conv2d_0, logits";
    expect_retrain_error(c, Code::kInvalidArgument,
                         {"--fine_tune_scopes 'Conv2d_0, logits'", "matches none", "offset, projection"});
  }
  SUBCASE("scopes selecting only variables the features do not depend on") {
    c.fine_tune_scopes = "unused";
    expect_retrain_error(c, Code::kInvalidArgument, {"--fine_tune_scopes 'unused'", "does not depend on"});
  }
  SUBCASE("a learning rate <= 0") {
    c.fine_tune_learning_rate = 0;
    expect_retrain_error(c, Code::kInvalidArgument, {"--fine_tune_learning_rate must be positive"});
    c.fine_tune_learning_rate = -0.5;
    expect_retrain_error(c, Code::kInvalidArgument, {"--fine_tune_learning_rate must be positive"});
  }
  SUBCASE("a module without trainable variables") {
    fs::path frozen_module = w.tmp.path / "frozen_module";
    Module(create_module_spec([](ModuleBuilder& b) {
      Scope s = b.scope();
      Output images = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 8, 8, 3}, "images");
      ops::VariableOptions frozen;
      frozen.trainable = false;
      Output x = ops::matmul(s, ops::mean(s, images, {1, 2}), ops::variable(s, "projection", {3, 2}, frozen));
      b.add_signature(kDefaultSignature, {{"images", images}}, {{"default", x}});
      b.set_image_info(8, 8, 3);
    })).export_to(frozen_module.string());
    c.module = frozen_module.string();
    expect_retrain_error(c, Code::kInvalidArgument, {"--fine_tune", "has no trainable variables"});
  }
  SUBCASE("fine-tuning flags without --fine_tune") {
    c.fine_tune = false;
    c.fine_tune_scopes = "projection";
    expect_retrain_error(c, Code::kInvalidArgument, {"--fine_tune_scopes needs --fine_tune"});
    c.fine_tune_scopes.clear();
    c.fine_tune_learning_rate = 0.1;
    expect_retrain_error(c, Code::kInvalidArgument, {"--fine_tune_learning_rate needs --fine_tune"});
  }
  CHECK(!fs::exists(c.bottleneck_dir));
}

TEST_CASE("fine-tune: TensorBoard gets the training graph with the module and retrain.py's summaries") {
  namespace ev = hub::event_test;
  TwoTone w;
  RetrainConfig c = w.config("model");
  c.fine_tune = true;
  c.how_many_training_steps = 6;
  c.eval_step_interval = 5;
  retrain::retrain(c, local_modules());
  std::vector<ev::Event> train = ev::read_events_dir(w.tmp.path / "logs" / "train");
  std::vector<ev::Event> validation = ev::read_events_dir(w.tmp.path / "logs" / "validation");
  REQUIRE(train.size() == 2 + 6);
  REQUIRE(train[1].what == 4);
  tf::proto::GraphDef def;
  REQUIRE(def.ParseFromString(train[1].graph_def));
  std::set<std::string> nodes;
  for (const auto& n : def.node()) nodes.insert(n.name());
  for (const char* n : {"input/images", "module/projection", "module/offset", "final_retrain_ops/weights/final_weights",
                        "final_result"})
    CHECK_MESSAGE(nodes.count(n), n);
  for (int64_t step = 0; step < 6; ++step) {
    const ev::Event& e = train[2 + step];
    CHECK(e.step == step);
    for (const char* tag : {"final_retrain_ops/weights/summaries/mean", "final_retrain_ops/Wx_plus_b/pre_activations",
                            "activations", "accuracy", "cross_entropy"})
      CHECK_MESSAGE(e.find(tag), tag);
    // The logits of the step's 40 images, 2 classes each.
    CHECK(e.find("final_retrain_ops/Wx_plus_b/pre_activations")->histo.num == 80);
  }
  std::vector<int64_t> steps;
  for (size_t i = 1; i < validation.size(); ++i) steps.push_back(validation[i].step);
  CHECK(steps == std::vector<int64_t>{0, 5});
}
