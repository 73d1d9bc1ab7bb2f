// modules/train: train / evaluate / export_module on a tiny generated TFRecord
// data set (class-dependent stripe patterns, PNG-encoded), checkpoints and
// resuming, fine-tuning flags, divergence, TensorBoard events, and the
// exported module against the net computed directly from the checkpoint;
// TensorFlow checkpoints: --checkpoint_format tf (read back by hub and by
// LevelDB), and fine-tuning from a slim-style TensorFlow checkpoint with
// exclusions, trainable scopes, missing variables and BatchNorm statistics.
#include "modules/train/train.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>

#include "hub/core/error.h"
#include "hub/core/fileio.h"
#include "hub/graph/session.h"
#include "hub/image/image.h"
#include "hub/image/resize.h"
#include "hub/interop/leveldb_util.h"
#include "hub/interop/tf/bundle.h"
#include "hub/interop/tf/table.h"
#include "hub/module/module.h"
#include "hub/module/safetensors.h"
#include "hub/ops/quantize.h"
#include "hub/ops/state.h"
#include "hub/ops/variables.h"
#include "modules/datasets/convert.h"
#include "modules/datasets/example.h"
#include "modules/datasets/tfrecord.h"
#include "modules/nets/nets.h"
#include "modules/preprocessing/preprocessing.h"
#include "modules/slim/quantize.h"
#include "modules/train/checkpoint.h"
#include "modules/train/event.pb.h"
#include "testutil.h"

using namespace hub;
using namespace hub::train;
namespace fs = std::filesystem;

namespace {

using hub::testing::bit_equal;
using hub::testing::TempDir;

void expect_error(Code code, const std::function<void()>& fn, const std::vector<std::string>& needles) {
  try {
    fn();
    FAIL("no error thrown, expected " << code_name(code));
  } catch (const Error& e) {
    CHECK_MESSAGE(e.code() == code, e.what());
    for (const std::string& n : needles)
      CHECK_MESSAGE(std::string(e.what()).find(n) != std::string::npos, e.what(), " lacks ", n);
  }
}

// Image i of class c: stripes whose orientation (rows for c < 5, columns
// otherwise) and period (2 + c % 5) identify the class, brightest in channel
// c % 3, plus a little deterministic noise. Values in [0, 1].
Tensor class_image(int c, int i, int64_t size, int64_t channels) {
  Tensor f = Tensor::zeros(DType::kFloat32, {size, size, channels});
  float* p = f.data<float>();
  int64_t period = 2 + c % 5;
  for (int64_t y = 0; y < size; ++y)
    for (int64_t x = 0; x < size; ++x)
      for (int64_t ch = 0; ch < channels; ++ch) {
        int64_t coord = c < 5 ? y : x;
        float stripe = static_cast<float>((coord / period) % 2);
        float weight = (channels == 1 || ch == c % 3) ? 1.0f : 0.4f;
        float noise = static_cast<float>((i * 131 + y * 17 + x * 31 + ch * 7) % 11) / 110.0f;
        p[(y * size + x) * channels + ch] = 0.1f + 0.6f * stripe * weight + noise;
      }
  return f;
}

std::vector<std::string> class_names(int classes) {
  std::vector<std::string> out;
  for (int c = 0; c < classes; ++c) out.push_back("class" + std::to_string(c));
  return out;
}

// <dir>/tiny_train.tfrecord (per_class_train images per class, classes
// interleaved), tiny_test.tfrecord and labels.txt.
void write_tiny(const std::string& dir, int64_t size, int64_t channels, int classes = 10, int per_class_train = 30,
                int per_class_test = 5) {
  fs::create_directories(dir);
  for (auto [split, per_class] : {std::pair<std::string, int>{"train", per_class_train}, {"test", per_class_test}}) {
    data::TFRecordWriter w((fs::path(dir) / data::shard_file_name("tiny", split, 0, 1)).string());
    for (int i = 0; i < per_class; ++i)
      for (int c = 0; c < classes; ++c) {
        std::vector<uint8_t> png =
            image::encode_png(image::to_uint8(class_image(c, i + (split == "test" ? 1000 : 0), size, channels)));
        w.write(data::make_image_example({std::string(png.begin(), png.end()), "png", c, size, size}));
      }
    w.commit();
  }
  data::write_labels_file((fs::path(dir) / "labels.txt").string(), class_names(classes));
}

TrainConfig tiny_config(const std::string& data_dir, const std::string& train_dir, const std::string& model) {
  TrainConfig c;
  c.train_dir = train_dir;
  c.model_name = model;
  c.dataset_name = "tiny";
  c.dataset_dir = data_dir;
  c.train_image_size = model == "cifar10" ? 24 : 0;
  c.batch_size = 8;
  c.max_number_of_steps = 30;
  c.num_preprocessing_threads = 1;
  c.log_every_n_steps = 1000000;
  c.optimizer = "adam";
  c.optimizer_options.opt_epsilon = 1e-8;
  c.learning_rate = 1e-3;
  c.learning_rate_decay_type = "fixed";
  c.weight_decay = 0;
  c.seed = 1;
  return c;
}

// A test's folder holding the tiny 32x32 RGB set in <dir>/data, with the
// cifar10 configs that train on it and export from it.
struct TinyRgb : TempDir {
  explicit TinyRgb(const std::string& name) : TempDir(name) { write_tiny(*this / "data", 32, 3); }
  TrainConfig train_config(const std::string& train_dir = "train") const {
    return tiny_config(*this / "data", *this / train_dir, "cifar10");
  }
  // export_module of `checkpoint` (a file, or a folder's latest) to <dir>/module, 24x24 input.
  ExportConfig export_config(const std::string& checkpoint, std::vector<int64_t> only_classes) const {
    ExportConfig x;
    x.model_name = "cifar10";
    x.checkpoint_path = checkpoint;
    x.dataset_name = "tiny";
    x.dataset_dir = *this / "data";
    x.image_size = 24;
    x.only_classes = std::move(only_classes);
    x.output_dir = *this / "module";
    return x;
  }
};

double mean_of(const std::vector<double>& v, size_t from, size_t to) {
  return std::accumulate(v.begin() + static_cast<std::ptrdiff_t>(from), v.begin() + static_cast<std::ptrdiff_t>(to),
                         0.0) /
         static_cast<double>(to - from);
}

std::vector<std::string> checkpoint_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string n = e.path().filename().string();
    if (n.rfind("model.ckpt-", 0) == 0) out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The TensorBoard events file of a folder: exactly one expected.
std::string events_file(const std::string& dir) {
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0) found.push_back(e.path().string());
  REQUIRE(found.size() == 1);
  return found[0];
}

}  // namespace

