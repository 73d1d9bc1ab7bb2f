// CUDA kernels of the optimizer update ops (formulas in hub/ops/optimizer.h):
// one pass over the variable, its gradient and slots per step, each element
// updated by one thread with the same float32 arithmetic as the reference
// kernels (hub/ops/cpu/optimizer.cc).
#include <cmath>

#include "hub/ops/cuda/common.h"

namespace hub::cuda {
namespace {

// The step's scalars, by value into the kernel.
struct Scalars {
  float lr, a, b, c;
  bool flag;
};

enum class Rule { kGradientDescent, kMomentum, kRMSProp, kAdam, kAdagrad, kAdadelta, kFtrl };

template <Rule kRule>
__global__ void update_kernel(float* w, const float* g, float* s0, float* s1, int64_t n, Scalars k) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const float gi = g[i];
    if constexpr (kRule == Rule::kGradientDescent) {
      w[i] -= k.lr * gi;
    } else if constexpr (kRule == Rule::kMomentum) {  // a = momentum (k.a)
      const float acc = s0[i] * k.a + gi;
      s0[i] = acc;
      w[i] -= k.flag ? gi * k.lr + acc * (k.a * k.lr) : k.lr * acc;
    } else if constexpr (kRule == Rule::kRMSProp) {  // a = decay, b = momentum, c = epsilon
      const float ms = s0[i] + (gi * gi - s0[i]) * (1.0f - k.a);
      const float mom = s1[i] * k.b + gi * k.lr / sqrtf(ms + k.c);
      s0[i] = ms;
      s1[i] = mom;
      w[i] -= mom;
    } else if constexpr (kRule == Rule::kAdam) {  // a = beta1, b = beta2, c = epsilon
      const float m = s0[i] + (gi - s0[i]) * (1.0f - k.a);
      const float v = s1[i] + (gi * gi - s1[i]) * (1.0f - k.b);
      s0[i] = m;
      s1[i] = v;
      w[i] -= m * k.lr / (sqrtf(v) + k.c);
    } else if constexpr (kRule == Rule::kAdagrad) {
      const float acc = s0[i] + gi * gi;
      s0[i] = acc;
      w[i] -= gi * k.lr * rsqrtf(acc);
    } else if constexpr (kRule == Rule::kAdadelta) {  // a = rho, b = epsilon
      const float acc = s0[i] * k.a + gi * gi * (1.0f - k.a);
      const float u = sqrtf(s1[i] + k.b) * rsqrtf(acc + k.b) * gi;
      s0[i] = acc;
      s1[i] = s1[i] * k.a + u * u * (1.0f - k.a);
      w[i] -= u * k.lr;
    } else {  // kFtrl: a = lr_power, b = l1, c = l2
      const float n_old = s0[i], n_new = n_old + gi * gi;
      const float p_new = k.a == -0.5f ? sqrtf(n_new) : powf(n_new, -k.a);
      const float p_old = k.a == -0.5f ? sqrtf(n_old) : powf(n_old, -k.a);
      const float z = s1[i] + gi - (p_new - p_old) / k.lr * w[i];
      s0[i] = n_new;
      s1[i] = z;
      const float y = p_new / k.lr + 2.0f * k.c;
      const float sign = z > 0.0f ? 1.0f : z < 0.0f ? -1.0f : 0.0f;
      w[i] = fabsf(z) > k.b ? (k.b * sign - z) / y : 0.0f;
    }
  }
}

float attr(const KernelContext& c, const char* name) { return static_cast<float>(c.attrs().get_float(name)); }

template <Rule kRule>
void update(KernelContext& c, Scalars k) {
  Tensor w = c.input(0);
  const int64_t n = w.num_elements();
  float* slot[2] = {nullptr, nullptr};
  for (int i = 2; i < c.num_inputs(); ++i) {
    Tensor s = c.input(i);
    slot[i - 2] = s.device_data<float>();
  }
  float* pw = w.device_data<float>();
  if (n > 0) {
    update_kernel<kRule>
        <<<blocks_for(n), kThreads, 0, stream()>>>(pw, c.input(1).device_data<float>(), slot[0], slot[1], n, k);
    HUB_CUDA_CHECK(cudaGetLastError());
  }
  c.set_output(0, w);
}

void gradient_descent(KernelContext& c) { update<Rule::kGradientDescent>(c, {attr(c, "lr"), 0, 0, 0, false}); }
void momentum(KernelContext& c) {
  update<Rule::kMomentum>(c, {attr(c, "lr"), attr(c, "momentum"), 0, 0, c.attrs().get_bool("use_nesterov")});
}
void rmsprop(KernelContext& c) {
  update<Rule::kRMSProp>(c, {attr(c, "lr"), attr(c, "decay"), attr(c, "momentum"), attr(c, "epsilon"), false});
}
void adam(KernelContext& c) {
  update<Rule::kAdam>(c, {attr(c, "lr"), attr(c, "beta1"), attr(c, "beta2"), attr(c, "epsilon"), false});
}
void adagrad(KernelContext& c) { update<Rule::kAdagrad>(c, {attr(c, "lr"), 0, 0, 0, false}); }
void adadelta(KernelContext& c) {
  update<Rule::kAdadelta>(c, {attr(c, "lr"), attr(c, "rho"), attr(c, "epsilon"), 0, false});
}
void ftrl(KernelContext& c) {
  update<Rule::kFtrl>(c, {attr(c, "lr"), attr(c, "lr_power"), attr(c, "l1"), attr(c, "l2"), false});
}

}  // namespace

HUB_REGISTER_KERNEL(ApplyGradientDescent, cuda, gradient_descent);
HUB_REGISTER_KERNEL(ApplyMomentum, cuda, momentum);
HUB_REGISTER_KERNEL(ApplyRMSProp, cuda, rmsprop);
HUB_REGISTER_KERNEL(ApplyAdam, cuda, adam);
HUB_REGISTER_KERNEL(ApplyAdagrad, cuda, adagrad);
HUB_REGISTER_KERNEL(ApplyAdadelta, cuda, adadelta);
HUB_REGISTER_KERNEL(ApplyFtrl, cuda, ftrl);

}  // namespace hub::cuda
