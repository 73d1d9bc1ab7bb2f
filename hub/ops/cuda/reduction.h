// Block-level reduction steps shared by hub's reduction-style CUDA kernels
// (reduction.cu: Sum … ArgMax, TopK; softmax.cu: the cross-entropy rows).
// Device code: include from .cu files only.
//
// Combining is a tree over threads, so float sums are accumulated in float in
// O(log n) depth: the result differs from a sequential sum by rounding only.
#pragma once

#include <cstdint>

namespace hub::cuda {

// The smallest power of two >= n, but at most `cap` (a power of two); 1 for n <= 1.
inline int pow2_at_least(int64_t n, int cap) {
  int p = 1;
  while (p < cap && p < n) p *= 2;
  return p;
}

struct Add {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
// The larger / smaller of two values; with a NaN the result is unspecified
// (as Eigen's maxCoeff / minCoeff in the reference kernels).
struct Maximum {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return b > a ? b : a;
  }
};
struct Minimum {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return b < a ? b : a;
  }
};

// part[y * width + x] for y in [0, height) is combined into part[x], for each
// x < width; `tid` is the caller's index y * width + x, and width * height
// threads (height a power of two) call this together: it synchronises the
// block, before (so the caller's writes to part are seen) and after each step.
// On return part[0, width) is visible to every thread; synchronise again
// before writing part anew.
template <class T, class Op>
__device__ void combine_down(T* part, int tid, int width, int height, Op op) {
  __syncthreads();
  for (int s = height / 2; s > 0; s /= 2) {
    if (tid < s * width) part[tid] = op(part[tid], part[tid + s * width]);
    __syncthreads();
  }
}

// op over every thread's v, returned to every thread of a one-dimensional
// block whose size is a power of two; part holds blockDim.x values. Every
// thread calls it (it synchronises), and part may be reused on return.
template <class T, class Op>
__device__ T block_reduce(T v, T* part, Op op) {
  part[threadIdx.x] = v;
  combine_down(part, static_cast<int>(threadIdx.x), 1, static_cast<int>(blockDim.x), op);
  const T result = part[0];
  __syncthreads();
  return result;
}

}  // namespace hub::cuda
