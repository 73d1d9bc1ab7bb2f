// The machinery the element-wise CUDA kernels share (elementwise.cu, math.cu,
// activation.cu): a map over K operands of one element type, each broadcast
// (NumPy/TF rules: right-aligned, every dim 1 or the output's) to the output
// shape, writing one output, or two for the gradient ops with two results,
// densely in row-major order.
//
// Shapes are coalesced as hub/ops/cpu/broadcast.h does: size-1 output dims
// are dropped and adjacent dims merged where every operand either spans both
// or is broadcast along both, so [N,H,W,C] (+) [C] becomes [NHW, C] and
// same-shaped operands a single dim. Each element then finds its operands
// with one int64 division per merged dim beyond the first (none for
// same-shaped operands or a scalar one). The layout travels to the kernel by
// value, so at most kMaxDims merged dims fit: broadcast_fits() says whether a
// node's shapes do, and supports() functions leave the rest to the CPU.
//
// Float32 maps over operands that are each dense or a single value (the
// activations, same-shaped grads, x * scalar) load and store float4 when the
// pointers are 16-byte aligned; the results are the same element for element.
//
// Functors are structs with a __device__ operator() taking K values of the
// operand type and returning the output value (or Two<U> for two outputs);
// their members (alpha, bounds) travel to the kernel by value.
//
// Everything is queued on hub::cuda::stream(); an empty output launches nothing.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "hub/core/error.h"
#include "hub/ops/cuda/common.h"
#include "hub/tensor/tensor.h"

namespace hub::cuda {

// Merged dims a broadcast map handles; every shape of rank <= kMaxDims fits.
constexpr int kMaxDims = 8;

// The two results of one element of an op with two outputs.
template <class U>
struct Two {
  U first, second;
};

// K operands against an output of `rank` merged dims (outermost first):
// operand k's element for output index (i_0, ..., i_{rank-1}) is at
// sum_d i_d * strides[k][d], with stride 0 along dims it is broadcast on.
template <int K>
struct BroadcastLayout {
  int rank = 1;
  int64_t dims[kMaxDims] = {};
  int64_t strides[K][kMaxDims] = {};

  // Operand offsets of output element i (dense row-major index).
  __device__ __forceinline__ void offsets(int64_t i, int64_t (&off)[K]) const {
#pragma unroll
    for (int k = 0; k < K; ++k) off[k] = 0;
    for (int d = rank - 1; d > 0; --d) {
      const int64_t q = i / dims[d], r = i - q * dims[d];
#pragma unroll
      for (int k = 0; k < K; ++k) off[k] += r * strides[k][d];
      i = q;
    }
#pragma unroll
    for (int k = 0; k < K; ++k) off[k] += i * strides[k][0];
  }
};

// Builds the layout of `operands` broadcast to `out` (each right-aligned with
// out, every dim 1 or out's); false when more than kMaxDims merged dims
// remain. Unknown dims (-1, in partial shapes) count as not 1.
template <int K>
bool plan_broadcast(const Shape& out, const std::array<const Shape*, K>& operands, BroadcastLayout<K>* layout) {
  bool full[kMaxDims][K] = {};  // per merged dim: operand k spans it
  int m = 0;
  for (int d = 0; d < out.rank(); ++d) {
    if (out[d] == 1) continue;
    bool spans[K];
    bool same = m > 0;
    for (int k = 0; k < K; ++k) {
      const Shape& s = *operands[k];
      const int sd = s.rank() - out.rank() + d;
      spans[k] = sd >= 0 && s[sd] != 1;
      same = same && spans[k] == full[m - 1][k];
    }
    if (same) {
      layout->dims[m - 1] *= out[d];
      continue;
    }
    if (m == kMaxDims) return false;
    layout->dims[m] = out[d];
    std::copy(spans, spans + K, full[m]);
    ++m;
  }
  if (m == 0) {  // one element: every offset is 0
    layout->rank = 1;
    layout->dims[0] = 1;
    for (int k = 0; k < K; ++k) layout->strides[k][0] = 0;
    return true;
  }
  layout->rank = m;
  for (int k = 0; k < K; ++k) {
    int64_t stride = 1;
    for (int d = m - 1; d >= 0; --d) {
      layout->strides[k][d] = full[d][k] ? stride : 0;
      if (full[d][k]) stride *= layout->dims[d];
    }
  }
  return true;
}

// For supports(): whether these operand shapes broadcast to `out` within kMaxDims merged dims.
template <class... Shapes>
bool broadcast_fits(const Shape& out, const Shapes&... operands) {
  BroadcastLayout<sizeof...(Shapes)> layout;
  return plan_broadcast<sizeof...(Shapes)>(out, {&operands...}, &layout);
}

// supports() of a binary op whose operands broadcast to broadcast(a, b).
inline bool supports_broadcast_binary(const Node&, const std::vector<TensorSpec>& inputs) {
  const Shape& a = inputs[0].shape;
  const Shape& b = inputs[1].shape;
  return broadcast_fits(broadcast_shapes(a, b), a, b);
}

template <class T, int K>
struct Inputs {
  const T* p[K];
};
template <class U, int M>
struct Outputs {
  U* p[M];
};

// f(v[0], ..., v[K-1]).
template <class F, class T, int K>
__device__ __forceinline__ auto call(const F& f, const T (&v)[K]) {
  static_assert(K >= 1 && K <= 3, "element-wise functors take 1 to 3 operands");
  if constexpr (K == 1)
    return f(v[0]);
  else if constexpr (K == 2)
    return f(v[0], v[1]);
  else
    return f(v[0], v[1], v[2]);
}

template <class T, class U, int M, int K, class F>
__global__ void broadcast_map_kernel(int64_t n, BroadcastLayout<K> layout, Inputs<T, K> in, Outputs<U, M> out, F f) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    int64_t off[K];
    layout.offsets(i, off);
    T v[K];
#pragma unroll
    for (int k = 0; k < K; ++k) v[k] = in.p[k][off[k]];
    const auto r = call(f, v);
    if constexpr (M == 1) {
      out.p[0][i] = r;
    } else {
      static_assert(M == 2, "one or two outputs");
      out.p[0][i] = r.first;
      out.p[1][i] = r.second;
    }
  }
}

