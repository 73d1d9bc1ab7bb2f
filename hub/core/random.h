// Counter-based random numbers (Philox-4x32-10, as TensorFlow uses), so that
// filling a tensor in parallel gives the same values for the same seed on any
// number of threads: element i always draws from counter i.
#pragma once

#include <array>
#include <cstdint>

namespace hub {

// Mixes values into one well-distributed 64-bit seed (splitmix64 steps).
uint64_t mix_seed(uint64_t a, uint64_t b);

class Philox {
 public:
  explicit Philox(uint64_t seed) : key_{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)} {}
  // Four independent 32-bit words for a 128-bit counter.
  std::array<uint32_t, 4> block(uint64_t hi, uint64_t lo) const;
  // Uniform in [0, 1) from counter (index, stream).
  float uniform(uint64_t index, uint64_t stream = 0) const;
  // Standard normal (Box-Muller) from counter (index, stream).
  float normal(uint64_t index, uint64_t stream = 0) const;

 private:
  std::array<uint32_t, 2> key_;
};

// Parallel fills, deterministic for a given seed.
void fill_uniform(float* out, int64_t n, uint64_t seed, float lo, float hi);
void fill_normal(float* out, int64_t n, uint64_t seed, float mean, float stddev);
// Normal with values further than 2 stddev from the mean redrawn (TF's truncated_normal).
void fill_truncated_normal(float* out, int64_t n, uint64_t seed, float mean, float stddev);

}  // namespace hub