TEST_CASE("train cifar10 on tiny: the loss falls, TensorBoard events are written") {
  TinyRgb t("cifar10");
  TrainConfig c = t.train_config();
  TrainResult r = hub::train::train(c);
  CHECK(r.steps == 30);
  REQUIRE(r.losses.size() == 30);
  CHECK(r.first_loss == r.losses.front());
  CHECK(r.final_loss == r.losses.back());
  // The head starts near uniform: ln(10).
  CHECK(r.first_loss == doctest::Approx(std::log(10.0)).epsilon(0.15));
  double late = mean_of(r.losses, 25, 30);
  MESSAGE("cifar10 first loss " << r.first_loss << ", mean of last 5 " << late);
  CHECK(late < 0.6 * r.first_loss);
  CHECK(r.checkpoint == t / "train/model.ckpt-30.safetensors");

  // The same seed gives the same run (its first 3 steps here).
  TrainConfig again = c;
  again.train_dir = t / "train2";
  again.max_number_of_steps = 3;
  TrainResult r2 = hub::train::train(again);
  CHECK(r2.losses == std::vector<double>(r.losses.begin(), r.losses.begin() + 3));

  // TensorBoard: the version record first, then losses/total_loss scalars
  // (step 1 carries the first loss).
  data::TFRecordReader reader(events_file(t / "train"));
  std::string record;
  REQUIRE(reader.read(&record));
  tensorboard::Event first;
  REQUIRE(first.ParseFromString(record));
  CHECK(first.file_version() == "brain.Event:2");
  bool found_step1 = false;
  int total_loss_events = 0;
  while (reader.read(&record)) {
    tensorboard::Event e;
    REQUIRE(e.ParseFromString(record));
    for (const auto& v : e.summary().value())
      if (v.tag() == "losses/total_loss") {
        ++total_loss_events;
        CHECK(std::isfinite(v.simple_value()));
        if (e.step() == 1) {
          found_step1 = true;
          CHECK(v.simple_value() == static_cast<float>(r.first_loss));
        }
      }
  }
  CHECK(total_loss_events >= 1);
  CHECK(found_step1);
}

TEST_CASE("training builds the auxiliary head of the nets that have one, and the checkpoint holds it") {
  // nasnet_cifar's head reads cell 11 (8x8 at 32 px); slim's checkpoints of
  // the NASNets hold aux_<cell>/aux_logits/... so fine-tuning loads it too.
  TinyRgb t("aux");
  TrainConfig c = tiny_config(t / "data", t / "train", "nasnet_cifar");
  c.batch_size = 2;
  c.max_number_of_steps = 1;
  TrainResult r = hub::train::train(c);
  REQUIRE(r.steps == 1);
  CHECK(std::isfinite(r.first_loss));
  auto vars = load_checkpoint(r.checkpoint);
  REQUIRE(vars.count("aux_11/aux_logits/FC/weights"));
  CHECK(vars.at("aux_11/aux_logits/FC/weights").shape() == Shape({768, 10}));
  CHECK(vars.count("aux_11/aux_logits/aux_bn1/moving_variance"));
  CHECK(vars.count("final_layer/FC/biases"));
  // Nets without one are unchanged: cifar10 has no "AuxLogits" variables.
  TrainConfig plain = t.train_config("plain");
  plain.max_number_of_steps = 1;
  for (const auto& [name, value] : load_checkpoint(hub::train::train(plain).checkpoint))
    CHECK(name.find("aux") == std::string::npos);
}

TEST_CASE("train lenet on tiny 28x28 grayscale: the loss falls") {
  TempDir t("lenet");
  write_tiny(t / "data", 28, 1);
  TrainConfig c = tiny_config(t / "data", t / "train", "lenet");
  c.max_number_of_steps = 15;
  TrainResult r = hub::train::train(c);
  CHECK(r.steps == 15);
  REQUIRE(r.losses.size() == 15);
  double early = mean_of(r.losses, 0, 3), late = mean_of(r.losses, 10, 15);
  MESSAGE("lenet first 3 " << early << ", last 5 " << late);
  CHECK(late < 0.6 * early);
}

