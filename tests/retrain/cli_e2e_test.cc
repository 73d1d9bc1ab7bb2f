// `hub retrain` and `hub classify` through the built binary (path in HUB_EXE,
// set by tests/meson.build), on generated images and a tiny feature module.
#include <doctest/doctest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "retrain_testutil.h"
#include "subprocess.h"

namespace fs = std::filesystem;
using namespace hub;
using namespace hub::retrain_test;
using hub::testing::hub_exe;

namespace {
// Quoted for the shell. (Built with += : `"'" + std::string&&` trips GCC 12's
// -Wrestrict false positive.)
std::string q(const fs::path& p) {
  std::string s(1, '\'');
  s += p.string();
  s += '\'';
  return s;
}
// Runs `args` with the hub binary; stdout and stderr go to files under dir.
struct Run {
  int rc;
  std::string out, err;
};
Run run_hub(const fs::path& dir, const std::string& args) {
  fs::path out = dir / "stdout.txt", err = dir / "stderr.txt";
  std::string cmd = q(hub_exe());
  cmd += " " + args + " > " + q(out) + " 2> " + q(err);
  const int rc = hub::testing::run_shell(cmd, 120);
  return {rc, read_text(out), read_text(err)};
}
// The images of write_class_images(dir, per_class), quoted for the shell.
std::string class_image_args(const fs::path& dir, int per_class) {
  std::string files;
  for (const std::string& c : class_names())
    for (int i = 0; i < per_class; ++i) {
      files += ' ';
      files += q(dir / c / image_name(i));
    }
  return files;
}

// `hub classify --json --top_k 1` of `module` on `files`: the top label of each.
std::vector<std::string> top1(const fs::path& dir, const fs::path& module, const std::string& files) {
  Run c = run_hub(dir, "classify --module " + q(module) + files + " --json --top_k 1");
  REQUIRE_MESSAGE(c.rc == 0, c.err);
  std::vector<std::string> labels;
  for (const auto& e : nlohmann::json::parse(c.out)) labels.push_back(e["predictions"][0]["label"]);
  return labels;
}

// A classifier retrained (`hub retrain … flags`, learning rate 0.5, seed 3) on
// 25 generated images per class over the tiny feature module, all under t.
struct Classifier {
  fs::path images, module, out;
};
Classifier retrained_classifier(const TempDir& t, const std::string& flags) {
  Classifier c{t.path / "images", t.path / "features", t.path / "classifier"};
  write_class_images(c.images, 25);
  export_feature_module(c.module);
  Run r = run_hub(t.path, "retrain --image-dir " + q(c.images) + " --module " + q(c.module) + " --bottleneck_dir " +
                              q(t.path / "bottlenecks") + " --summaries_dir " + q(t.path / "logs") +
                              " --output_graph " + q(c.out) + " --output_labels " + q(t.path / "labels.txt") +
                              " --learning_rate 0.5 --random_seed 3 " + flags);
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  return c;
}

int agreement(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  REQUIRE(a.size() == b.size());
  int n = 0;
  for (size_t k = 0; k < a.size(); ++k) n += a[k] == b[k];
  return n;
}
}  // namespace

