// CUDA kernels of the element-wise binary ops and graph utilities of
// hub/ops/elementwise.h: Add, Sub, Mul, Div, Maximum, Minimum (float32, int32,
// int64, broadcasting), Pow and PowGrad (float32), MaximumGrad, MinimumGrad,
// AddN, Identity, StopGradient, ZerosLike and OnesLike. ReduceToLike is in
// reduction.cu.
//
// Each computes what the reference kernel (hub/ops/cpu/elementwise.cc) does,
// element for element:
// - Maximum / Minimum are std::max / std::min, as Eigen's max() / min():
//   where either operand is NaN the result is a.
// - Integer division truncates toward zero; x / 0 is undefined for integers
//   (as on the CPU, where it traps).
// - Pow is powf with the C99 special cases std::pow has; PowGrad's second
//   output is 0 wherever a > 0 is false (a <= 0 or NaN).
// - MaximumGrad / MinimumGrad multiply g by the 0/1 mask and by 1 - mask, as
//   the reference does, so an inf or NaN in g gives NaN on both sides there.
// - AddN adds in input order (((x0 + x1) + x2) + ...), so float results are
//   bitwise those of the reference.
#include <algorithm>
#include <vector>

#include "hub/ops/cuda/elementwise.h"
#include "hub/tensor/shape.h"

namespace hub::cuda {
namespace {

struct AddFn {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct SubFn {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return a - b;
  }
};
struct MulFn {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return a * b;
  }
};
struct DivFn {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return a / b;
  }
};
struct MaximumFn {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return std::max(a, b);
  }
};
struct MinimumFn {
  template <class T>
  __device__ T operator()(T a, T b) const {
    return std::min(a, b);
  }
};
struct PowFn {
  __device__ float operator()(float a, float b) const { return powf(a, b); }
};

// (g * b * a^(b-1), g * a^b * ln a where a > 0, else 0), in the reference's order of operations.
struct PowGradFn {
  __device__ Two<float> operator()(float g, float a, float b) const {
    return {g * b * powf(a, b - 1.0f), a > 0.0f ? g * powf(a, b) * logf(a) : 0.0f};
  }
};

// (g * mask, g * (1 - mask)) with mask = [a >= b] (Maximum) or [a <= b] (Minimum) as T.
template <bool kMax>
struct SelectGradFn {
  template <class T>
  __device__ Two<T> operator()(T g, T a, T b) const {
    const T mask = static_cast<T>(kMax ? a >= b : a <= b);
    return {static_cast<T>(g * mask), static_cast<T>(g * (T(1) - mask))};
  }
};

// Inputs (g, a, b) with a and b broadcast to g's shape.
bool supports_grad_of_binary(const Node&, const std::vector<TensorSpec>& inputs) {
  const Shape& g = inputs[0].shape;
  return broadcast_fits(g, g, inputs[1].shape, inputs[2].shape);
}

template <class F>
void binary_op(KernelContext& c) {
  dispatch_arith(c.input(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    broadcast_map<T>(F{}, c.output(0), c.input(0), c.input(1));
  });
}

void pow_op(KernelContext& c) { broadcast_map<float>(PowFn{}, c.output(0), c.input(0), c.input(1)); }

void pow_grad_op(KernelContext& c) {
  broadcast_map2<float>(PowGradFn{}, c.output(0), c.output(1), c.input(0), c.input(1), c.input(2));
}

template <bool kMax>
void select_grad_op(KernelContext& c) {
  dispatch_arith(c.input(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    broadcast_map2<T>(SelectGradFn<kMax>{}, c.output(0), c.output(1), c.input(0), c.input(1), c.input(2));
  });
}

// Input pointers per AddN launch (they travel as kernel parameters); more
// inputs take further launches that add onto the output, in order.
constexpr int kAddNChunk = 16;

template <class T>
struct AddNChunk {
  const T* p[kAddNChunk];
  int count;
  bool accumulate;  // out += p[0] + ...; else out = p[0] + ...
};

template <class T>
__global__ void add_n_kernel(int64_t n, AddNChunk<T> chunk, T* out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    T sum = chunk.accumulate ? out[i] : chunk.p[0][i];
    for (int j = chunk.accumulate ? 0 : 1; j < chunk.count; ++j) sum += chunk.p[j][i];
    out[i] = sum;
  }
}

void add_n_op(KernelContext& c) {
  if (c.num_inputs() == 1) {
    c.set_output(0, c.input(0));
    return;
  }
  dispatch_arith(c.input(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    Tensor& out = c.output(0);
    const int64_t n = out.num_elements();
    if (n == 0) return;
    T* po = out.device_data<T>();
    for (int first = 0; first < c.num_inputs(); first += kAddNChunk) {
      AddNChunk<T> chunk{};
      chunk.count = std::min(kAddNChunk, c.num_inputs() - first);
      chunk.accumulate = first > 0;
      for (int j = 0; j < chunk.count; ++j) chunk.p[j] = c.input(first + j).device_data<T>();
      add_n_kernel<T><<<blocks_for(n), kThreads, 0, stream()>>>(n, chunk, po);
      HUB_CUDA_CHECK(cudaGetLastError());
    }
  });
}

void identity_op(KernelContext& c) { c.set_output(0, c.input(0)); }

// Every dtype's zero is all zero bytes.
void zeros_like_op(KernelContext& c) {
  Tensor& out = c.output(0);
  if (out.nbytes() > 0) HUB_CUDA_CHECK(cudaMemsetAsync(out.raw_data(), 0, out.nbytes(), stream()));
}

template <class T>
__global__ void fill_kernel(T* p, int64_t n, T value) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)
    p[i] = value;
}

void ones_like_op(KernelContext& c) {
  Tensor& out = c.output(0);
  const int64_t n = out.num_elements();
  if (n == 0) return;
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    fill_kernel<T><<<blocks_for(n), kThreads, 0, stream()>>>(out.device_data<T>(), n, T(1));
    HUB_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace

HUB_REGISTER_KERNEL(Add, cuda, binary_op<AddFn>, supports_broadcast_binary);
HUB_REGISTER_KERNEL(Sub, cuda, binary_op<SubFn>, supports_broadcast_binary);
HUB_REGISTER_KERNEL(Mul, cuda, binary_op<MulFn>, supports_broadcast_binary);
HUB_REGISTER_KERNEL(Div, cuda, binary_op<DivFn>, supports_broadcast_binary);
HUB_REGISTER_KERNEL(Maximum, cuda, binary_op<MaximumFn>, supports_broadcast_binary);
HUB_REGISTER_KERNEL(Minimum, cuda, binary_op<MinimumFn>, supports_broadcast_binary);
HUB_REGISTER_KERNEL(Pow, cuda, pow_op, supports_broadcast_binary);
HUB_REGISTER_KERNEL(PowGrad, cuda, pow_grad_op, supports_grad_of_binary);
HUB_REGISTER_KERNEL(MaximumGrad, cuda, select_grad_op<true>, supports_grad_of_binary);
HUB_REGISTER_KERNEL(MinimumGrad, cuda, select_grad_op<false>, supports_grad_of_binary);
HUB_REGISTER_KERNEL(AddN, cuda, add_n_op);
HUB_REGISTER_KERNEL(Identity, cuda, identity_op);
HUB_REGISTER_KERNEL(StopGradient, cuda, identity_op);
HUB_REGISTER_KERNEL(ZerosLike, cuda, zeros_like_op);
HUB_REGISTER_KERNEL(OnesLike, cuda, ones_like_op);

}  // namespace hub::cuda