TEST_CASE("checkpoints: max_to_keep, index, resume, evaluate, wrong shapes") {
  TinyRgb t("ckpt");
  TrainConfig c = t.train_config();
  c.max_number_of_steps = 6;
  c.save_interval_secs = 0;  // a checkpoint after every step
  TrainResult r = hub::train::train(c);
  CHECK(r.steps == 6);
  // Only the newest five remain, and the index names the latest first.
  std::vector<std::string> want;
  for (int s : {2, 3, 4, 5, 6}) want.push_back("model.ckpt-" + std::to_string(s) + ".safetensors");
  std::sort(want.begin(), want.end());
  CHECK(checkpoint_files(t / "train") == want);
  std::string index = read_text(t / "train/checkpoint");
  CHECK(index.rfind("model_checkpoint_path: \"model.ckpt-6.safetensors\"\n", 0) == 0);
  for (const std::string& w : want) CHECK(index.find("all_model_checkpoint_paths: \"" + w + "\"") != std::string::npos);
  CHECK(latest_checkpoint(t / "train") == t / "train/model.ckpt-6.safetensors");
  CHECK(checkpoint_step(t / "train/model.ckpt-6.safetensors") == 6);
  CHECK(checkpoint_step("run/model.ckpt-12") == 12);
  CHECK(checkpoint_step("model.ckpt-x.safetensors") == -1);
  CHECK(checkpoint_step("model.ckpt.safetensors") == -1);
  CHECK(checkpoint_step("model.ckpt-1234567890123456789") == -1);  // 19 digits
  auto step6 = load_checkpoint(t / "train/model.ckpt-6.safetensors");

  // Resume with learning rate 0: the steps continue from 6 and the weights
  // are exactly those of step 6 (restored, not re-initialized).
  TrainConfig resume = c;
  resume.max_number_of_steps = 8;
  resume.learning_rate = 0;
  resume.save_interval_secs = 1e9;
  TrainResult r2 = hub::train::train(resume);
  CHECK(r2.steps == 8);
  CHECK(r2.losses.size() == 2);
  CHECK(r2.checkpoint == t / "train/model.ckpt-8.safetensors");
  auto step8 = load_checkpoint(r2.checkpoint);
  int compared = 0;
  for (const auto& [name, value] : step6) {
    if (name.rfind("optimizer/", 0) == 0) continue;
    CAPTURE(name);
    REQUIRE(step8.count(name));
    CHECK(bit_equal(value, step8.at(name)));
    ++compared;
  }
  CHECK(compared == 10);  // 5 layers x (weights, biases)
  CHECK(checkpoint_files(t / "train").size() == 5);

  // evaluate on the train_dir (latest checkpoint), whole test split.
  EvalConfig e;
  e.checkpoint_path = t / "train";
  e.model_name = "cifar10";
  e.dataset_name = "tiny";
  e.dataset_dir = t / "data";
  e.eval_image_size = 24;
  e.batch_size = 16;  // 50 examples: 3 full batches and one of 2
  e.num_preprocessing_threads = 1;
  e.eval_dir = t / "eval";
  EvalResult er = evaluate(e);
  CHECK(er.examples == 50);
  CHECK(er.accuracy >= 0.0);
  CHECK(er.accuracy <= 1.0);
  CHECK(er.recall_at_5 >= er.accuracy);
  CHECK(er.recall_at_5 <= 1.0);
  // The fraction is of 50 examples.
  CHECK(std::abs(er.accuracy * 50 - std::round(er.accuracy * 50)) < 1e-9);
  CHECK(fs::exists(events_file(t / "eval")));

  // A checkpoint with a wrong-shaped variable: evaluate and resume refuse it
  // naming the variable.
  auto bad = step8;
  bad["softmax_linear/biases"] = Tensor::zeros(DType::kFloat32, {3});
  write_safetensors(t / "bad.safetensors", bad);
  EvalConfig be = e;
  be.checkpoint_path = t / "bad.safetensors";
  be.eval_dir.clear();
  expect_error(Code::kInvalidArgument, [&] { evaluate(be); }, {"softmax_linear/biases", "bad.safetensors"});
  save_checkpoint(t / "badtrain", 3, bad);
  TrainConfig bt = c;
  bt.train_dir = t / "badtrain";
  expect_error(Code::kInvalidArgument, [&] { hub::train::train(bt); }, {"softmax_linear/biases", "model.ckpt-3"});
  // A missing checkpoint folder.
  EvalConfig me = e;
  me.checkpoint_path = t / "nothing_here";
  me.eval_dir.clear();
  expect_error(Code::kNotFound, [&] { evaluate(me); }, {"nothing_here", "--checkpoint_path"});
  // By default eval reads the latest checkpoint of train's default train_dir,
  // as eval_image_classifier's --checkpoint_path defaults to it.
  CHECK(EvalConfig{}.checkpoint_path == TrainConfig{}.train_dir);
  // The checkpoint is checked before the data set is opened.
  me.dataset_dir = t / "no_data";
  expect_error(Code::kNotFound, [&] { evaluate(me); }, {"nothing_here", "--checkpoint_path"});
}

TEST_CASE("fine-tuning: only_classes, export, new head from the checkpoint") {
  TinyRgb t("finetune");
  // A: classes 0..4 only (relabelled 0..4), a 5-way head.
  TrainConfig a = t.train_config("a");
  a.only_classes = {0, 1, 2, 3, 4};
  a.max_number_of_steps = 3;
  TrainResult ra = hub::train::train(a);
  CHECK(ra.steps == 3);
  auto ckpt_a = load_checkpoint(ra.checkpoint);
  CHECK(ckpt_a.at("softmax_linear/biases").shape() == Shape{5});

  // export_module of A: a 5-way module with the kept labels.
  export_module(t.export_config(t / "a", {0, 1, 2, 3, 4}));
  ModuleSpec spec = load_module_spec(t / "module");
  CHECK(read_text((fs::path(spec.assets_dir()) / "labels.txt").string()) == "class0\nclass1\nclass2\nclass3\nclass4\n");

  // B0 and B: 10 classes from A, head excluded from the restore and the only
  // trainable scope. B0 (learning rate 0) shows the head's initial value.
  TrainConfig b = t.train_config("b");
  b.checkpoint_path = t / "a";
  b.checkpoint_exclude_scopes = "softmax_linear";
  b.trainable_scopes = "softmax_linear";
  b.max_number_of_steps = 3;
  b.weight_decay = 0.004;  // the frozen layers' decay terms must not move them
  TrainConfig b0 = b;
  b0.train_dir = t / "b0";
  b0.max_number_of_steps = 1;
  b0.learning_rate = 0;
  auto init = load_checkpoint(hub::train::train(b0).checkpoint);
  TrainResult rb = hub::train::train(b);
  CHECK(rb.steps == 3);
  auto ckpt_b = load_checkpoint(rb.checkpoint);
  int frozen = 0;
  for (const auto& [name, value] : ckpt_a) {
    if (name.rfind("optimizer/", 0) == 0 || name.rfind("softmax_linear", 0) == 0) continue;
    CAPTURE(name);
    REQUIRE(ckpt_b.count(name));
    CHECK(bit_equal(value, ckpt_b.at(name)));
    ++frozen;
  }
  CHECK(frozen == 8);
  for (const std::string name : {"softmax_linear/weights", "softmax_linear/biases"}) {
    CAPTURE(name);
    REQUIRE(ckpt_b.count(name));
    CHECK(ckpt_b.at(name).shape() == (name == "softmax_linear/weights" ? Shape{192, 10} : Shape{10}));
    CHECK_FALSE(bit_equal(init.at(name), ckpt_b.at(name)));
  }

  // Without exclusion, A's 5-way head does not fit the 10-way net.
  TrainConfig noex = b;
  noex.train_dir = t / "noex";
  noex.checkpoint_exclude_scopes.clear();
  expect_error(Code::kInvalidArgument, [&] { hub::train::train(noex); }, {"softmax_linear/", "--checkpoint_path"});
  CHECK_FALSE(fs::exists(t / "noex/checkpoint"));

  // A checkpoint lacking the head: NotFound naming the variable, unless
  // ignore_missing_vars keeps the initial value.
  auto headless = ckpt_a;
  headless.erase("softmax_linear/weights");
  headless.erase("softmax_linear/biases");
  write_safetensors(t / "headless.safetensors", headless);
  TrainConfig miss = b;
  miss.train_dir = t / "miss";
  miss.checkpoint_path = t / "headless.safetensors";
  miss.checkpoint_exclude_scopes.clear();
  miss.max_number_of_steps = 1;
  expect_error(Code::kNotFound, [&] { hub::train::train(miss); }, {"softmax_linear/", "headless.safetensors"});
  miss.ignore_missing_vars = true;
  TrainResult rm = hub::train::train(miss);
  CHECK(rm.steps == 1);
  auto ckpt_m = load_checkpoint(rm.checkpoint);
  CHECK(bit_equal(ckpt_m.at("conv1/weights"), ckpt_a.at("conv1/weights")));

  // An unmatched trainable scope is refused.
  TrainConfig none = b;
  none.train_dir = t / "none";
  none.trainable_scopes = "NoSuchScope";
  expect_error(Code::kInvalidArgument, [&] { hub::train::train(none); }, {"NoSuchScope"});
}