TEST_CASE("hub retrain, then hub classify --json") {
  TempDir t;
  fs::path images = t.path / "images", module = t.path / "features", out = t.path / "classifier";
  write_class_images(images, 25);
  export_feature_module(module);
  const std::string common = "--image-dir " + q(images) + " --module " + q(module) + " --bottleneck_dir " +
                             q(t.path / "bottlenecks") + " --summaries_dir " + q(t.path / "logs") +
                             " --intermediate_output_graphs_dir " + q(t.path / "intermediate");
  Run r = run_hub(t.path, "retrain " + common + " --output_graph " + q(out) + " --output_labels " +
                              q(t.path / "labels.txt") +
                              " --how_many_training_steps 200 --learning_rate 0.5 --testing_percentage 20"
                              " --eval_step_interval 100 --random_seed 3");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(r.out.find("Final test accuracy = ") != std::string::npos);
  CHECK(r.out.find("bottlenecks: 75 computed, 0 cached, 0 images skipped") != std::string::npos);
  CHECK(read_text(t.path / "labels.txt") == "blue\ngreen\nred\n");
  CHECK(fs::exists(out / "module.pb"));

  r = run_hub(t.path, "classify --module " + q(out) + " " + q(images / "red" / image_name(0)) + " " +
                          q(images / "blue" / image_name(1)) + " " + q(images / "green" / image_name(2)) +
                          " --json --top_k 2");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  nlohmann::json j = nlohmann::json::parse(r.out);
  REQUIRE(j.is_array());
  REQUIRE(j.size() == 3);
  const char* want[] = {"red", "blue", "green"};
  for (size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    const auto& preds = j[i]["predictions"];
    REQUIRE(preds.size() == 2);
    CHECK(preds[0]["label"] == want[i]);
    CHECK(preds[0]["probability"].get<double>() > 0.5);
    CHECK(preds[0]["probability"].get<double>() >= preds[1]["probability"].get<double>());
    CHECK(preds[0]["probability"].get<double>() + preds[1]["probability"].get<double>() <= 1.0 + 1e-6);
  }
  CHECK(j[0]["image"] == (images / "red" / image_name(0)).string());
  // In batches of 2 (the third image alone in the second): the same
  // predictions (their probabilities within rounding: kernels may sum in
  // another order for another batch size).
  Run batched = run_hub(t.path, "classify --module " + q(out) + " " + q(images / "red" / image_name(0)) + " " +
                                    q(images / "blue" / image_name(1)) + " " + q(images / "green" / image_name(2)) +
                                    " --json --top_k 2 --batch_size 2");
  REQUIRE_MESSAGE(batched.rc == 0, batched.err);
  const nlohmann::json b = nlohmann::json::parse(batched.out);
  REQUIRE(b.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(b[i]["image"] == j[i]["image"]);
    for (size_t p = 0; p < 2; ++p) {
      CHECK(b[i]["predictions"][p]["label"] == j[i]["predictions"][p]["label"]);
      CHECK(b[i]["predictions"][p]["probability"].get<double>() ==
            doctest::Approx(j[i]["predictions"][p]["probability"].get<double>()).epsilon(1e-5));
    }
  }

  // Text output names the top label on the line after the image.
  r = run_hub(t.path, "classify --module " + q(out) + " " + q(images / "green" / image_name(3)) + " --top_k 1");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(r.out.find("\n  green") != std::string::npos);

  // Bad flag values: non-zero exit and a message naming the flag; no output module.
  fs::path out2 = t.path / "classifier2";
  const std::string base =
      "retrain " + common + " --output_graph " + q(out2) + " --output_labels " + q(t.path / "l2.txt");
  struct Bad {
    std::string args, flag;
  };
  for (const Bad& b : std::vector<Bad>{
           {base + " --how_many_training_steps abc", "--how_many_training_steps"},
           {base + " --how_many_training_steps 0", "--how_many_training_steps"},
           {base + " --random_crop=-5", "--random_crop"},
           {base + " --random_brightness 150", "--random_brightness"},
           {base + " --learning_rate 0", "--learning_rate"},
           {base + " --testing_percentage 95", "--testing_percentage"},
           {"retrain --image-dir " + q(t.path / "missing") + " --module " + q(module) + " --output_graph " + q(out2),
            "--image_dir"},
           {"retrain --image-dir " + q(images), "--module"},
           {"classify --module " + q(out) + " " + q(images / "red" / image_name(0)) + " --top_k 0", "--top_k"},
           {"classify --module " + q(out) + " " + q(images / "red" / image_name(0)) + " --batch_size 0",
            "--batch_size"},
           {"classify --module " + q(out) + " " + q(images / "red" / image_name(0)) + " --backend nosuch",
            "--backend"}}) {
    CAPTURE(b.args);
    Run bad = run_hub(t.path, b.args);
    CHECK(bad.rc != 0);
    CHECK_MESSAGE(bad.err.find(b.flag) != std::string::npos, bad.err);
    CHECK(!fs::exists(out2));
  }
  // A file that is not an image: non-zero, naming the file.
  write_text(t.path / "notes.png", "hello");
  Run bad = run_hub(t.path, "classify --module " + q(out) + " " + q(t.path / "notes.png"));
  CHECK(bad.rc != 0);
  CHECK_MESSAGE(bad.err.find("notes.png") != std::string::npos, bad.err);
}