// The float32 form of a one-dimensional layout (each operand dense, stride
// 1, or one value, stride 0): four elements per thread through float4; the
// n % 4 elements past the last full vector go to the grid's first threads.
template <int K, class F>
__global__ void dense_map4_kernel(int64_t n, BroadcastLayout<K> layout, Inputs<float, K> in, float* out, F f) {
  bool dense[K];
  float scalar[K];
#pragma unroll
  for (int k = 0; k < K; ++k) {
    dense[k] = layout.strides[k][0] != 0;
    scalar[k] = dense[k] ? 0.0f : in.p[k][0];
  }
  const int64_t first = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  const int64_t n4 = n / 4;
  for (int64_t i = first; i < n4; i += step) {
    float4 v[K];
#pragma unroll
    for (int k = 0; k < K; ++k)
      v[k] = dense[k] ? reinterpret_cast<const float4*>(in.p[k])[i]
                      : make_float4(scalar[k], scalar[k], scalar[k], scalar[k]);
    float4 r;
    float lane[K];
#pragma unroll
    for (int k = 0; k < K; ++k) lane[k] = v[k].x;
    r.x = call(f, lane);
#pragma unroll
    for (int k = 0; k < K; ++k) lane[k] = v[k].y;
    r.y = call(f, lane);
#pragma unroll
    for (int k = 0; k < K; ++k) lane[k] = v[k].z;
    r.z = call(f, lane);
#pragma unroll
    for (int k = 0; k < K; ++k) lane[k] = v[k].w;
    r.w = call(f, lane);
    reinterpret_cast<float4*>(out)[i] = r;
  }
  const int64_t t = n4 * 4 + first;
  if (t < n) {
    float lane[K];
#pragma unroll
    for (int k = 0; k < K; ++k) lane[k] = dense[k] ? in.p[k][t] : scalar[k];
    out[t] = call(f, lane);
  }
}

// Queues out_m[i] = f(operands at i) for every element i of `shape`
// (M = 1: f returns U; M = 2: f returns Two<U>). Operand k (element type T)
// has shape *shapes[k], broadcast to `shape`.
template <class T, class U, int M, int K, class F>
void launch_broadcast_map(const F& f, const Shape& shape, Outputs<U, M> out, Inputs<T, K> in,
                          const std::array<const Shape*, K>& shapes) {
  const int64_t n = shape.num_elements();
  if (n == 0) return;
  BroadcastLayout<K> layout;
  HUB_CHECK(plan_broadcast<K>(shape, shapes, &layout), "broadcast to " + shape.to_string() + " needs more than " +
                                                           std::to_string(kMaxDims) +
                                                           " dims: supports() should have declined the node");
  if constexpr (M == 1 && std::is_same_v<T, float> && std::is_same_v<U, float>) {
    bool vectorizable = layout.rank == 1 && alignment_of(out.p[0]) == 16;
    for (int k = 0; k < K; ++k)
      vectorizable = vectorizable && (layout.strides[k][0] == 0 || alignment_of(in.p[k]) == 16);
    if (vectorizable) {
      dense_map4_kernel<K><<<blocks_for(n / 4), kThreads, 0, stream()>>>(n, layout, in, out.p[0], f);
      HUB_CUDA_CHECK(cudaGetLastError());
      return;
    }
  }
  broadcast_map_kernel<T, U, M, K><<<blocks_for(n), kThreads, 0, stream()>>>(n, layout, in, out, f);
  HUB_CUDA_CHECK(cudaGetLastError());
}

// out = f(operands...) element-wise, each operand (element type T, 1 to 3 of
// them) broadcast to out's shape; out has element type U.
template <class T, class U = T, class F, class... Operands>
void broadcast_map(const F& f, Tensor& out, const Operands&... operands) {
  static_assert((std::is_same_v<Operands, Tensor> && ...), "operands are Tensors");
  constexpr int K = sizeof...(Operands);
  launch_broadcast_map<T, U, 1, K>(f, out.shape(), Outputs<U, 1>{{out.device_data<U>()}},
                                   Inputs<T, K>{{operands.template device_data<T>()...}}, {&operands.shape()...});
}

// (out0, out1) = f(operands...), f returning Two<U>; out0 and out1 share a shape.
template <class T, class U = T, class F, class... Operands>
void broadcast_map2(const F& f, Tensor& out0, Tensor& out1, const Operands&... operands) {
  static_assert((std::is_same_v<Operands, Tensor> && ...), "operands are Tensors");
  constexpr int K = sizeof...(Operands);
  HUB_CHECK(out0.shape() == out1.shape(), out0.spec_string() + " vs " + out1.spec_string());
  launch_broadcast_map<T, U, 2, K>(f, out0.shape(), Outputs<U, 2>{{out0.device_data<U>(), out1.device_data<U>()}},
                                   Inputs<T, K>{{operands.template device_data<T>()...}}, {&operands.shape()...});
}

}  // namespace hub::cuda
