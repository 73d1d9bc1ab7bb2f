// CUDA kernels for LRN and LRNGrad (NHWC float32; formulas in hub/ops/lrn.h,
// reference kernels in hub/ops/cpu/lrn.cc).
//
// A pixel's D channels are contiguous in NHWC, so each kernel runs one thread
// per element with neighbouring threads on neighbouring channels: a warp's
// loads of every window offset are contiguous and the overlapping windows
// are served from L1. Window sums cover channels max(0, d-r) .. min(D-1, d+r)
// and add them from the lowest up, as the reference does; norm^(-beta) takes
// the reference's square-root forms for beta 0.5 and 0.75.
//
// LRNGrad needs, for each channel k, the window sum of t[d] = grads[d] *
// y[d] / norm[d], where each norm[d] is itself a window sum: a first pass
// writes t (a temporary the size of x), a second sums it and finishes dx.
#include <algorithm>
#include <cstdint>

#include "hub/ops/cuda/common.h"

namespace hub::cuda {
namespace {

struct Params {
  int64_t depth;  // D, channels per pixel
  int64_t reach;  // min(depth_radius, D - 1): how far a window extends each side
  float bias, alpha, beta;
};

// Sum over the window of channel d (row points at its pixel's channel 0) of
// row[k]^2 (kSquare) or row[k].
template <bool kSquare>
__device__ float window_sum(const float* row, int64_t d, const Params& p) {
  const int64_t first = d > p.reach ? d - p.reach : 0, last = min(p.depth - 1, d + p.reach);
  float sum = 0.0f;
  for (int64_t k = first; k <= last; ++k) sum += kSquare ? row[k] * row[k] : row[k];
  return sum;
}

// bias + alpha * (sum of squares over channel d's window).
__device__ float norm_at(const float* row, int64_t d, const Params& p) {
  return p.bias + p.alpha * window_sum<true>(row, d, p);
}

__device__ float pow_neg_beta(float norm, float beta) {
  if (beta == 0.5f) return rsqrtf(norm);
  if (beta == 0.75f) {
    const float r = rsqrtf(norm);
    return r * sqrtf(r);
  }
  return powf(norm, -beta);
}

// y = x * norm^(-beta).
__global__ void lrn_kernel(const float* x, float* y, int64_t total, Params p) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t d = i % p.depth;
    y[i] = x[i] * pow_neg_beta(norm_at(x + (i - d), d, p), p.beta);
  }
}

// t = grads * y / norm.
__global__ void lrn_grad_share_kernel(const float* grads, const float* x, const float* y, float* t, int64_t total,
                                      Params p) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t d = i % p.depth;
    t[i] = grads[i] * y[i] / norm_at(x + (i - d), d, p);
  }
}

// dx = grads * norm^(-beta) - 2 * alpha * beta * x * (window sum of t).
__global__ void lrn_grad_kernel(const float* grads, const float* x, const float* t, float* dx, int64_t total,
                                Params p) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t d = i % p.depth, row = i - d;
    dx[i] = grads[i] * pow_neg_beta(norm_at(x + row, d, p), p.beta) -
            2.0f * p.alpha * p.beta * x[i] * window_sum<false>(t + row, d, p);
  }
}

Params params_of(const KernelContext& c, int64_t depth) {
  const Attrs& a = c.attrs();
  return {depth, std::min(a.get_int("depth_radius"), depth - 1), static_cast<float>(a.get_float("bias")),
          static_cast<float>(a.get_float("alpha")), static_cast<float>(a.get_float("beta"))};
}

void lrn(KernelContext& c) {
  const Tensor& x = c.input(0);
  const int64_t total = x.num_elements();
  if (total == 0) return;
  lrn_kernel<<<blocks_for(total), kThreads, 0, stream()>>>(x.device_data<float>(), c.output(0).device_data<float>(),
                                                           total, params_of(c, x.dim(3)));
  HUB_CUDA_CHECK(cudaGetLastError());
}

// Inputs: grads, x, y.
void lrn_grad(KernelContext& c) {
  const Tensor &grads = c.input(0), &x = c.input(1), &y = c.input(2);
  const int64_t total = grads.num_elements();
  if (total == 0) return;
  const Params p = params_of(c, x.dim(3));
  Tensor t = c.temp(DType::kFloat32, x.shape());
  lrn_grad_share_kernel<<<blocks_for(total), kThreads, 0, stream()>>>(
      grads.device_data<float>(), x.device_data<float>(), y.device_data<float>(), t.device_data<float>(), total, p);
  HUB_CUDA_CHECK(cudaGetLastError());
  lrn_grad_kernel<<<blocks_for(total), kThreads, 0, stream()>>>(grads.device_data<float>(), x.device_data<float>(),
                                                                t.device_data<float>(),
                                                                c.output(0).device_data<float>(), total, p);
  HUB_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

HUB_REGISTER_KERNEL(LRN, cuda, lrn);
HUB_REGISTER_KERNEL(LRNGrad, cuda, lrn_grad);

}  // namespace hub::cuda
