// A generated, learnable image classification set for tests and the
// engine's demo: each image shows one short bar on a noisy background, and
// the class is the bar's orientation (0 horizontal, 1 vertical, 2 diagonal,
// 3 anti-diagonal) at a random position and brightness. Deterministic for a
// seed; a small CNN separates the classes almost perfectly.
#pragma once

#include <cstdint>

#include "hub/tensor/tensor.h"

namespace hub::datasets {

struct SyntheticSet {
  Tensor images;  // float32 [n, size, size, 1] in [0, 1]
  Tensor labels;  // int32 [n]
  static constexpr int kNumClasses = 4;
};

SyntheticSet make_bars(int64_t n, int64_t size, uint64_t seed);

}  // namespace hub::datasets