TEST_CASE("a diverging loss stops training naming the step") {
  TinyRgb t("nan");
  TrainConfig c = t.train_config();
  c.optimizer = "sgd";
  c.learning_rate = 1e12;
  c.max_number_of_steps = 30;
  try {
    hub::train::train(c);
    FAIL("training did not diverge");
  } catch (const Error& e) {
    std::string m = e.what();
    CHECK_MESSAGE(e.code() == Code::kFailedPrecondition, m);
    size_t at = m.find("at step ");
    REQUIRE_MESSAGE(at != std::string::npos, m);
    int64_t step = std::stoll(m.substr(at + 8));
    CHECK(step >= 1);
    CHECK(step <= 30);
    CHECK(m.find("loss") != std::string::npos);
  }
}

TEST_CASE("export_module with is_training: the default tag set runs the training-mode graph") {
  // Batch norm on batch statistics makes an image's features depend on the
  // rest of its batch; the inference graph (moving statistics) does not.
  TempDir t("export_training");
  auto row0_depends_on_batch = [&](bool is_training) {
    ExportConfig x;
    x.model_name = "mobilenet_v1_025";
    x.num_classes = 3;
    x.image_size = 32;
    x.is_training = is_training;
    x.output_dir = t / (is_training ? "training" : "inference");
    export_module(x);
    Module module(load_module_spec(x.output_dir));
    Tensor ab = Tensor::zeros(DType::kFloat32, {2, 32, 32, 3}), ac = Tensor::zeros(DType::kFloat32, {2, 32, 32, 3});
    const int64_t per = 32 * 32 * 3;
    for (auto [batch, second] : {std::pair<Tensor*, int>{&ab, 1}, {&ac, 6}}) {
      std::memcpy(batch->data<float>(), class_image(0, 0, 32, 3).data<float>(), per * sizeof(float));
      std::memcpy(batch->data<float>() + per, class_image(second, 1, 32, 3).data<float>(), per * sizeof(float));
    }
    // The features (before the training graph's dropout, which would make
    // any two calls differ).
    const std::vector<float> l1 = module.call_single("default", ab).to_vector<float>();
    const std::vector<float> l2 = module.call_single("default", ac).to_vector<float>();
    double diff = 0;  // over row 0, the image both batches share
    for (size_t k = 0; k < l1.size() / 2; ++k) diff = std::max(diff, static_cast<double>(std::abs(l1[k] - l2[k])));
    return diff;
  };
  CHECK(row0_depends_on_batch(false) < 1e-6);
  CHECK(row0_depends_on_batch(true) > 1e-3);
}

