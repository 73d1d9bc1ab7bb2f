// CUDA kernels of the activations and their gradient ops (hub/ops/activation.h):
// Relu, Relu6, LeakyRelu, Elu, HardSigmoid, HardSwish, ClipByValue, Sigmoid,
// Tanh, PRelu and ReluGrad ... PReluGrad, all float32. One pass per op; the
// same-shaped ones move float4 vectors (hub/ops/cuda/elementwise.h).
//
// Each computes what the reference kernel (hub/ops/cpu/activation.cc) does,
// with its boundary conventions: ReluGrad passes g where x > 0, Relu6Grad on
// 0 < x < 6, ClipByValueGrad on min <= x <= max, HardSigmoidGrad on
// 0 < alpha*x + beta < 1, HardSwishGrad is 0 at x = -3 and g at x = 3, and
// PRelu takes the slope at x = 0. Clamps are std::max / std::min (Eigen's
// max() / min()), so NaN propagates through Relu, Relu6, ClipByValue and
// HardSwish as it does there. alpha*x + beta is rounded after the multiply
// (no fused multiply-add), as on the CPU, so HardSigmoidGrad's interval ends
// fall where the reference puts them. Elu uses expm1f: alpha * (e^x - 1)
// without the cancellation of e^x - 1 near 0, which is within float rounding
// of the reference; TanhGrad's 1 - y^2 may be one fused multiply-add, more
// accurate than the reference's two roundings where y is near +-1.
//
// PReluGrad's dslope sums g * min(x, 0) over the dims slope is broadcast
// along: one block per slope element reduces its elements in a fixed order
// (deterministic run to run; the order differs from the reference's, so
// float sums agree to rounding).
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "hub/ops/cuda/elementwise.h"

namespace hub::cuda {
namespace {

float attr(const Attrs& attrs, const char* name) { return static_cast<float>(attrs.get_float(name)); }

struct ReluFn {
  __device__ float operator()(float x) const { return std::max(x, 0.0f); }
};
struct Relu6Fn {
  __device__ float operator()(float x) const { return std::min(std::max(x, 0.0f), 6.0f); }
};
struct LeakyReluFn {
  float alpha;
  explicit LeakyReluFn(const Attrs& a) : alpha(attr(a, "alpha")) {}
  __device__ float operator()(float x) const { return x > 0.0f ? x : x * alpha; }
};
struct EluFn {
  float alpha;
  explicit EluFn(const Attrs& a) : alpha(attr(a, "alpha")) {}
  __device__ float operator()(float x) const { return x > 0.0f ? x : alpha * expm1f(x); }
};
struct HardSigmoidFn {
  float alpha, beta;
  explicit HardSigmoidFn(const Attrs& a) : alpha(attr(a, "alpha")), beta(attr(a, "beta")) {}
  __device__ float operator()(float x) const {
    return std::min(std::max(__fadd_rn(__fmul_rn(x, alpha), beta), 0.0f), 1.0f);
  }
};
struct HardSwishFn {
  __device__ float operator()(float x) const { return x * std::min(std::max(x + 3.0f, 0.0f), 6.0f) / 6.0f; }
};
struct ClipFn {
  float lo, hi;
  explicit ClipFn(const Attrs& a) : lo(attr(a, "min")), hi(attr(a, "max")) {}
  __device__ float operator()(float x) const { return std::min(std::max(x, lo), hi); }
};
// e^-x overflows to inf for x < -88, giving the right limit 0.
struct SigmoidFn {
  __device__ float operator()(float x) const { return 1.0f / (1.0f + expf(-x)); }
};
struct TanhFn {
  __device__ float operator()(float x) const { return tanhf(x); }
};

// Gradient functors take (gradients, features) unless noted.
struct ReluGradFn {
  __device__ float operator()(float g, float x) const { return x > 0.0f ? g : 0.0f; }
};
struct Relu6GradFn {
  __device__ float operator()(float g, float x) const { return x > 0.0f && x < 6.0f ? g : 0.0f; }
};
struct LeakyReluGradFn {
  float alpha;
  explicit LeakyReluGradFn(const Attrs& a) : alpha(attr(a, "alpha")) {}
  __device__ float operator()(float g, float x) const { return x > 0.0f ? g : g * alpha; }
};
// (gradients, outputs).
struct EluGradFn {
  float alpha;
  explicit EluGradFn(const Attrs& a) : alpha(attr(a, "alpha")) {}
  __device__ float operator()(float g, float y) const { return y > 0.0f ? g : g * (y + alpha); }
};
struct HardSigmoidGradFn {
  float alpha, beta;
  explicit HardSigmoidGradFn(const Attrs& a) : alpha(attr(a, "alpha")), beta(attr(a, "beta")) {}
  __device__ float operator()(float g, float x) const {
    const float v = __fadd_rn(__fmul_rn(x, alpha), beta);
    return v > 0.0f && v < 1.0f ? g * alpha : 0.0f;
  }
};
struct HardSwishGradFn {
  __device__ float operator()(float g, float x) const {
    return x >= 3.0f ? g : x > -3.0f ? g * (2.0f * x + 3.0f) / 6.0f : 0.0f;
  }
};
struct ClipGradFn {
  float lo, hi;
  explicit ClipGradFn(const Attrs& a) : lo(attr(a, "min")), hi(attr(a, "max")) {}
  __device__ float operator()(float g, float x) const { return x >= lo && x <= hi ? g : 0.0f; }
};
// (y, dy).
struct SigmoidGradFn {
  __device__ float operator()(float y, float dy) const { return dy * y * (1.0f - y); }
};
struct TanhGradFn {
  __device__ float operator()(float y, float dy) const { return dy * (1.0f - y * y); }
};

struct PReluFn {
  __device__ float operator()(float x, float slope) const { return x > 0.0f ? x : x * slope; }
};
// dx of PReluGrad from (gradients, features, slope).
struct PReluGradXFn {
  __device__ float operator()(float g, float x, float slope) const { return x > 0.0f ? g : slope * g; }
};

// The functor of a node: built from its attributes when it has any.
template <class F>
F functor(const Attrs& attrs) {
  if constexpr (std::is_constructible_v<F, const Attrs&>)
    return F(attrs);
  else
    return F{};
}

// y = f(x), or y = f(a, b) of two same-shaped inputs (the grad ops).
template <class F>
void unary_op(KernelContext& c) {
  broadcast_map<float>(functor<F>(c.attrs()), c.output(0), c.input(0));
}
template <class F>
void binary_op(KernelContext& c) {
  broadcast_map<float>(functor<F>(c.attrs()), c.output(0), c.input(0), c.input(1));
}

void prelu_op(KernelContext& c) { broadcast_map<float>(PReluFn{}, c.output(0), c.input(0), c.input(1)); }

// Element offsets of a walk over some dims of a dense tensor: index i
// (row-major over `dims`) is at sum_d i_d * strides[d]; rank 0 is one element.
struct Walk {
  int rank = 0;
  int64_t dims[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};

