// cuBLAS kernels for MatMul and BatchMatMul, and BiasAdd / BiasAddGrad.
//
// cuBLAS is column-major: a row-major [r, c] matrix is its column-major
// transpose, so c = op(a) op(b) is computed as c^T = op(b)^T op(a)^T with the
// operands swapped. BatchMatMul's broadcast batch dims become one strided
// batched call when each operand's batches are evenly spaced (all of them,
// or one matrix for all), else one call per distinct stride pattern run.
#include <vector>

#include "hub/core/error.h"
#include "hub/ops/cuda/common.h"
#include "hub/ops/cuda/matmul.h"

namespace hub::cuda {

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t stride_a, const float* b,
          int64_t stride_b, float* c, int64_t batches) {
  if (m == 0 || n == 0 || batches == 0) return;
  const float alpha = 1.0f, beta = 0.0f;
  if (k == 0) {  // an empty sum
    HUB_CUDA_CHECK(cudaMemsetAsync(c, 0, static_cast<size_t>(m * n * batches) * sizeof(float), stream()));
    return;
  }
  HUB_CHECK(m <= INT32_MAX && n <= INT32_MAX && k <= INT32_MAX && batches <= INT32_MAX, "gemm too large for cuBLAS");
  const int lda = static_cast<int>(ta ? m : k), ldb = static_cast<int>(tb ? k : n);
  const cublasOperation_t op_a = ta ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (batches == 1) {
    HUB_CUBLAS_CHECK(cublasSgemm(cublas(), op_b, op_a, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k),
                                 &alpha, b, ldb, a, lda, &beta, c, static_cast<int>(n)));
  } else {
    HUB_CUBLAS_CHECK(cublasSgemmStridedBatched(cublas(), op_b, op_a, static_cast<int>(n), static_cast<int>(m),
                                               static_cast<int>(k), &alpha, b, ldb, stride_b, a, lda, stride_a, &beta,
                                               c, static_cast<int>(n), m * n, static_cast<int>(batches)));
  }
}

namespace {

__global__ void fill_kernel(float* p, int64_t n, float value) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
    p[i] = value;
}

// out[i] = value[i] + bias[i % channels]
__global__ void bias_add_kernel(const float* value, const float* bias, float* out, int64_t n, int64_t channels) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
    out[i] = value[i] + bias[i % channels];
}

}  // namespace

const float* ones(int64_t n) {
  struct Ones {
    float* p = nullptr;
    int64_t size = 0;
  };
  thread_local Ones o;  // kept for the thread's life: reused by every BiasAddGrad
  if (o.size < n) {
    use_device();
    const int64_t size = std::max<int64_t>(n, 4096);
    float* p = nullptr;
    HUB_CUDA_CHECK(cudaMalloc(&p, static_cast<size_t>(size) * sizeof(float)));
    fill_kernel<<<blocks_for(size), kThreads, 0, stream()>>>(p, size, 1.0f);
    HUB_CUDA_CHECK(cudaGetLastError());
    if (o.p) HUB_CUDA_CHECK(cudaFree(o.p));  // cudaFree waits for the work using it
    o.p = p;
    o.size = size;
  }
  return o.p;
}

