// cuBLAS products shared by MatMul / BatchMatMul (matmul.cu) and
// _FusedMatMul (fused.cu). Row-major operands as hub stores them; float32
// math unless TF32 is allowed (hub::cuda::tf32_allowed()).
#pragma once

#include <cstdint>

namespace hub::cuda {

// c[m,n] = op(a) op(b) for row-major a ([m,k], or [k,m] when ta) and b
// ([k,n], or [n,k] when tb), `batches` times with element strides between
// consecutive batches (0: the same matrix for every batch).
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t stride_a, const float* b,
          int64_t stride_b, float* c, int64_t batches = 1);

// A device vector of at least n ones (this thread's, grown as needed).
const float* ones(int64_t n);

}  // namespace hub::cuda
