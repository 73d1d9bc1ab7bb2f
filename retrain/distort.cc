#include "retrain/distort.h"

#include <Eigen/Core>
#include <algorithm>

#include "hub/core/error.h"
#include "hub/core/random.h"
#include "hub/image/resize.h"

namespace hub::retrain {

void validate(const DistortionOptions& o) {
  auto check = [](double v, const char* flag, double max) {
    if (v < 0 || v >= max)
      throw_error(Code::kInvalidArgument, std::string(flag) + " must be in [0, " +
                                              std::to_string(static_cast<int>(max)) + "), got " + std::to_string(v));
  };
  check(o.random_crop, "--random_crop", 1000);
  check(o.random_scale, "--random_scale", 1000);
  check(o.random_brightness, "--random_brightness", 100);
}

Tensor distort(const Tensor& image, int64_t height, int64_t width, const DistortionOptions& o, uint64_t seed) {
  Philox rng(seed);
  double margin = 1.0 + o.random_crop / 100.0;
  double resize = 1.0 + o.random_scale / 100.0;
  double scale = margin * (1.0 + (resize - 1.0) * rng.uniform(0));
  int64_t ph = static_cast<int64_t>(static_cast<double>(height) * scale);
  int64_t pw = static_cast<int64_t>(static_cast<double>(width) * scale);
  Tensor x = image::resize_bilinear(image, ph, pw);
  int64_t top = std::min(ph - height, static_cast<int64_t>(rng.uniform(1) * static_cast<float>(ph - height + 1)));
  int64_t left = std::min(pw - width, static_cast<int64_t>(rng.uniform(2) * static_cast<float>(pw - width + 1)));
  if (ph != height || pw != width) x = image::crop(x, top, left, height, width);
  if (o.flip_left_right && rng.uniform(3) < 0.5f) x = image::flip_left_right(x);
  if (o.random_brightness > 0) {
    float lo = static_cast<float>(1.0 - o.random_brightness / 100.0);
    float hi = static_cast<float>(1.0 + o.random_brightness / 100.0);
    float factor = lo + (hi - lo) * rng.uniform(4);
    if (x.shares_storage_with(image)) x = x.clone();
    Eigen::Map<Eigen::ArrayXf>(x.data<float>(), x.num_elements()) *= factor;
  }
  return x;
}

}  // namespace hub::retrain
