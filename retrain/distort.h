// retrain.py's input distortions, applied to one decoded image:
//   s = (1 + random_crop/100) * U(1, 1 + random_scale/100)
//   resize the whole image to (int(h*s), int(w*s)) (bilinear), take a random
//   h x w crop, flip left-right with probability 1/2 if flip_left_right,
//   multiply by U(1 - random_brightness/100, 1 + random_brightness/100).
// Randomness comes from Philox(seed), so a seed gives one fixed distortion.
#pragma once

#include <cstdint>

#include "hub/tensor/tensor.h"

namespace hub::retrain {

struct DistortionOptions {
  bool flip_left_right = false;
  double random_crop = 0;        // percent
  double random_scale = 0;       // percent
  double random_brightness = 0;  // percent
  bool any() const { return flip_left_right || random_crop != 0 || random_scale != 0 || random_brightness != 0; }
};

// Throws InvalidArgument naming the flag for negative percentages (or
// brightness >= 100).
void validate(const DistortionOptions& options);

// image: float32 [H0, W0, C] in [0, 1]; returns float32 [height, width, C].
Tensor distort(const Tensor& image, int64_t height, int64_t width, const DistortionOptions& options, uint64_t seed);

}  // namespace hub::retrain
