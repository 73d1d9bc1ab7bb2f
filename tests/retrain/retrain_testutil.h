// Helpers for the retrain tests: generated class folders of coloured images
// and a tiny hand-made image feature-vector module.
//
// Images: class k's images have channel k dominant (0.75 vs 0.25) plus
// uniform noise in [-0.15, 0.15], sizes 12..20 x 16..24, PNG for even
// indices, JPEG (quality 92) for odd ones.
// Module: images float32 [?, 8, 8, 3] -> per-channel spatial mean m [?, 3]
// -> m * W with W = variable "projection" [3, 4] (image info 8x8x3).
//
// For fine-tuning: two-tone images (flat red/green mixtures whose class is the
// stronger of the two) and modules with more kinds of variables; see
// write_two_tone_images, tunable_module_spec and batch_norm_module_spec.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "hub/core/fileio.h"
#include "hub/image/image.h"
#include "hub/module/module.h"
#include "hub/ops/batch_norm.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/matmul.h"
#include "hub/ops/reduction.h"
#include "hub/ops/state.h"
#include "testutil.h"

namespace hub::retrain_test {

namespace fs = std::filesystem;

using hub::testing::TempDir;

inline const std::vector<std::string>& class_names() {
  static const std::vector<std::string> names = {"blue", "green", "red"};
  return names;
}
// Dominant channel of each class of class_names(): blue -> 2, green -> 1, red -> 0.
inline int dominant_channel(size_t class_index) { return 2 - static_cast<int>(class_index); }

inline std::string image_name(int i) { return "img_" + std::to_string(i) + (i % 2 == 0 ? ".png" : ".jpg"); }

// Writes `per_class` images into dir/<class>/ for every class of class_names().
inline void write_class_images(const fs::path& dir, int per_class, uint32_t seed = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> noise(-0.15f, 0.15f);
  for (size_t k = 0; k < class_names().size(); ++k) {
    fs::create_directories(dir / class_names()[k]);
    for (int i = 0; i < per_class; ++i) {
      int64_t h = 12 + 4 * (i % 3), w = 16 + 4 * (i % 3);
      Tensor img(DType::kUInt8, {h, w, 3});
      uint8_t* p = img.data<uint8_t>();
      for (int64_t j = 0; j < h * w; ++j)
        for (int c = 0; c < 3; ++c) {
          float v = (c == dominant_channel(k) ? 0.75f : 0.25f) + noise(rng);
          p[j * 3 + c] = static_cast<uint8_t>(v * 255.0f + 0.5f);
        }
      std::vector<uint8_t> bytes = i % 2 == 0 ? image::encode_png(img) : image::encode_jpeg(img, 92);
      write_file_atomic((dir / class_names()[k] / image_name(i)).string(),
                        std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    }
  }
}

inline void write_text(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

// The W of the feature module; `variant` changes the weights.
inline Tensor projection(int variant = 0) {
  float a = variant == 0 ? 4.0f : 3.0f;
  return Tensor::from_vector<float>({3, 4}, {a, 0, 0, -1,  //
                                             0, a, 0, -1,  //
                                             0, 0, a, -1});
}

inline ModuleSpec feature_module_spec() {
  return create_module_spec([](ModuleBuilder& b) {
    Scope s = b.scope();
    Output images = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 8, 8, 3}, "images");
    Output means = ops::mean(s, images, {1, 2});
    Output w = ops::variable(s, "projection", {3, 4});
    b.add_signature(kDefaultSignature, {{"images", images}}, {{"default", ops::matmul(s, means, w)}});
    b.set_image_info(8, 8, 3);
  });
}

inline void export_feature_module(const fs::path& dir, int variant = 0) {
  Module m(feature_module_spec());
  m.variable_map().at("projection").assign(projection(variant));
  m.export_to(dir.string());
}

// Two classes, "more_green" and "more_red": flat 10x10 PNG images with red r
// and green g drawn from U(0.1, 0.9) (|r - g| >= 0.1), blue 0.5; the class is
// the larger of r and g. Red alone decides it for 3/4 of the images (r > 0.5
// or not): features (r, b) cannot do better, features with r - g can.
inline void write_two_tone_images(const fs::path& dir, int per_class, uint32_t seed = 2) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.1f, 0.9f);
  const char* names[] = {"more_green", "more_red"};
  int written[2] = {0, 0};
  for (const char* n : names) fs::create_directories(dir / n);
  while (written[0] < per_class || written[1] < per_class) {
    float r = u(rng), g = u(rng);
    if (std::abs(r - g) < 0.1f) continue;
    int k = r > g ? 1 : 0;
    if (written[k] == per_class) continue;
    Tensor img(DType::kUInt8, {10, 10, 3});
    uint8_t* p = img.data<uint8_t>();
    for (int64_t j = 0; j < 100; ++j) {
      p[j * 3 + 0] = static_cast<uint8_t>(r * 255.0f + 0.5f);
      p[j * 3 + 1] = static_cast<uint8_t>(g * 255.0f + 0.5f);
      p[j * 3 + 2] = 128;
    }
    std::vector<uint8_t> bytes = image::encode_png(img);
    write_file_atomic((dir / names[k] / ("img_" + std::to_string(written[k]++) + ".png")).string(),
                      std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  }
}