TEST_CASE("export_module: signatures, image size, labels, classification = softmax of the net") {
  TinyRgb t("export");
  TrainConfig c = t.train_config();
  c.only_classes = {1, 3, 5, 7, 9};
  c.max_number_of_steps = 2;
  TrainResult r = hub::train::train(c);
  ExportConfig x = t.export_config(r.checkpoint, c.only_classes);
  export_module(x);
  expect_error(Code::kAlreadyExists, [&] { export_module(x); }, {});

  ModuleSpec spec = load_module_spec(t / "module");
  CHECK(spec.signature_names() == std::vector<std::string>{"classification", "default", "logits"});
  CHECK(spec.has_tag_set({"train"}));
  CHECK(get_expected_image_size(spec) == std::pair<int64_t, int64_t>{24, 24});
  CHECK(get_num_image_channels(spec) == 3);
  for (const std::string sig : {"default", "logits", "classification"}) {
    CAPTURE(sig);
    const auto& in = spec.input_info(sig);
    REQUIRE(in.count("images"));
    CHECK(in.at("images").shape == Shape{kUnknownDim, 24, 24, 3});
    CHECK(spec.output_info(sig).at("default").shape == Shape{kUnknownDim, sig == "default" ? 192 : 5});
  }
  CHECK(read_text((fs::path(spec.assets_dir()) / "labels.txt").string()) == "class1\nclass3\nclass5\nclass7\nclass9\n");

  // Reference: the eval preprocessing of the library, the net built here with
  // the checkpoint's variables, softmax in double.
  const int64_t n = 4;
  Tensor batch = Tensor::zeros(DType::kFloat32, {n, 24, 24, 3});
  Tensor prepped = Tensor::zeros(DType::kFloat32, {n, 24, 24, 3});
  const int64_t per = 24 * 24 * 3;
  for (int64_t i = 0; i < n; ++i) {
    Tensor img =
        hub::image::resize_bilinear(class_image(static_cast<int>(i * 3 % 10), static_cast<int>(i), 32, 3), 24, 24);
    std::memcpy(batch.data<float>() + i * per, img.data<float>(), per * sizeof(float));
    Tensor p = preprocessing::get("cifar10")(img, 24, 24, false, 0);
    std::memcpy(prepped.data<float>() + i * per, p.data<float>(), per * sizeof(float));
  }
  Graph g;
  Scope s(g);
  Output images = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 24, 24, 3}, "images");
  nets::NetOptions o;
  o.num_classes = 5;
  nets::Net net = nets::build_net("cifar10", s, images, o);
  auto ckpt = load_checkpoint(r.checkpoint);
  VariableStore vars;
  for (int id : g.variables()) vars.set(g.node(id).name, ckpt.at(g.node(id).name));
  Session session(g, &vars);
  Tensor logits = session.run_one({{images, prepped}}, net.logits);

  Module module(spec);
  Tensor probs = module.call_single("classification", batch);
  Tensor mlogits = module.call_single("logits", batch);
  REQUIRE(probs.shape() == Shape{n, 5});
  for (int64_t i = 0; i < n; ++i) {
    double mx = -1e30, sum = 0;
    for (int64_t k = 0; k < 5; ++k) mx = std::max(mx, static_cast<double>(logits.data<float>()[i * 5 + k]));
    for (int64_t k = 0; k < 5; ++k) sum += std::exp(logits.data<float>()[i * 5 + k] - mx);
    for (int64_t k = 0; k < 5; ++k) {
      double want = std::exp(logits.data<float>()[i * 5 + k] - mx) / sum;
      CHECK(std::abs(probs.data<float>()[i * 5 + k] - want) <= 1e-5);
      CHECK(std::abs(mlogits.data<float>()[i * 5 + k] - logits.data<float>()[i * 5 + k]) <= 1e-4);
    }
  }
}

TEST_CASE("--quantize_delay: the float graph before the delay, fake quantization after; ranges saved and exported") {
  TinyRgb t("qat");
  TrainConfig f = t.train_config("float");
  f.max_number_of_steps = 4;
  const TrainResult fr = hub::train::train(f);
  TrainConfig q = t.train_config("qat");
  q.max_number_of_steps = 4;
  q.quantize_delay = 2;
  const TrainResult qr = hub::train::train(q);
  REQUIRE(fr.losses.size() == 4);
  REQUIRE(qr.losses.size() == 4);
  // Steps 0 and 1 run the float graph (the ranges are only tracked): the same
  // losses bit for bit; from step 2 the fake-quantized graph.
  CHECK(qr.losses[0] == fr.losses[0]);
  CHECK(qr.losses[1] == fr.losses[1]);
  CHECK(qr.losses[2] != fr.losses[2]);
  CHECK(qr.losses[3] != fr.losses[3]);

  // One range per layer, in the checkpoint; none in the float run's.
  const auto ckpt = load_checkpoint(qr.checkpoint);
  std::set<std::string> layers;
  for (const auto& [name, value] : ckpt) {
    const size_t at = name.find("/act_quant/");
    if (at == std::string::npos || name.rfind("optimizer/", 0) == 0) continue;
    layers.insert(name.substr(0, at));
  }
  CHECK(layers == std::set<std::string>{"conv1", "conv2", "local3", "local4", "softmax_linear"});
  for (const std::string& layer : layers) {
    CAPTURE(layer);
    const float lo = ckpt.at(layer + "/act_quant/min").data<float>()[0];
    const float hi = ckpt.at(layer + "/act_quant/max").data<float>()[0];
    CHECK(lo <= 0);
    CHECK(hi > 0);
    CHECK(std::isfinite(lo));
    CHECK(std::isfinite(hi));
  }
  for (const auto& [name, value] : load_checkpoint(fr.checkpoint)) CHECK(name.find("act_quant") == std::string::npos);

  // Resuming restores the ranges (no step runs; the checkpoint is written again).
  TrainResult again = hub::train::train(q);
  CHECK(again.losses.empty());
  const auto resumed = load_checkpoint(again.checkpoint);
  for (const std::string& layer : layers)
    for (const char* bound : {"/act_quant/min", "/act_quant/max"})
      CHECK(bit_equal(resumed.at(layer + bound), ckpt.at(layer + bound)));

  // hub eval --quantize runs the fake-quantized graph on the checkpoint.
  EvalConfig e;
  e.checkpoint_path = qr.checkpoint;
  e.model_name = "cifar10";
  e.dataset_name = "tiny";
  e.dataset_dir = t / "data";
  e.eval_image_size = 24;
  e.quantize = true;
  const EvalResult er = hub::train::evaluate(e);
  CHECK(er.examples == 50);

  // hub export --quantize: the inference graph keeps the FakeQuant nodes and
  // the module holds the trained ranges.
  ExportConfig x = t.export_config(qr.checkpoint, {});
  x.quantize = true;
  export_module(x);
  ModuleSpec spec = load_module_spec(x.output_dir);
  const Graph& g = spec.graph();
  int weight_quants = 0, activation_quants = 0;
  for (const Node& n : g.nodes()) {
    if (n.op == "FakeQuantWithMinMaxVarsPerChannel") {  // the weights, per output channel
      ++weight_quants;
      CHECK(n.attrs.get_bool("narrow_range"));
      CHECK(g.node(g.node(n.inputs[0]).inputs[0]).op == "Variable");
    } else if (n.op == "FakeQuantWithMinMaxVars") {
      ++activation_quants;
      CHECK_FALSE(n.attrs.get_bool("narrow_range"));
      CHECK(g.node(n.inputs[1]).op == "Variable");
      CHECK(slim::is_activation_range(g.node(n.inputs[1]).name));
      CHECK(slim::is_activation_range(g.node(n.inputs[2]).name));
    }
  }
  CHECK(weight_quants == 5);
  CHECK(activation_quants == 5);
  Module module(spec);
  for (const std::string& layer : layers)
    for (const char* bound : {"/act_quant/min", "/act_quant/max"})
      CHECK(bit_equal(module.variable_map().at(layer + bound).value(), ckpt.at(layer + bound)));
  // The logits lie on the grid of softmax_linear's range.
  Tensor batch = Tensor::zeros(DType::kFloat32, {2, 24, 24, 3});
  for (int i = 0; i < 2; ++i) {
    Tensor img = hub::image::resize_bilinear(class_image(i * 5, i, 32, 3), 24, 24);
    std::memcpy(batch.data<float>() + i * 24 * 24 * 3, img.data<float>(), 24 * 24 * 3 * sizeof(float));
  }
  Tensor logits = module.call_single("logits", batch);
  const ops::QuantParams p = ops::nudged_quant_params(ckpt.at("softmax_linear/act_quant/min").data<float>()[0],
                                                      ckpt.at("softmax_linear/act_quant/max").data<float>()[0]);
  for (int64_t i = 0; i < logits.num_elements(); ++i) {
    const double k = (logits.data<float>()[i] - p.nudged_min) / p.scale;
    CHECK(std::fabs(k - std::round(k)) < 1e-3);
  }
  // Fine-tuning the float checkpoint with fake quantization from the first
  // step: its missing ranges start fresh and are set from the first batch.
  TrainConfig tune = t.train_config("tune");
  tune.max_number_of_steps = 1;
  tune.quantize_delay = 0;
  tune.checkpoint_path = fr.checkpoint;
  const TrainResult tr = hub::train::train(tune);
  const auto tuned = load_checkpoint(tr.checkpoint);
  for (const std::string& layer : layers) {
    CAPTURE(layer);
    CHECK(tuned.at(layer + "/act_quant/max").data<float>()[0] > 0);
  }
  // A float checkpoint has no ranges to export.
  ExportConfig from_float = t.export_config(fr.checkpoint, {});
  from_float.quantize = true;
  from_float.output_dir = t / "float_module";
  expect_error(Code::kNotFound, [&] { export_module(from_float); }, {"act_quant", "--checkpoint_path"});
  CHECK_FALSE(fs::exists(from_float.output_dir));
}