TEST_CASE("hub retrain --quantize: the module's head keeps its fake quantization and classifies") {
  TempDir t;
  const auto [images, module, out] = retrained_classifier(
      t, "--how_many_training_steps 300 --testing_percentage 20 --eval_step_interval 100 --quantize");
  Run r = run_hub(t.path, "info --graph " + q(out));
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  for (const char* name :
       {"final_retrain_ops/bottleneck/act_quant/FakeQuantWithMinMaxVars",
        "final_retrain_ops/weights/final_weights_quant/FakeQuantWithMinMaxVarsPerChannel",
        "final_retrain_ops/Wx_plus_b/act_quant/FakeQuantWithMinMaxVars", "final_retrain_ops/Wx_plus_b/act_quant/max"})
    CHECK_MESSAGE(r.out.find(name) != std::string::npos, name);
  r = run_hub(t.path, "classify --module " + q(out) + " " + q(images / "red" / image_name(0)) + " " +
                          q(images / "blue" / image_name(1)) + " " + q(images / "green" / image_name(2)) +
                          " --json --top_k 1");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  nlohmann::json j = nlohmann::json::parse(r.out);
  REQUIRE(j.size() == 3);
  CHECK(j[0]["predictions"][0]["label"] == "red");
  CHECK(j[1]["predictions"][0]["label"] == "blue");
  CHECK(j[2]["predictions"][0]["label"] == "green");

  // hub quantize takes the head's trained ranges; the feature projection's input has none, so
  // it needs calibration images.
  const fs::path int8 = t.path / "int8";
  r = run_hub(t.path, "quantize " + q(out) + " --output_dir " + q(int8));
  CHECK(r.rc != 0);
  CHECK(r.err.find("1 of 2 activations have no range from quantization-aware training") != std::string::npos);
  CHECK(r.err.find("give --calibration_dir") != std::string::npos);
  r = run_hub(t.path, "quantize " + q(out) + " --output_dir " + q(int8) + " --calibration_dir " + q(images));
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  r = run_hub(t.path, "info --json " + q(int8));
  REQUIRE(r.rc == 0);
  CHECK(nlohmann::json::parse(r.out)["quantization"]["method"] == "minmax + trained fake-quant ranges");
  r = run_hub(t.path, "info --graph " + q(int8));
  CHECK(r.out.find("bottleneck/act_quant/FakeQuantWithMinMaxVars") == std::string::npos);  // a QDQ pair instead
  const std::string files = class_image_args(images, 25);
  CHECK(agreement(top1(t.path, out, files), top1(t.path, int8, files)) * 100 >= 98 * 75);
}

TEST_CASE("hub retrain --fine_tune, then hub classify") {
  TempDir t;
  fs::path images = t.path / "images", module = t.path / "features", out = t.path / "classifier";
  write_class_images(images, 25);
  export_feature_module(module);
  const std::string common = "--image-dir " + q(images) + " --module " + q(module) + " --bottleneck_dir " +
                             q(t.path / "bottlenecks") + " --summaries_dir " + q(t.path / "logs") +
                             " --how_many_training_steps 60 --learning_rate 0.5 --testing_percentage 20"
                             " --eval_step_interval 30 --random_seed 3";
  Run r = run_hub(t.path, "retrain " + common + " --output_graph " + q(out) + " --output_labels " +
                              q(t.path / "labels.txt") +
                              " --fine_tune --fine_tune_scopes projection --fine_tune_learning_rate 0.05"
                              " --flip_left_right --random_brightness 10");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK(r.out.find("fine-tuned 1 module variables ({} graph); bottleneck cache not used, 0 images skipped") !=
        std::string::npos);
  CHECK_MESSAGE(r.err.find("at learning rate 0.05 with the head at 0.5; the bottleneck cache") != std::string::npos,
                r.err);
  CHECK_MESSAGE(r.err.find("Note: the module has no {train} tag set") != std::string::npos, r.err);
  CHECK(!fs::exists(t.path / "bottlenecks"));
  r = run_hub(t.path, "classify --module " + q(out) + " " + q(images / "red" / image_name(0)) + " " +
                          q(images / "blue" / image_name(1)) + " --json --top_k 1");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  nlohmann::json j = nlohmann::json::parse(r.out);
  REQUIRE(j.size() == 2);
  CHECK(j[0]["predictions"][0]["label"] == "red");
  CHECK(j[1]["predictions"][0]["label"] == "blue");

  // The default module learning rate is the head's / 10, and --help says so.
  r = run_hub(t.path, "retrain " + common + " --output_graph " + q(t.path / "c2") + " --output_labels " +
                          q(t.path / "l2.txt") + " --fine_tune");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  CHECK_MESSAGE(
      r.err.find("Fine-tuning 1 module variables at learning rate 0.05 with the head at 0.5") != std::string::npos,
      r.err);
  r = run_hub(t.path, "retrain --help");
  CHECK(r.rc == 0);
  CHECK(r.out.find("--fine_tune_learning_rate") != std::string::npos);
  CHECK(r.out.find("default: --learning_rate / 10") != std::string::npos);

  fs::path out3 = t.path / "classifier3";
  const std::string base =
      "retrain " + common + " --output_graph " + q(out3) + " --output_labels " + q(t.path / "l3.txt");
  struct Bad {
    std::string args, message;
  };
  for (const Bad& b : std::vector<Bad>{
           {base + " --fine_tune --fine_tune_learning_rate 0", "--fine_tune_learning_rate must be positive"},
           {base + " --fine_tune --fine_tune_learning_rate=-1", "--fine_tune_learning_rate must be positive"},
           {base + " --fine_tune --fine_tune_learning_rate x", "--fine_tune_learning_rate"},
           {base + " --fine_tune --fine_tune_scopes logits", "--fine_tune_scopes 'logits' matches none"},
           {base + " --fine_tune_scopes projection", "--fine_tune_scopes needs --fine_tune"},
           {base + " --fine_tune_learning_rate 0.1", "--fine_tune_learning_rate needs --fine_tune"}}) {
    CAPTURE(b.args);
    Run bad = run_hub(t.path, b.args);
    CHECK(bad.rc != 0);
    CHECK_MESSAGE(bad.err.find(b.message) != std::string::npos, bad.err);
    CHECK(!fs::exists(out3));
    CHECK(!fs::exists(t.path / "bottlenecks"));
  }
}

