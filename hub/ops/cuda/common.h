// What the CUDA kernels share: this thread's cuDNN and cuBLAS handles (on
// hub::cuda::stream()), the checking macros every cuDNN / cuBLAS call goes
// through, the TF32 switch, and launch helpers for hub's own kernels.
//
// Kernels read device pointers with Tensor::device_data<T>() and queue work
// on hub::cuda::stream(); they never wait for the device. Scratch memory
// (cuDNN workspaces, transposed weights) comes from KernelContext::temp(),
// the device pool, and may be released as soon as the work is queued.
#pragma once

#include <cublas_v2.h>
#include <cudnn.h>

#include <cstdint>
#include <string>
#include <vector>

#include "hub/core/cuda.h"
#include "hub/ops/registry.h"

namespace hub::cuda {

[[noreturn]] void cudnn_fail(const char* call, cudnnStatus_t status, const char* file, int line);
[[noreturn]] void cublas_fail(const char* call, cublasStatus_t status, const char* file, int line);

// This thread's handles, bound to stream() (made on first use).
cudnnHandle_t cudnn();
cublasHandle_t cublas();

// Whether float32 matrix work may round its inputs to TF32 on tensor cores
// ($HUB_CUDA_TF32=1; off by default, so float32 means float32).
bool tf32_allowed();

// Threads per block of hub's elementwise kernels and the grid for n items
// (grid-stride loops cover the rest).
constexpr int kThreads = 256;
int blocks_for(int64_t n);

// A device copy of `bytes` bytes of host memory as a uint8 tensor from the
// pool (queued on stream(); pageable memory is staged, so the host copy may
// go as soon as this returns): small tables a kernel computes on the host.
Tensor upload(KernelContext& c, const void* host, size_t bytes);
template <class T>
Tensor upload(KernelContext& c, const std::vector<T>& host) {
  return upload(c, host.data(), host.size() * sizeof(T));
}

// out[c][r] = in[r][c] for a rows x cols float matrix (both dense), queued on stream().
void transpose2d(const float* in, float* out, int64_t rows, int64_t cols);

// An NHWC tensor [n,h,w,c] as the window of a larger one [n,hp,wp,c] whose
// top-left corner is at (top, left).
struct WindowShape {
  int64_t n, h, w, c, hp, wp, top, left;
};
// Copies the small tensor `from` into its window of the larger `to` when
// `into` (the rest of `to` untouched), else the window of the larger `from`
// out into the small `to`. Queued on stream().
void copy_window(const float* from, float* to, const WindowShape& s, bool into);

// The largest power of two <= 16 that divides the address (cuDNN's byte alignment).
int64_t alignment_of(const void* p);

// How closely `out` follows `ref` (n floats each, on the device): the largest
// |out - ref| (infinite where exactly one of the two is NaN; NaN against NaN
// and equal infinities agree) and the mean |ref| (non-finite elements of ref
// counted as 0).
// Waits for the device: for choosing a plan, not for a step.
struct Agreement {
  float max_diff = 0;
  float mean_abs_ref = 0;
};
Agreement agreement(KernelContext& c, const float* out, const float* ref, int64_t n);

}  // namespace hub::cuda

#define HUB_CUDNN_CHECK(expr)                                                \
  do {                                                                       \
    const cudnnStatus_t hub_cudnn_status_ = (expr);                          \
    if (hub_cudnn_status_ != CUDNN_STATUS_SUCCESS)                           \
      ::hub::cuda::cudnn_fail(#expr, hub_cudnn_status_, __FILE__, __LINE__); \
  } while (0)

#define HUB_CUBLAS_CHECK(expr)                                                 \
  do {                                                                         \
    const cublasStatus_t hub_cublas_status_ = (expr);                          \
    if (hub_cublas_status_ != CUBLAS_STATUS_SUCCESS)                           \
      ::hub::cuda::cublas_fail(#expr, hub_cublas_status_, __FILE__, __LINE__); \
  } while (0)