TEST_CASE("--quantize_delay: values other than -1 below 0 fail naming the flag") {
  TinyRgb t("qat_bad");
  TrainConfig c = t.train_config();
  c.quantize_delay = -2;
  expect_error(Code::kInvalidArgument, [&] { hub::train::train(c); }, {"--quantize_delay", "-2"});
  CHECK_FALSE(fs::exists(t / "train"));
}

TEST_CASE("resuming restores the moving averages") {
  TinyRgb t("ema");
  TrainConfig c = t.train_config();
  c.moving_average_decay = 0.9;
  c.max_number_of_steps = 3;
  hub::train::train(c);
  auto step3 = load_checkpoint(t / "train/model.ckpt-3.safetensors");
  const std::string var = "conv1/weights", avg = "conv1/weights/ExponentialMovingAverage";
  REQUIRE(step3.count(avg));
  REQUIRE_FALSE(bit_equal(step3.at(var), step3.at(avg)));  // the average lags behind
  // Learning rate 0: the variables stay at their step-3 values; the restored
  // averages keep moving toward them, so they still differ. (Re-created
  // averages would start as copies of the variables and stay equal.)
  c.max_number_of_steps = 5;
  c.learning_rate = 0;
  TrainResult r = hub::train::train(c);
  auto step5 = load_checkpoint(r.checkpoint);
  CHECK(bit_equal(step5.at(var), step3.at(var)));
  CHECK_FALSE(bit_equal(step5.at(avg), step5.at(var)));
  CHECK_FALSE(bit_equal(step5.at(avg), step3.at(avg)));
}

TEST_CASE("moving averages cover every model variable, batch-norm statistics and frozen layers included") {
  // slim averages slim.get_model_variables(), not just what trains: here only
  // the logits train, and the batch-norm moving statistics change every step.
  TinyRgb t("ema_all");
  TrainConfig c = tiny_config(t / "data", t / "train", "mobilenet_v1_025");
  c.train_image_size = 32;
  c.batch_size = 4;
  c.trainable_scopes = "MobilenetV1/Logits";
  c.moving_average_decay = 0.9;
  c.max_number_of_steps = 1;
  auto step1 = load_checkpoint(hub::train::train(c).checkpoint);
  c.max_number_of_steps = 2;
  auto step2 = load_checkpoint(hub::train::train(c).checkpoint);
  const std::string suffix = "/ExponentialMovingAverage";
  int model_variables = 0;
  for (const auto& [name, value] : step2) {
    if (name.rfind("optimizer/", 0) == 0 || name.find(suffix) != std::string::npos) continue;
    ++model_variables;
    CHECK_MESSAGE(step2.count(name + suffix), name, " has no moving average");
  }
  CHECK(model_variables > 100);
  // d = min(0.9, (1 + step) / (10 + step)); the shadow starts at the initial
  // value (moving_mean 0) and follows shadow -= (1 - d) (shadow - variable).
  const std::string mean = "MobilenetV1/Conv2d_3_pointwise/BatchNorm/moving_mean";
  const std::vector<float> v1 = step1.at(mean).to_vector<float>(), v2 = step2.at(mean).to_vector<float>();
  const std::vector<float> s1 = step1.at(mean + suffix).to_vector<float>(),
                           s2 = step2.at(mean + suffix).to_vector<float>();
  const double d1 = 2.0 / 11.0, d2 = 3.0 / 12.0;
  int moved = 0;
  for (size_t i = 0; i < v1.size(); ++i) {
    CHECK(s1[i] == doctest::Approx((1 - d1) * v1[i]).epsilon(1e-5));
    CHECK(s2[i] == doctest::Approx(s1[i] - (1 - d2) * (s1[i] - v2[i])).epsilon(1e-5));
    moved += v2[i] != v1[i];
  }
  CHECK(moved > 0);
  // A frozen layer's average equals its unchanging value.
  const std::string frozen = "MobilenetV1/Conv2d_0/weights";
  CHECK(bit_equal(step2.at(frozen), step1.at(frozen)));
  CHECK(bit_equal(step2.at(frozen + suffix), step2.at(frozen)));
}

