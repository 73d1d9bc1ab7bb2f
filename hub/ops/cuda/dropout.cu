// CUDA kernel for Dropout (hub/ops/dropout.h).
//
// The mask is drawn exactly as the reference kernel (hub/ops/cpu/dropout.cc)
// draws it: Philox-4x32-10 keyed by mix_seed(kernel seed, `seed` attribute),
// element i from counter i, the top 24 bits of the block's first word as a
// uniform u in [0, 1), kept when u < 1 - rate. Counter-based, so the result
// depends on the seed only, never on the launch configuration, and equals the
// reference's bit for bit (one philox_rounds for both, hub/core/random.h;
// the CUDA dropout test compares the two exactly).
#include <cstdint>

#include "hub/core/random.h"
#include "hub/ops/cuda/common.h"

namespace hub::cuda {
namespace {

// mask[i] = [u_i < keep], y[i] = x[i] * mask[i] * scale.
__global__ void dropout_kernel(const float* x, float* y, float* mask, int64_t n, uint32_t k0, uint32_t k1, float keep,
                               float scale) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    uint32_t block[4] = {static_cast<uint32_t>(i), static_cast<uint32_t>(static_cast<uint64_t>(i) >> 32), 0, 0};
    philox_rounds(block, k0, k1);
    const float u = philox_unit(block[0]);
    const float m = u < keep ? 1.0f : 0.0f;
    mask[i] = m;
    y[i] = x[i] * m * scale;
  }
}

void dropout(KernelContext& c) {
  const Tensor& x = c.input(0);
  const int64_t n = x.num_elements();
  if (n == 0) return;
  const double rate = c.attrs().get_float("rate");
  const uint64_t key = mix_seed(c.seed(), static_cast<uint64_t>(c.attrs().get_int("seed")));
  dropout_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(
      x.device_data<float>(), c.output(0).device_data<float>(), c.output(1).device_data<float>(), n,
      static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32), static_cast<float>(1.0 - rate),
      static_cast<float>(1.0 / (1.0 - rate)));
  HUB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

HUB_REGISTER_KERNEL(Dropout, cuda, dropout);

}  // namespace hub::cuda
