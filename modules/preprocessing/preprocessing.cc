#include "modules/preprocessing/preprocessing.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "hub/core/random.h"
#include "hub/image/resize.h"

namespace hub::preprocessing {

namespace {

using ArrayMap = Eigen::Map<Eigen::ArrayXf>;

ArrayMap flat(Tensor& t) { return ArrayMap(t.data<float>(), t.num_elements()); }

void check_image(const Tensor& image) {
  if (image.dtype() != DType::kFloat32 || image.rank() != 3 || image.dim(0) < 1 || image.dim(1) < 1)
    throw_error(Code::kInvalidArgument, "preprocessing needs a float32 [H,W,C] image, got " + image.spec_string());
}

// Uniform draw number `k` for this image.
float draw(const Philox& rng, uint64_t k, float lo, float hi) { return lo + (hi - lo) * rng.uniform(k); }

Tensor scaled(const Tensor& image, float scale, float offset) {
  Tensor out = image.clone();
  flat(out) = flat(out) * scale + offset;
  return out;
}

Tensor random_flip(const Tensor& image, const Philox& rng, uint64_t k) {
  return rng.uniform(k) < 0.5f ? image::flip_left_right(image) : image;
}

Tensor random_crop(const Tensor& image, int64_t h, int64_t w, const Philox& rng, uint64_t k) {
  int64_t top = static_cast<int64_t>(rng.uniform(k) * static_cast<float>(image.dim(0) - h + 1));
  int64_t left = static_cast<int64_t>(rng.uniform(k + 1) * static_cast<float>(image.dim(1) - w + 1));
  return image::crop(image, std::min(top, image.dim(0) - h), std::min(left, image.dim(1) - w), h, w);
}

// Saturation: blend each pixel with its gray value (RGB only).
void adjust_saturation(Tensor& image, float factor) {
  if (image.dim(2) != 3) return;
  int64_t n = image.dim(0) * image.dim(1);
  Eigen::Map<Eigen::Array<float, 3, Eigen::Dynamic>> px(image.data<float>(), 3, n);
  Eigen::Array<float, 1, Eigen::Dynamic> gray = 0.2989f * px.row(0) + 0.587f * px.row(1) + 0.114f * px.row(2);
  for (int c = 0; c < 3; ++c) px.row(c) = gray + (px.row(c) - gray) * factor;
}

// tf.image.adjust_contrast: per channel, (x - mean) * factor + mean.
void adjust_contrast(Tensor& image, float factor) {
  int64_t c = image.dim(2), n = image.dim(0) * image.dim(1);
  Eigen::Map<Eigen::ArrayXXf> px(image.data<float>(), c, n);
  Eigen::ArrayXf mean = px.rowwise().mean();
  px = ((px.colwise() - mean) * factor).colwise() + mean;
}

Tensor inception(const Tensor& image, int64_t h, int64_t w, bool training, uint64_t seed) {
  check_image(image);
  Tensor x;
  if (!training) {
    x = image::resize_bilinear(image::central_crop(image, 0.875), h, w);
  } else {
    Philox rng(seed);
    int64_t H = image.dim(0), W = image.dim(1);
    int64_t top = 0, left = 0, ch = H, cw = W;
    // slim's distorted_bounding_box_crop: area_range (0.05, 1.0), aspect
    // (0.75, 1.33), 100 attempts, and min_object_covered 0.1 of the box,
    // which is the whole image: crops under 10% of it are rejected, so the
    // crops that come out are uniform in 10%..100% of the area, drawn so here.
    for (uint64_t attempt = 0; attempt < 100; ++attempt) {
      double area = draw(rng, 10 + 4 * attempt, 0.1f, 1.0f) * static_cast<double>(H * W);
      double aspect = draw(rng, 11 + 4 * attempt, 0.75f, 4.0f / 3.0f);
      int64_t th = static_cast<int64_t>(std::lround(std::sqrt(area / aspect)));
      int64_t tw = static_cast<int64_t>(std::lround(std::sqrt(area * aspect)));
      if (th >= 1 && tw >= 1 && th <= H && tw <= W) {
        ch = th;
        cw = tw;
        top = static_cast<int64_t>(rng.uniform(12 + 4 * attempt) * static_cast<float>(H - th + 1));
        left = static_cast<int64_t>(rng.uniform(13 + 4 * attempt) * static_cast<float>(W - tw + 1));
        top = std::min(top, H - th);
        left = std::min(left, W - tw);
        break;
      }
    }
    x = image::resize_bilinear(image::crop(image, top, left, ch, cw), h, w);
    x = random_flip(x, rng, 1);
    float brightness = draw(rng, 2, -32.0f / 255.0f, 32.0f / 255.0f);
    float saturation = draw(rng, 3, 0.5f, 1.5f);
    if (rng.uniform(4) < 0.5f) {
      flat(x) += brightness;
      adjust_saturation(x, saturation);
    } else {
      adjust_saturation(x, saturation);
      flat(x) += brightness;
    }
    flat(x) = flat(x).min(1.0f).max(0.0f);
  }
  flat(x) = (flat(x) - 0.5f) * 2.0f;
  return x;
}

Tensor aspect_preserving_resize(const Tensor& image, int64_t smallest_side) {
  double H = static_cast<double>(image.dim(0)), W = static_cast<double>(image.dim(1));
  double scale = static_cast<double>(smallest_side) / std::min(H, W);
  return image::resize_bilinear(image, static_cast<int64_t>(std::lround(H * scale)),
                                static_cast<int64_t>(std::lround(W * scale)));
}

Tensor vgg(const Tensor& image, int64_t h, int64_t w, bool training, uint64_t seed) {
  check_image(image);
  Tensor x;
  if (!training) {
    x = aspect_preserving_resize(image, 256);
    int64_t top = (x.dim(0) - h) / 2, left = (x.dim(1) - w) / 2;
    if (top < 0 || left < 0)
      x = image::resize_bilinear(x, h, w);
    else
      x = image::crop(x, top, left, h, w);
  } else {
    Philox rng(seed);
    int64_t side = 256 + static_cast<int64_t>(rng.uniform(0) * 257.0f);
    x = aspect_preserving_resize(image, std::max<int64_t>(std::min<int64_t>(side, 512), std::max(h, w)));
    x = random_flip(random_crop(x, h, w, rng, 1), rng, 3);
  }
  x = scaled(x, 255.0f, 0.0f);
  if (x.dim(2) == 3) {
    const float means[3] = {123.68f, 116.78f, 103.94f};
    Eigen::Map<Eigen::Array<float, 3, Eigen::Dynamic>> px(x.data<float>(), 3, x.dim(0) * x.dim(1));
    for (int c = 0; c < 3; ++c) px.row(c) -= means[c];
  }
  return x;
}

Tensor cifar(const Tensor& image, int64_t h, int64_t w, bool training, uint64_t seed, int64_t padding) {
  check_image(image);
  Tensor x = scaled(image, 255.0f, 0.0f);
  if (training) {
    Philox rng(seed);
    if (padding > 0) x = crop_or_pad(x, x.dim(0) + 2 * padding, x.dim(1) + 2 * padding);
    if (x.dim(0) < h || x.dim(1) < w) x = crop_or_pad(x, std::max(h, x.dim(0)), std::max(w, x.dim(1)));
    x = random_flip(random_crop(x, h, w, rng, 1), rng, 3);
    flat(x) += draw(rng, 4, -63.0f, 63.0f);
    adjust_contrast(x, draw(rng, 5, 0.2f, 1.8f));
  } else {
    x = crop_or_pad(x, h, w);
  }
  return per_image_standardization(x);
}

Tensor lenet(const Tensor& image, int64_t h, int64_t w, bool, uint64_t) {
  check_image(image);
  return scaled(crop_or_pad(image, h, w), 255.0f / 128.0f, -1.0f);
}

Tensor mnist(const Tensor& image, int64_t h, int64_t w, bool, uint64_t) {
  check_image(image);
  if (image.dim(0) == h && image.dim(1) == w) return image;
  return image::resize_bilinear(image, h, w);
}

const std::map<std::string, Fn>& table() {
  static const std::map<std::string, Fn> t = {
      {"inception", inception},
      {"vgg", vgg},
      {"cifarnet", [](const Tensor& i, int64_t h, int64_t w, bool tr, uint64_t s) { return cifar(i, h, w, tr, s, 4); }},
      {"cifar10", [](const Tensor& i, int64_t h, int64_t w, bool tr, uint64_t s) { return cifar(i, h, w, tr, s, 0); }},
      {"lenet", lenet},
      {"mnist", mnist},
  };
  return t;
}

}  // namespace

Fn get(const std::string& name) {
  auto it = table().find(name);
  if (it != table().end()) return it->second;
  std::string known;
  for (auto& [n, f] : table()) known += (known.empty() ? "" : ", ") + n;
  throw_error(Code::kNotFound, "unknown preprocessing '" + name + "'; known: " + known);
}

std::vector<std::string> names() {
  std::vector<std::string> out;
  for (auto& [n, f] : table()) out.push_back(n);
  return out;
}

Tensor crop_or_pad(const Tensor& image, int64_t height, int64_t width) {
  check_image(image);
  int64_t H = image.dim(0), W = image.dim(1), C = image.dim(2);
  Tensor out = Tensor::zeros(DType::kFloat32, {height, width, C});
  // Offsets: crop centered in the source, pad centered in the target (TF).
  int64_t src_top = std::max<int64_t>(0, (H - height) / 2), src_left = std::max<int64_t>(0, (W - width) / 2);
  int64_t dst_top = std::max<int64_t>(0, (height - H) / 2), dst_left = std::max<int64_t>(0, (width - W) / 2);
  int64_t rows = std::min(H, height), cols = std::min(W, width);
  const float* in = image.data<float>();
  float* o = out.data<float>();
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(o + ((dst_top + r) * width + dst_left) * C, in + ((src_top + r) * W + src_left) * C,
                static_cast<size_t>(cols * C) * sizeof(float));
  return out;
}

Tensor per_image_standardization(const Tensor& image) {
  Tensor out = image.clone();
  ArrayMap x = flat(out);
  double n = static_cast<double>(x.size());
  double mean = x.cast<double>().mean();
  double var = (x.cast<double>() - mean).square().mean();
  double adjusted = std::max(std::sqrt(var), 1.0 / std::sqrt(n));
  x = ((x.cast<double>() - mean) / adjusted).cast<float>();
  return out;
}

}  // namespace hub::preprocessing