TEST_CASE("--checkpoint_format tf: TensorFlow checkpoints, read by hub and LevelDB; resume, evaluate, export") {
  TinyRgb t("tfckpt");
  TrainConfig c = t.train_config();
  c.checkpoint_format = "tf";
  c.max_number_of_steps = 6;
  c.save_interval_secs = 0;
  TrainResult r = hub::train::train(c);
  CHECK(r.checkpoint == t / "train/model.ckpt-6");
  std::vector<std::string> want;
  for (int s : {2, 3, 4, 5, 6})
    for (const char* ext : {".index", ".data-00000-of-00001"}) want.push_back("model.ckpt-" + std::to_string(s) + ext);
  std::sort(want.begin(), want.end());
  CHECK(checkpoint_files(t / "train") == want);
  CHECK(read_text(t / "train/checkpoint") ==
        "model_checkpoint_path: \"model.ckpt-6\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-2\"\nall_model_checkpoint_paths: \"model.ckpt-3\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-4\"\nall_model_checkpoint_paths: \"model.ckpt-5\"\n"
        "all_model_checkpoint_paths: \"model.ckpt-6\"\n");
  CHECK(latest_checkpoint(t / "train") == t / "train/model.ckpt-6");
  CHECK(checkpoint_step(r.checkpoint) == 6);

  // hub reads it: the variables, the optimizer state and TensorFlow's global_step.
  auto step6 = load_checkpoint(r.checkpoint);
  CHECK(step6.at("global_step").item<int64_t>() == 6);
  CHECK(step6.at("conv1/weights").shape() == Shape{5, 5, 3, 64});
  CHECK(step6.count("optimizer/global_step"));
  // LevelDB reads its index: the header, then exactly hub's names, each entry
  // describing the tensor hub reads.
  const testing::Entries entries = testing::leveldb_entries(r.checkpoint + ".index");
  REQUIRE(entries.size() == step6.size() + 1);
  CHECK(entries[0].first.empty());
  size_t i = 1;
  for (const auto& [name, value] : step6) {
    CAPTURE(name);
    CHECK(entries[i].first == name);
    CHECK(tf::Table::open(r.checkpoint + ".index").get(name) == entries[i].second);
    ++i;
  }

  // Resume from the TensorFlow checkpoints with learning rate 0.
  TrainConfig resume = c;
  resume.max_number_of_steps = 8;
  resume.learning_rate = 0;
  resume.save_interval_secs = 1e9;
  TrainResult r2 = hub::train::train(resume);
  CHECK(r2.steps == 8);
  auto step8 = load_checkpoint(r2.checkpoint);
  for (const std::string name : {"conv1/weights", "local3/biases", "softmax_linear/weights"}) {
    CAPTURE(name);
    CHECK(bit_equal(step8.at(name), step6.at(name)));
  }

  // Evaluate and export from the folder, the prefix, and a moved folder whose
  // `checkpoint` file holds absolute paths (as TensorFlow 1.x wrote them).
  EvalConfig e;
  e.checkpoint_path = t / "train";
  e.model_name = "cifar10";
  e.dataset_name = "tiny";
  e.dataset_dir = t / "data";
  e.eval_image_size = 24;
  e.num_preprocessing_threads = 1;
  EvalResult er = evaluate(e);
  CHECK(er.examples == 50);
  e.checkpoint_path = r2.checkpoint;
  CHECK(evaluate(e).accuracy == er.accuracy);
  fs::create_directories(t / "moved");
  for (const char* ext : {".index", ".data-00000-of-00001"})
    fs::copy_file(r2.checkpoint + ext, t / (std::string("moved/model.ckpt-8") + ext));
  std::ofstream(t / "moved/checkpoint") << "model_checkpoint_path: \"/gone/train/model.ckpt-8\"\n"
                                        << "all_model_checkpoint_paths: \"/gone/train/model.ckpt-8\"\n";
  CHECK(resolve_checkpoint(t / "moved") == t / "moved/model.ckpt-8");
  e.checkpoint_path = t / "moved";
  CHECK(evaluate(e).accuracy == er.accuracy);
  export_module(t.export_config(t / "moved", {}));
  ModuleSpec spec = load_module_spec(t / "module");
  Module module(spec);
  CHECK(bit_equal(module.variable_map().at("conv1/weights").value(), step8.at("conv1/weights")));

  // One file of a TensorFlow checkpoint instead of its prefix; a bad format name.
  expect_error(Code::kInvalidArgument, [&] { resolve_checkpoint(r2.checkpoint + ".index"); },
               {"pass its prefix " + r2.checkpoint});
  TrainConfig bad = c;
  bad.train_dir = t / "bad";
  bad.checkpoint_format = "pb";
  expect_error(Code::kInvalidArgument, [&] { hub::train::train(bad); }, {"--checkpoint_format 'pb'"});
  CHECK_FALSE(fs::exists(t / "bad"));
}

namespace {

// The variables of `model` at `size` with `classes` classes, as the training graph has them.
std::map<std::string, TensorSpec> net_variables(const std::string& model, int64_t size, int64_t classes) {
  Graph g;
  Scope s(g);
  Output images = ops::placeholder(s, DType::kFloat32, {kUnknownDim, size, size, 3}, "images");
  nets::NetOptions o;
  o.num_classes = classes;
  o.is_training = true;
  nets::build_net(model, s, images, o);
  std::map<std::string, TensorSpec> out;
  for (int id : g.variables()) out[g.node(id).name] = g.node(id).outputs[0];
  return out;
}

}  // namespace