  __device__ int64_t offset(int64_t i) const {
    int64_t off = 0;
    for (int d = rank - 1; d > 0; --d) {
      const int64_t q = i / dims[d];
      off += (i - q * dims[d]) * strides[d];
      i = q;
    }
    return rank > 0 ? off + i * strides[0] : 0;
  }
};

// dslope[j] = sum over p of g[o] * min(x[o], 0), o = kept.offset(j) +
// reduced.offset(p): one block per slope element j, blockDim.x a multiple of
// 32 up to kThreads.
__global__ void prelu_slope_grad_kernel(const float* g, const float* x, float* dslope, int64_t slopes,
                                        int64_t per_slope, Walk kept, Walk reduced) {
  __shared__ float warp_sums[kThreads / 32];
  const int warps = static_cast<int>(blockDim.x / 32), lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int64_t j = blockIdx.x; j < slopes; j += gridDim.x) {
    const int64_t base = kept.offset(j);
    float sum = 0.0f;
    for (int64_t p = threadIdx.x; p < per_slope; p += blockDim.x) {
      const int64_t o = base + reduced.offset(p);
      sum += g[o] * std::min(x[o], 0.0f);
    }
    for (int s = 16; s > 0; s /= 2) sum += __shfl_down_sync(0xffffffffu, sum, s);
    if (lane == 0) warp_sums[warp] = sum;
    __syncthreads();
    if (warp == 0) {
      sum = lane < warps ? warp_sums[lane] : 0.0f;
      for (int s = 16; s > 0; s /= 2) sum += __shfl_down_sync(0xffffffffu, sum, s);
      if (lane == 0) dslope[j] = sum;
    }
    __syncthreads();  // warp_sums is reused for the next j
  }
}

void prelu_grad_op(KernelContext& c) {
  const Tensor &g = c.input(0), &x = c.input(1), &slope = c.input(2);
  Tensor &dx = c.output(0), &dslope = c.output(1);
  broadcast_map<float>(PReluGradXFn{}, dx, g, x, slope);
  const int64_t slopes = slope.num_elements(), n = x.num_elements();
  if (slopes == 0) return;
  if (n == 0) {  // empty sums
    HUB_CUDA_CHECK(cudaMemsetAsync(dslope.device_data<float>(), 0, dslope.nbytes(), stream()));
    return;
  }
  // x's merged dims split into those slope spans (kept: its elements, in its
  // row-major order) and those it is broadcast along (reduced: summed).
  BroadcastLayout<2> layout;
  HUB_CHECK(plan_broadcast<2>(x.shape(), {&x.shape(), &slope.shape()}, &layout),
            "PReluGrad over " + x.spec_string() + ": supports() should have declined it");
  Walk kept, reduced;
  for (int d = 0; d < layout.rank; ++d) {
    Walk& w = layout.strides[1][d] != 0 ? kept : reduced;
    w.dims[w.rank] = layout.dims[d];
    w.strides[w.rank] = layout.strides[0][d];
    ++w.rank;
  }
  const int64_t per_slope = n / slopes;
  const int threads = static_cast<int>(std::min<int64_t>(kThreads, (per_slope + 31) / 32 * 32));
  const int blocks = static_cast<int>(std::min<int64_t>(slopes, 65535 * 8));
  prelu_slope_grad_kernel<<<blocks, threads, 0, stream()>>>(
      g.device_data<float>(), x.device_data<float>(), dslope.device_data<float>(), slopes, per_slope, kept, reduced);
  HUB_CUDA_CHECK(cudaGetLastError());
}

// PRelu and PReluGrad: slope broadcast to x's shape within kMaxDims merged dims.
bool supports_prelu(const Node&, const std::vector<TensorSpec>& inputs) {
  const Shape& x = inputs[0].shape;
  return broadcast_fits(x, x, inputs[1].shape);
}
bool supports_prelu_grad(const Node&, const std::vector<TensorSpec>& inputs) {
  const Shape& x = inputs[1].shape;
  return broadcast_fits(x, x, inputs[2].shape);
}

}  // namespace

