// TF-Slim's image preprocessing (preprocessing_factory), plus the official
// MNIST model's and the CIFAR-10 tutorial's, as functions on one decoded image.
//
// Input: float32 [H, W, C] in [0, 1] (as hub/image decodes). Output: float32
// [height, width, C] in the value range the network was trained with:
//   inception  eval: central crop 0.875, bilinear resize, scale to [-1, 1];
//              train: random crop (10%..100% of the area, aspect 3/4..4/3:
//              slim's area_range 0.05..1 under min_object_covered 0.1),
//              resize, random left-right flip, brightness (±32/255) and
//              saturation (0.5..1.5) in random order, scale to [-1, 1].
//   vgg        eval: aspect-preserving resize of the smaller side to 256,
//              central crop, subtract the ImageNet RGB means (0..255 scale);
//              train: smaller side random in [256, 512], random crop, flip.
//   cifarnet   train: pad 4, random crop, flip, brightness ±63, contrast
//              0.2..1.8, per-image standardization; eval: crop/pad to size,
//              standardization (0..255 scale).
//   cifar10    the CIFAR-10 tutorial: as cifarnet without padding (24x24 crops).
//   lenet      crop/pad to size, (x*255 - 128) / 128.
//   mnist      resize to size if needed, values in [0, 1].
// Training variants draw their randomness from `seed` (hub::Philox), so a
// fixed seed gives the same image.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hub/tensor/tensor.h"

namespace hub::preprocessing {

using Fn = std::function<Tensor(const Tensor& image, int64_t height, int64_t width, bool is_training, uint64_t seed)>;

// Throws NotFound listing the known names.
Fn get(const std::string& name);
std::vector<std::string> names();

// tf.image.resize_image_with_crop_or_pad (centered).
Tensor crop_or_pad(const Tensor& image, int64_t height, int64_t width);
// tf.image.per_image_standardization: (x - mean) / max(stddev, 1/sqrt(N)).
Tensor per_image_standardization(const Tensor& image);

}  // namespace hub::preprocessing
