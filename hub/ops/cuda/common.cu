#include <algorithm>
#include <cstdlib>
#include <string>

#include "hub/core/error.h"
#include "hub/ops/cuda/common.h"

namespace hub::cuda {

void cudnn_fail(const char* call, cudnnStatus_t status, const char* file, int line) {
  char detail[1024] = {0};
  cudnnGetLastErrorString(detail, sizeof(detail));
  const Code code = status == CUDNN_STATUS_ALLOC_FAILED ? Code::kResourceExhausted : Code::kInternal;
  throw_error(code, std::string("cuDNN call ") + call + " failed at " + file + ":" + std::to_string(line) + ": " +
                        cudnnGetErrorString(status) + (detail[0] ? std::string(" (") + detail + ")" : std::string()));
}

void cublas_fail(const char* call, cublasStatus_t status, const char* file, int line) {
  const Code code = status == CUBLAS_STATUS_ALLOC_FAILED ? Code::kResourceExhausted : Code::kInternal;
  throw_error(code, std::string("cuBLAS call ") + call + " failed at " + file + ":" + std::to_string(line) + ": " +
                        cublasGetStatusName(status) + " (" + cublasGetStatusString(status) + ")");
}

namespace {

struct Handles {
  cudnnHandle_t dnn = nullptr;
  cublasHandle_t blas = nullptr;
  ~Handles() {
    // At thread exit: errors cannot be reported any more.
    if (dnn) cudnnDestroy(dnn);
    if (blas) cublasDestroy(blas);
  }
};

Handles& handles() {
  thread_local Handles h;
  return h;
}

}  // namespace

cudnnHandle_t cudnn() {
  Handles& h = handles();
  if (!h.dnn) {
    cudaStream_t s = stream();
    HUB_CUDNN_CHECK(cudnnCreate(&h.dnn));
    HUB_CUDNN_CHECK(cudnnSetStream(h.dnn, s));
  }
  return h.dnn;
}

cublasHandle_t cublas() {
  Handles& h = handles();
  if (!h.blas) {
    cudaStream_t s = stream();
    HUB_CUBLAS_CHECK(cublasCreate(&h.blas));
    HUB_CUBLAS_CHECK(cublasSetStream(h.blas, s));
    HUB_CUBLAS_CHECK(cublasSetMathMode(h.blas, tf32_allowed() ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  }
  return h.blas;
}

bool tf32_allowed() {
  static const bool allowed = [] {
    const char* env = std::getenv("HUB_CUDA_TF32");
    return env && std::string(env) == "1";
  }();
  return allowed;
}

int blocks_for(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<int>(std::clamp<int64_t>(blocks, 1, 65535 * 8));
}

namespace {

// 32x32 tiles through shared memory (padded against bank conflicts), so both
// the reads and the writes are coalesced.
constexpr int kTile = 32;

__global__ void transpose_kernel(const float* in, float* out, int64_t rows, int64_t cols) {
  __shared__ float tile[kTile][kTile + 1];
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * kTile, r0 = static_cast<int64_t>(blockIdx.y) * kTile;
  for (int i = threadIdx.y; i < kTile; i += blockDim.y) {
    const int64_t r = r0 + i, c = c0 + threadIdx.x;
    if (r < rows && c < cols) tile[i][threadIdx.x] = in[r * cols + c];
  }
  __syncthreads();
  for (int i = threadIdx.y; i < kTile; i += blockDim.y) {
    const int64_t c = c0 + i, r = r0 + threadIdx.x;
    if (r < rows && c < cols) out[c * rows + r] = tile[threadIdx.x][i];
  }
}

__global__ void window_kernel(const float* from, float* to, int64_t total, int64_t h, int64_t wc, int64_t hp,
                              int64_t wpc, int64_t corner, bool into) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t row = i / wc, col = i - row * wc;  // row of the small tensor, over n * h
    const int64_t b = row / h, y = row - b * h;
    const int64_t j = (b * hp + y) * wpc + corner + col;
    if (into)
      to[j] = from[i];
    else
      to[i] = from[j];
  }
}

// One block's share of agreement(): grid-stride over the elements, then
// warp shuffles and one atomic per block (the maximum of non-negative floats
// as their bit patterns, which order the same way).
__global__ void agreement_kernel(const float* out, const float* ref, int64_t n, float* result) {
  float most = 0, sum = 0;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const float o = out[i], r = ref[i];
    if (isfinite(r)) sum += fabsf(r);
    if (o == r || (isnan(o) && isnan(r))) continue;
    const float d = fabsf(o - r);
    most = isnan(d) ? INFINITY : fmaxf(most, d);
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    most = fmaxf(most, __shfl_down_sync(0xffffffffu, most, offset));
    sum += __shfl_down_sync(0xffffffffu, sum, offset);
  }
  __shared__ float warp_most[kThreads / 32], warp_sum[kThreads / 32];
  if (threadIdx.x % 32 == 0) {
    warp_most[threadIdx.x / 32] = most;
    warp_sum[threadIdx.x / 32] = sum;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kThreads / 32; ++w) {
      most = fmaxf(most, warp_most[w]);
      sum += warp_sum[w];
    }
    atomicMax(reinterpret_cast<int*>(result), __float_as_int(most));
    atomicAdd(result + 1, sum);
  }
}

}  // namespace