namespace {

bool float32_only(const Node&, const std::vector<TensorSpec>& inputs) {
  for (const TensorSpec& s : inputs)
    if (s.dtype != DType::kFloat32) return false;
  return true;
}

void matmul_kernel(KernelContext& c) {
  const bool ta = c.attrs().get_bool("transpose_a"), tb = c.attrs().get_bool("transpose_b");
  const Tensor &a = c.input(0), &b = c.input(1);
  Tensor& out = c.output(0);
  const int64_t m = out.dim(0), n = out.dim(1), k = ta ? a.dim(0) : a.dim(1);
  gemm(ta, tb, m, n, k, a.device_data<float>(), 0, b.device_data<float>(), 0, out.device_data<float>());
}

void batch_matmul_kernel(KernelContext& c) {
  const bool ta = c.attrs().get_bool("adj_x"), tb = c.attrs().get_bool("adj_y");
  const Tensor &a = c.input(0), &b = c.input(1);
  Tensor& out = c.output(0);
  const int r = out.rank(), nb = r - 2;
  const int64_t m = out.dim(-2), n = out.dim(-1), k = ta ? a.dim(-2) : a.dim(-1);
  // Per output batch dim, each operand's element stride (0 where it is broadcast).
  std::vector<int64_t> sa(nb, 0), sb(nb, 0);
  int64_t step_a = m * k, step_b = k * n;
  for (int i = nb - 1; i >= 0; --i) {
    const int ia = i - (r - a.rank()), ib = i - (r - b.rank());
    const int64_t da = ia >= 0 ? a.dim(ia) : 1, db = ib >= 0 ? b.dim(ib) : 1;
    sa[i] = da == 1 ? 0 : step_a;
    sb[i] = db == 1 ? 0 : step_b;
    step_a *= da;
    step_b *= db;
  }
  int64_t batches = 1;
  for (int i = 0; i < nb; ++i) batches *= out.dim(i);
  std::vector<int64_t> off_a(batches), off_b(batches);
  for (int64_t batch = 0; batch < batches; ++batch) {
    int64_t rem = batch, oa = 0, ob = 0;
    for (int i = nb - 1; i >= 0; --i) {
      const int64_t idx = rem % out.dim(i);
      rem /= out.dim(i);
      oa += idx * sa[i];
      ob += idx * sb[i];
    }
    off_a[batch] = oa;
    off_b[batch] = ob;
  }
  const float* pa = a.device_data<float>();
  const float* pb = b.device_data<float>();
  float* pc = out.device_data<float>();
  // Runs of batches where both operands advance by a constant stride go in one call.
  for (int64_t start = 0; start < batches;) {
    int64_t end = start + 1;
    const int64_t da = batches > start + 1 ? off_a[start + 1] - off_a[start] : 0;
    const int64_t db = batches > start + 1 ? off_b[start + 1] - off_b[start] : 0;
    while (end < batches && off_a[end] - off_a[end - 1] == da && off_b[end] - off_b[end - 1] == db) ++end;
    gemm(ta, tb, m, n, k, pa + off_a[start], da, pb + off_b[start], db, pc + start * m * n, end - start);
    start = end;
  }
}

void bias_add(KernelContext& c) {
  const Tensor &value = c.input(0), &bias = c.input(1);
  Tensor& out = c.output(0);
  const int64_t n = out.num_elements();
  if (n == 0) return;
  bias_add_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(value.device_data<float>(), bias.device_data<float>(),
                                                            out.device_data<float>(), n, bias.num_elements());
  HUB_CUDA_CHECK(cudaGetLastError());
}

// dbias = g^T 1: one matrix-vector product over the rows of g [rows, C].
void bias_add_grad(KernelContext& c) {
  const Tensor& g = c.input(0);
  Tensor& out = c.output(0);
  const int64_t channels = out.num_elements();
  if (channels == 0) return;
  const int64_t rows = g.num_elements() / channels;
  if (rows == 0) {
    HUB_CUDA_CHECK(cudaMemsetAsync(out.device_data<float>(), 0, out.nbytes(), stream()));
    return;
  }
  HUB_CHECK(rows <= INT32_MAX && channels <= INT32_MAX, "BiasAddGrad too large for cuBLAS");
  const float alpha = 1.0f, beta = 0.0f;
  HUB_CUBLAS_CHECK(cublasSgemv(cublas(), CUBLAS_OP_N, static_cast<int>(channels), static_cast<int>(rows), &alpha,
                               g.device_data<float>(), static_cast<int>(channels), ones(rows), 1, &beta,
                               out.device_data<float>(), 1));
}

}  // namespace

HUB_REGISTER_KERNEL(MatMul, cuda, matmul_kernel, float32_only);
HUB_REGISTER_KERNEL(BatchMatMul, cuda, batch_matmul_kernel, float32_only);
HUB_REGISTER_KERNEL(BiasAdd, cuda, bias_add, float32_only);
HUB_REGISTER_KERNEL(BiasAddGrad, cuda, bias_add_grad, float32_only);

}  // namespace hub::cuda