TEST_CASE("fine-tuning from a slim-style TensorFlow checkpoint: exclusions, trainable scopes, BatchNorm statistics") {
  TinyRgb t("slimft");
  const std::string model = "mobilenet_v1_025";
  // The published checkpoint's layout: every model variable (1001 classes),
  // global_step, and shadow and slot variables the restore must ignore.
  // Distinct values per variable; moving statistics far from their initial
  // zeros and ones.
  std::map<std::string, Tensor> slim;
  uint64_t seed = 1;
  for (const auto& [name, spec] : net_variables(model, 32, 1001)) {
    Tensor v = testing::random_tensor(spec.shape, seed++, -0.5f, 0.5f);
    if (name.find("moving_mean") != std::string::npos) v.fill(5.0);
    if (name.find("moving_variance") != std::string::npos) v.fill(7.0);
    slim[name] = v;
  }
  REQUIRE(slim.count("MobilenetV1/Conv2d_0/BatchNorm/moving_mean"));
  REQUIRE(slim.count("MobilenetV1/Logits/Conv2d_1c_1x1/weights"));
  slim["global_step"] = Tensor::scalar<int64_t>(12345);
  slim["MobilenetV1/Conv2d_0/weights/ExponentialMovingAverage"] = slim["MobilenetV1/Conv2d_0/weights"].clone();
  slim["MobilenetV1/Conv2d_0/weights/RMSProp"] = Tensor::zeros(DType::kFloat32, {3, 3, 3, 8});
  fs::create_directories(t / "slim");
  tf::write_bundle(t / "slim/mobilenet_v1_0.25_128.ckpt", slim);

  TrainConfig c = tiny_config(t / "data", t / "ft", model);
  c.train_image_size = 32;
  c.max_number_of_steps = 2;
  c.checkpoint_path = t / "slim/mobilenet_v1_0.25_128.ckpt";
  c.checkpoint_exclude_scopes = "MobilenetV1/Logits";
  c.trainable_scopes = "MobilenetV1/Logits";
  c.weight_decay = 0.00004;
  TrainResult r = hub::train::train(c);
  CHECK(r.steps == 2);
  auto got = load_checkpoint(r.checkpoint);
  int frozen = 0, statistics = 0;
  for (const auto& [name, spec] : net_variables(model, 32, 10)) {
    CAPTURE(name);
    REQUIRE(got.count(name));
    if (name.rfind("MobilenetV1/Logits", 0) == 0) {
      CHECK(got.at(name).shape() == (name.find("weights") != std::string::npos ? Shape{1, 1, 256, 10} : Shape{10}));
    } else if (name.find("/moving_") != std::string::npos) {
      // Restored, then moved by two updates of decay 0.9997 toward the batch statistics.
      const float from = name.find("moving_mean") != std::string::npos ? 5.0f : 7.0f;
      for (float v : got.at(name).to_vector<float>()) CHECK(std::abs(v - from) < 0.02f);
      CHECK_FALSE(bit_equal(got.at(name), slim.at(name)));
      ++statistics;
    } else {
      CHECK(bit_equal(got.at(name), slim.at(name)));  // restored and frozen
      ++frozen;
    }
  }
  CHECK(statistics == 2 * 27);  // 27 conv layers, each with moving mean and variance
  CHECK(frozen == 27 * 3);      // weights, beta, gamma

  // A folder with a TensorFlow `checkpoint` file naming the prefix.
  std::ofstream(t / "slim/checkpoint") << "model_checkpoint_path: \"mobilenet_v1_0.25_128.ckpt\"\n";
  TrainConfig from_dir = c;
  from_dir.train_dir = t / "ft_dir";
  from_dir.checkpoint_path = t / "slim";
  from_dir.max_number_of_steps = 1;
  CHECK(bit_equal(load_checkpoint(hub::train::train(from_dir).checkpoint).at("MobilenetV1/Conv2d_5_pointwise/weights"),
                  slim.at("MobilenetV1/Conv2d_5_pointwise/weights")));

  // Without the exclusion the 1001-class logits do not fit, even with
  // --ignore_missing_vars; nothing is written.
  TrainConfig noex = from_dir;
  noex.train_dir = t / "noex";
  noex.checkpoint_exclude_scopes.clear();
  noex.ignore_missing_vars = true;
  expect_error(
      Code::kInvalidArgument, [&] { hub::train::train(noex); },
      {"float32[1001] for 'MobilenetV1/Logits/Conv2d_1c_1x1/biases'", "expects float32[10]", "--checkpoint_path"});
  CHECK_FALSE(fs::exists(t / "noex/checkpoint"));

  // A variable the checkpoint lacks: NotFound naming it, unless ignored.
  slim.erase("MobilenetV1/Conv2d_3_pointwise/BatchNorm/gamma");
  tf::write_bundle(t / "slim/partial.ckpt", slim);
  TrainConfig miss = from_dir;
  miss.train_dir = t / "miss";
  miss.checkpoint_path = t / "slim/partial.ckpt";
  miss.checkpoint_exclude_scopes = " MobilenetV1/Logits , MobilenetV1/Conv2d_13";  // slim strips each item
  expect_error(Code::kNotFound, [&] { hub::train::train(miss); },
               {"'MobilenetV1/Conv2d_3_pointwise/BatchNorm/gamma' is missing", "partial.ckpt"});
  miss.ignore_missing_vars = true;
  miss.learning_rate = 0;
  auto kept = load_checkpoint(hub::train::train(miss).checkpoint);
  for (float v : kept.at("MobilenetV1/Conv2d_3_pointwise/BatchNorm/gamma").to_vector<float>()) CHECK(v == 1.0f);
  // Excluded by the prefix "MobilenetV1/Conv2d_13": the initial value, not the checkpoint's.
  CHECK_FALSE(bit_equal(kept.at("MobilenetV1/Conv2d_13_pointwise/weights"),
                        slim.at("MobilenetV1/Conv2d_13_pointwise/weights")));
  CHECK(bit_equal(kept.at("MobilenetV1/Conv2d_12_pointwise/weights"),
                  slim.at("MobilenetV1/Conv2d_12_pointwise/weights")));

  // A TensorFlow V1 checkpoint (one table file) is refused naming it.
  tf::TableBuilder v1;
  v1.add("", "saved slices");
  write_file_atomic(t / "slim/inception_v3.ckpt", v1.finish());
  TrainConfig old = from_dir;
  old.train_dir = t / "v1";
  old.checkpoint_path = t / "slim/inception_v3.ckpt";
  expect_error(Code::kUnimplemented, [&] { hub::train::train(old); },
               {"inception_v3.ckpt is a TensorFlow V1 checkpoint"});
}