Agreement agreement(KernelContext& c, const float* out, const float* ref, int64_t n) {
  Agreement a;
  if (n == 0) return a;
  Tensor result = c.temp(DType::kFloat32, Shape{2});
  float* r = result.device_data<float>();
  HUB_CUDA_CHECK(cudaMemsetAsync(r, 0, 2 * sizeof(float), stream()));
  agreement_kernel<<<std::min(blocks_for(n), 1024), kThreads, 0, stream()>>>(out, ref, n, r);
  HUB_CUDA_CHECK(cudaGetLastError());
  float host[2];
  HUB_CUDA_CHECK(cudaMemcpyAsync(host, r, sizeof host, cudaMemcpyDeviceToHost, stream()));
  HUB_CUDA_CHECK(cudaStreamSynchronize(stream()));
  a.max_diff = host[0];
  a.mean_abs_ref = host[1] / static_cast<float>(n);
  return a;
}

void copy_window(const float* from, float* to, const WindowShape& s, bool into) {
  const int64_t total = s.n * s.h * s.w * s.c;
  if (total == 0) return;
  window_kernel<<<blocks_for(total), kThreads, 0, stream()>>>(from, to, total, s.h, s.w * s.c, s.hp, s.wp * s.c,
                                                              (s.top * s.wp + s.left) * s.c, into);
  HUB_CUDA_CHECK(cudaGetLastError());
}

void transpose2d(const float* in, float* out, int64_t rows, int64_t cols) {
  if (rows == 0 || cols == 0) return;
  const dim3 grid(static_cast<unsigned>((cols + kTile - 1) / kTile), static_cast<unsigned>((rows + kTile - 1) / kTile));
  HUB_CHECK(grid.y <= 65535, "transpose2d: " + std::to_string(rows) + " rows");
  transpose_kernel<<<grid, dim3(kTile, 8), 0, stream()>>>(in, out, rows, cols);
  HUB_CUDA_CHECK(cudaGetLastError());
}

Tensor upload(KernelContext& c, const void* host, size_t bytes) {
  Tensor t = c.temp(DType::kUInt8, Shape{static_cast<int64_t>(bytes)});
  if (bytes > 0)
    HUB_CUDA_CHECK(cudaMemcpyAsync(t.device_data<uint8_t>(), host, bytes, cudaMemcpyHostToDevice, stream()));
  return t;
}

int64_t alignment_of(const void* p) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  int64_t a = 16;
  while (a > 1 && address % static_cast<uintptr_t>(a) != 0) a /= 2;
  return a;
}

}  // namespace hub::cuda
