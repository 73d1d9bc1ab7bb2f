// Counter-based random numbers (Philox-4x32-10, as TensorFlow uses), so that
// filling a tensor in parallel gives the same values for the same seed on any
// number of threads: element i always draws from counter i.
#pragma once

#include <array>
#include <cstdint>

namespace hub {

// Mixes values into one well-distributed 64-bit seed (splitmix64 steps).
uint64_t mix_seed(uint64_t a, uint64_t b);

#ifdef __CUDACC__
#define HUB_HOST_DEVICE __host__ __device__
#else
#define HUB_HOST_DEVICE
#endif

// The ten rounds of Philox-4x32-10 on counter c under key (k0, k1), in place:
// one definition for host code and device code (hub/ops/cuda/dropout.cu
// draws the reference's numbers on the GPU).
HUB_HOST_DEVICE inline void philox_rounds(uint32_t c[4], uint32_t k0, uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53, kM1 = 0xCD9E8D57, kW0 = 0x9E3779B9, kW1 = 0xBB67AE85;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kM0) * c[0];
    const uint64_t p1 = static_cast<uint64_t>(kM1) * c[2];
    const uint32_t c0 = static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k0, c2 = static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k1;
    c[1] = static_cast<uint32_t>(p1);
    c[3] = static_cast<uint32_t>(p0);
    c[0] = c0;
    c[2] = c2;
    k0 += kW0;
    k1 += kW1;
  }
}

// Philox's uniform float in [0, 1) from a block's word: its top 24 bits.
HUB_HOST_DEVICE inline float philox_unit(uint32_t word) { return static_cast<float>(word >> 8) * (1.0f / 16777216.0f); }

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
