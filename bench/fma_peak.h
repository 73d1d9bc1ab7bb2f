// The machine's measured FP32 multiply-add peak: `threads` threads each run
// 12 independent chains of vector FMAs (enough to fill two FMA pipes of
// latency 4 to 6) for about `seconds`, AVX-512 where the CPU has it, else
// AVX2; the best of three tries, in GFLOP/s (2 flops per multiply-add). The
// inference benchmarks report their rates as a fraction of it.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

namespace bench {

namespace fma_detail {

constexpr int kChains = 12;

// Each returns a value that depends on every chain, so none is optimised
// away; one function per instruction set (the vector types of the other
// cannot cross a function boundary).
__attribute__((target("avx512f"))) inline float chains512(long iterations) {
  __m512 acc[kChains];
  const __m512 b = _mm512_set1_ps(1.0000001f), c = _mm512_set1_ps(1e-7f);
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  for (long k = 0; k < iterations; ++k)
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], b, c);
  __m512 s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm512_add_ps(s, acc[i]);
  alignas(64) float t[16];
  _mm512_store_ps(t, s);
  float sum = 0;
  for (float v : t) sum += v;
  return sum;
}

__attribute__((target("avx2,fma"))) inline float chains256(long iterations) {
  __m256 acc[kChains];
  const __m256 b = _mm256_set1_ps(1.0000001f), c = _mm256_set1_ps(1e-7f);
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  for (long k = 0; k < iterations; ++k)
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], b, c);
  __m256 s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm256_add_ps(s, acc[i]);
  alignas(32) float t[8];
  _mm256_store_ps(t, s);
  float sum = 0;
  for (float v : t) sum += v;
  return sum;
}

}  // namespace fma_detail

inline double fma_peak_gflops(int threads, double seconds = 0.5) {
  const bool avx512 = __builtin_cpu_supports("avx512f");
  const int lanes = avx512 ? 16 : 8;
  auto run = [&](long n) { return avx512 ? fma_detail::chains512(n) : fma_detail::chains256(n); };
  // Calibrate the iteration count on one thread, then time all threads together.
  long n = 1 << 20;
  for (;;) {
    const auto t0 = std::chrono::steady_clock::now();
    volatile float sink = run(n);
    (void)sink;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > seconds / 4) {
      n = static_cast<long>(static_cast<double>(n) * seconds / s);
      break;
    }
    n *= 2;
  }
  double best = 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::vector<std::thread> pool;
    std::vector<float> sinks(static_cast<size_t>(threads));
    const auto t0 = std::chrono::steady_clock::now();
    for (int t = 0; t < threads; ++t) pool.emplace_back([&, t] { sinks[static_cast<size_t>(t)] = run(n); });
    for (std::thread& t : pool) t.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, 2.0 * fma_detail::kChains * lanes * static_cast<double>(n) * threads / s / 1e9);
  }
  return best;
}

}  // namespace bench
