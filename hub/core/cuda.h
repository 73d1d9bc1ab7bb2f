// The CUDA runtime as hub uses it: one device, one stream, and one checking
// macro for every CUDA runtime call. Compiled only in builds with CUDA
// (meson -Dcuda=enabled|auto); the CUDA backend (hub/backend/cuda.cc) and
// the CUDA kernels (hub/ops/cuda) share it.
//
// All device work hub queues goes to stream(), in order: a buffer returned to
// the device allocator may be handed out again at once, since any later use
// is queued after every earlier one. The host waits only where it needs
// results (copies to host memory, Backend::synchronize()).
//
// Thread safety: every function may be called from any thread. Work queued
// from several threads goes to the same stream (in the order the calls
// happen).
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace hub::cuda {

// Throws hub::Error naming the call, its file:line and CUDA's message:
// ResourceExhausted for an allocation failure, else Internal.
[[noreturn]] void fail(const char* call, cudaError_t status, const char* file, int line);

// Empty when a CUDA device can be used, else why not ("no CUDA device: CUDA
// driver version is insufficient for CUDA runtime version"). Checked once.
const std::string& unavailable_reason();

// The device hub uses (the first visible one) is current on the calling
// thread after this; throws Unavailable when there is none.
void use_device();

// The stream hub queues its work on (made on first use, non-blocking).
cudaStream_t stream();

// Waits for everything queued on stream().
void synchronize();

}  // namespace hub::cuda

// Every CUDA runtime call goes through this (kernel launches: follow them
// with HUB_CUDA_CHECK(cudaGetLastError())).
#define HUB_CUDA_CHECK(expr)                                                                             \
  do {                                                                                                   \
    const cudaError_t hub_cuda_status_ = (expr);                                                         \
    if (hub_cuda_status_ != cudaSuccess) ::hub::cuda::fail(#expr, hub_cuda_status_, __FILE__, __LINE__); \
  } while (0)