HUB_REGISTER_KERNEL(Relu, cuda, unary_op<ReluFn>);
HUB_REGISTER_KERNEL(Relu6, cuda, unary_op<Relu6Fn>);
HUB_REGISTER_KERNEL(LeakyRelu, cuda, unary_op<LeakyReluFn>);
HUB_REGISTER_KERNEL(Elu, cuda, unary_op<EluFn>);
HUB_REGISTER_KERNEL(HardSigmoid, cuda, unary_op<HardSigmoidFn>);
HUB_REGISTER_KERNEL(HardSwish, cuda, unary_op<HardSwishFn>);
HUB_REGISTER_KERNEL(ClipByValue, cuda, unary_op<ClipFn>);
HUB_REGISTER_KERNEL(Sigmoid, cuda, unary_op<SigmoidFn>);
HUB_REGISTER_KERNEL(Tanh, cuda, unary_op<TanhFn>);
HUB_REGISTER_KERNEL(PRelu, cuda, prelu_op, supports_prelu);
HUB_REGISTER_KERNEL(ReluGrad, cuda, binary_op<ReluGradFn>);
HUB_REGISTER_KERNEL(Relu6Grad, cuda, binary_op<Relu6GradFn>);
HUB_REGISTER_KERNEL(LeakyReluGrad, cuda, binary_op<LeakyReluGradFn>);
HUB_REGISTER_KERNEL(EluGrad, cuda, binary_op<EluGradFn>);
HUB_REGISTER_KERNEL(HardSigmoidGrad, cuda, binary_op<HardSigmoidGradFn>);
HUB_REGISTER_KERNEL(HardSwishGrad, cuda, binary_op<HardSwishGradFn>);
HUB_REGISTER_KERNEL(ClipByValueGrad, cuda, binary_op<ClipGradFn>);
HUB_REGISTER_KERNEL(PReluGrad, cuda, prelu_grad_op, supports_prelu_grad);
HUB_REGISTER_KERNEL(SigmoidGrad, cuda, binary_op<SigmoidGradFn>);
HUB_REGISTER_KERNEL(TanhGrad, cuda, binary_op<TanhGradFn>);

}  // namespace hub::cuda