TEST_CASE("hub quantize: a retrained classifier in int8 agrees with the float one; bad calibration input") {
  TempDir t;
  const auto [images, module, out] = retrained_classifier(t, "--how_many_training_steps 200");
  const fs::path int8 = t.path / "int8";
  Run r = run_hub(t.path, "quantize " + q(out) + " --output_dir " + q(int8) + " --calibration_dir " + q(images) +
                              " --calibration_images 30 --per_channel --json");
  REQUIRE_MESSAGE(r.rc == 0, r.err);
  const nlohmann::json report = nlohmann::json::parse(r.out);
  CHECK(report["layers"] == 2);  // the feature projection and the new head
  CHECK(report["examples"] == 30);
  r = run_hub(t.path, "info " + q(int8) + " --json");
  REQUIRE(r.rc == 0);
  const nlohmann::json info = nlohmann::json::parse(r.out);
  CHECK(info["quantization"]["method"] == "minmax");
  CHECK(info["quantization"]["per_channel"] == true);
  CHECK(info["quantization"]["weights"].size() == 2);
  r = run_hub(t.path, "info " + q(int8));
  CHECK(r.out.find("quantization: int8, calibration minmax over 30 examples") != std::string::npos);

  // Top-1 of the float and the int8 classifier on all 75 images.
  const std::string files = class_image_args(images, 25);
  const std::vector<std::string> f = top1(t.path, out, files), i8 = top1(t.path, int8, files);
  REQUIRE(f.size() == 75);
  int right = 0;
  for (size_t k = 0; k < i8.size(); ++k) right += i8[k] == class_names()[k / 25];
  CHECK(agreement(f, i8) * 100 >= 98 * 75);
  CHECK(right >= 70);

  // Bad input: nothing to calibrate with, files that do not decode, an existing output.
  fs::create_directories(t.path / "empty");
  r = run_hub(t.path,
              "quantize " + q(out) + " --output_dir " + q(t.path / "x") + " --calibration_dir " + q(t.path / "empty"));
  CHECK(r.rc != 0);
  CHECK(r.err.find("has no JPEG or PNG files") != std::string::npos);
  write_text(t.path / "junk" / "a.jpg", "not a jpeg");
  r = run_hub(t.path,
              "quantize " + q(out) + " --output_dir " + q(t.path / "x") + " --calibration_dir " + q(t.path / "junk"));
  CHECK(r.rc != 0);
  CHECK(r.err.find("none of its 1 image files decodes") != std::string::npos);
  CHECK(!fs::exists(t.path / "x"));
  r = run_hub(t.path, "quantize " + q(out) + " --output_dir " + q(int8) + " --calibration_dir " + q(images));
  CHECK(r.rc != 0);
  CHECK(r.err.find("--output_dir") != std::string::npos);
  r = run_hub(t.path, "quantize " + q(out) + " --output_dir " + q(t.path / "x") + " --calibration_dir " + q(images) +
                          " --calibration_images 0");
  CHECK(r.rc != 0);
  CHECK(r.err.find("--calibration_images must be >= 1") != std::string::npos);
}
