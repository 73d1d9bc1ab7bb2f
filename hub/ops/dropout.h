// Dropout with inverted scaling (float32).
//
//   Dropout(x; rate, seed = 0) -> (y, mask)
//     mask_i = 1 with probability 1 - rate, else 0 (float32, x's shape)
//     y = x * mask / (1 - rate)                  dx = g * mask / (1 - rate)
//   rate in [0, 1). The mask is drawn with Philox from the kernel's seed (graph
//   seed, node and run number) mixed with the `seed` attribute, element i from
//   counter i: for a fixed graph seed a session's k-th run draws the same mask
//   on any number of threads. Stateful (random).
#pragma once

#include <string>

#include "hub/ops/scope.h"

namespace hub::ops {

struct DropoutResult {
  Output y;
  Output mask;
};
DropoutResult dropout_with_mask(const Scope& s, Output x, float rate, int64_t seed = 0,
                                const std::string& name = "Dropout");
// tf.layers.dropout: when training, y of Dropout; otherwise x itself (no node
// is added). rate in [0, 1); throws InvalidArgument otherwise.
Output dropout(const Scope& s, Output x, float rate, bool is_training, int64_t seed = 0,
               const std::string& name = "Dropout");

}  // namespace hub::ops
