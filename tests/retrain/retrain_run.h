// Running retrain() in tests: a workspace folder with images, a module and a
// config that writes everything inside it, and expectations on its errors.
#pragma once

#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "hub/core/error.h"
#include "hub/image/image.h"
#include "hub/image/resize.h"
#include "retrain/retrain.h"
#include "retrain_testutil.h"

namespace hub::retrain_test {

// The modules of these tests are local directories: no cache, no registry.
inline const resolver::Resolver& local_modules() {
  static const resolver::Resolver r;
  return r;
}

// A temp dir with images/ (3 classes x per_class colour images) and module/
// (the projection module), and a config writing everything under it.
struct Workspace {
  TempDir tmp;
  fs::path images, module;
  // per_class 0: neither images nor module (the test writes its own).
  explicit Workspace(int per_class = 25) {
    images = tmp.path / "images";
    module = tmp.path / "module";
    if (per_class == 0) return;
    write_class_images(images, per_class);
    export_feature_module(module);
  }
  retrain::RetrainConfig config(const std::string& out) const {
    retrain::RetrainConfig c;
    c.image_dir = images.string();
    c.module = module.string();
    c.output_graph = (tmp.path / "out" / out).string();
    c.output_labels = (tmp.path / "out" / (out + "_labels.txt")).string();
    c.intermediate_output_graphs_dir = (tmp.path / "intermediate").string();
    c.summaries_dir = (tmp.path / "logs").string();
    c.bottleneck_dir = (tmp.path / "bottlenecks").string();
    c.how_many_training_steps = 300;
    c.learning_rate = 0.5;
    c.eval_step_interval = 100;
    c.testing_percentage = 20;
    c.validation_percentage = 10;
    c.seed = 7;
    return c;
  }
};

// [1, 8, 8, 3] batch of one image file, decoded and resized as retrain does.
inline Tensor load_batch(const fs::path& file) {
  image::DecodeOptions d;
  d.min_height = 8;
  d.min_width = 8;
  return image::resize_bilinear(image::read_image(file.string(), d), 8, 8).reshaped({1, 8, 8, 3});
}

template <class F>
Error expect_error(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  FAIL("expected a hub::Error");
  return Error(Code::kInternal, "unreachable");
}

// Runs retrain with `c`, expects an Error with `code` whose message contains
// every string of `parts`, and that the output folder (out/) holds nothing.
inline void expect_retrain_error(const retrain::RetrainConfig& c, Code code, const std::vector<std::string>& parts,
                                 const std::vector<std::string>& out_entries = {}) {
  Error e = expect_error([&] { retrain::retrain(c, local_modules()); });
  CHECK_MESSAGE(e.code() == code, e.what());
  for (const std::string& p : parts) CHECK_MESSAGE(std::string(e.what()).find(p) != std::string::npos, e.what());
  CHECK(list_dir(fs::path(c.output_graph).parent_path()) == out_entries);
}

}  // namespace hub::retrain_test