// A module with every kind of variable fine-tuning meets, inference tag set
// only: images [?, 8, 8, 3] -> means m [?, 3] ->
//   features = (m * projection + offset) * scale      [?, 2]
// projection [3, 2] = rows (1, 0), (0, 0), (0, 1): features (r, b), green
// ignored; offset [2] zeros (trainable); scale [2] ones (not trainable);
// "unused" [2] (trainable, no path to the features).
inline ModuleSpec tunable_module_spec() {
  return create_module_spec([](ModuleBuilder& b) {
    Scope s = b.scope();
    Output images = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 8, 8, 3}, "images");
    ops::VariableOptions frozen;
    frozen.initializer = "ones";
    frozen.trainable = false;
    Output w = ops::variable(s, "projection", {3, 2});
    Output offset = ops::variable(s, "offset", {2});
    Output scale = ops::variable(s, "scale", {2}, frozen);
    ops::variable(s, "unused", {2});
    Output x = ops::mul(s, ops::add(s, ops::matmul(s, ops::mean(s, images, {1, 2}), w), offset), scale);
    b.add_signature(kDefaultSignature, {{"images", images}}, {{"default", x}});
    b.set_image_info(8, 8, 3);
  });
}

inline Tensor tunable_projection() { return Tensor::from_vector<float>({3, 2}, {1, 0, 0, 0, 0, 1}); }

inline void export_tunable_module(const fs::path& dir) {
  Module m(tunable_module_spec());
  m.variable_map().at("projection").assign(tunable_projection());
  m.export_to(dir.string());
}

// Tag sets {} and {train}: images [?, 8, 8, 3] -> means m [?, 3] ->
// batch_norm(m * projection) [?, 4] (hub/ops/batch_norm.h, decay 0.5, under
// "BatchNorm": beta, moving_mean, moving_variance), in training mode in
// {train}. projection as projection() above.
inline ModuleSpec batch_norm_module_spec() {
  auto fn = [](ModuleBuilder& b, const Attrs& args) {
    Scope s = b.scope();
    Output images = ops::placeholder(s, DType::kFloat32, {kUnknownDim, 8, 8, 3}, "images");
    Output w = ops::variable(s, "projection", {3, 4});
    ops::BatchNormOptions o;
    o.decay = 0.5f;
    o.is_training = args.get_bool("is_training");
    Output x = ops::batch_norm(s, ops::matmul(s, ops::mean(s, images, {1, 2}), w), o);
    b.add_signature(kDefaultSignature, {{"images", images}}, {{"default", x}});
    b.set_image_info(8, 8, 3);
  };
  return create_module_spec(
      fn, {{TagSet{}, Attrs().set("is_training", false)}, {TagSet{"train"}, Attrs().set("is_training", true)}});
}

inline void export_batch_norm_module(const fs::path& dir) {
  Module m(batch_norm_module_spec());
  m.variable_map().at("projection").assign(projection());
  m.export_to(dir.string());
}

// half_plus_two: a module whose default signature is float32 [?] -> [?].
inline void export_half_plus_two(const fs::path& dir) {
  Module m(create_module_spec([](ModuleBuilder& b) {
    Scope s = b.scope();
    Output a = ops::variable(s, "a", {});
    Output c = ops::variable(s, "b", {});
    Output x = ops::placeholder(s, DType::kFloat32, {kUnknownDim}, "x");
    b.add_signature(kDefaultSignature, {{"x", x}}, {{"y", ops::add(s, ops::mul(s, a, x), c)}});
  }));
  m.variable_map().at("a").assign(0.5f);
  m.variable_map().at("b").assign(2.0f);
  m.export_to(dir.string());
}

// Entries of a directory (names), sorted.
inline std::vector<std::string> list_dir(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

inline std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace hub::retrain_test
