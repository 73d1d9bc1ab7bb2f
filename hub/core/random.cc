#include "hub/core/random.h"

#include <cmath>

#include "hub/core/parallel.h"

namespace hub {

uint64_t mix_seed(uint64_t a, uint64_t b) {
  uint64_t z = a + 0x9e3779b97f4a7c15ULL * (b + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::array<uint32_t, 4> Philox::block(uint64_t hi, uint64_t lo) const {
  std::array<uint32_t, 4> c = {static_cast<uint32_t>(lo), static_cast<uint32_t>(lo >> 32), static_cast<uint32_t>(hi),
                               static_cast<uint32_t>(hi >> 32)};
  philox_rounds(c.data(), key_[0], key_[1]);
  return c;
}

float Philox::uniform(uint64_t index, uint64_t stream) const { return philox_unit(block(stream, index)[0]); }

float Philox::normal(uint64_t index, uint64_t stream) const {
  auto b = block(stream, index);
  float u1 = ((b[0] >> 8) + 1) * (1.0f / 16777217.0f);  // (0, 1]
  float u2 = philox_unit(b[1]);
  return std::sqrt(-2.0f * std::log(u1)) * std::cos(6.28318530717958647692f * u2);
}

void fill_uniform(float* out, int64_t n, uint64_t seed, float lo, float hi) {
  Philox rng(seed);
  parallel_for(n, 1 << 14, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) out[i] = lo + (hi - lo) * rng.uniform(i);
  });
}

void fill_normal(float* out, int64_t n, uint64_t seed, float mean, float stddev) {
  Philox rng(seed);
  parallel_for(n, 1 << 14, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) out[i] = mean + stddev * rng.normal(i);
  });
}

void fill_truncated_normal(float* out, int64_t n, uint64_t seed, float mean, float stddev) {
  Philox rng(seed);
  parallel_for(n, 1 << 14, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      float z = rng.normal(i, 0);
      for (uint64_t s = 1; std::fabs(z) > 2.0f; ++s) z = rng.normal(i, s);
      out[i] = mean + stddev * z;
    }
  });
}

}  // namespace hub
