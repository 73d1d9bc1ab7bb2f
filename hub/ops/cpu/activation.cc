#include <Eigen/Core>

#include "hub/core/parallel.h"
#include "hub/ops/registry.h"

namespace hub::cpu {
namespace {

using Arr = Eigen::ArrayXf;
using CMap = Eigen::Map<const Arr>;
using OMap = Eigen::Map<Arr>;
constexpr int64_t kGrain = 16384;

template <class F> void unary(KernelContext& c, F f) {
  const float* px = c.input(0).data<float>();
  float* po = c.output(0).data<float>();
  parallel_for(c.input(0).num_elements(), kGrain,
               [&](int64_t b, int64_t e) { OMap(po + b, e - b) = f(CMap(px + b, e - b)); });
}
template <class F> void binary(KernelContext& c, F f) {
  const float* pa = c.input(0).data<float>();
  const float* pb = c.input(1).data<float>();
  float* po = c.output(0).data<float>();
  parallel_for(c.input(0).num_elements(), kGrain, [&](int64_t b, int64_t e) {
    OMap(po + b, e - b) = f(CMap(pa + b, e - b), CMap(pb + b, e - b));
  });
}

void relu_kernel(KernelContext& c) { unary(c, [](const auto& x) { return x.max(0.0f); }); }
void relu6_kernel(KernelContext& c) { unary(c, [](const auto& x) { return x.max(0.0f).min(6.0f); }); }
void elu_kernel(KernelContext& c) {
  unary(c, [](const auto& x) { return (x > 0.0f).select(x, x.min(0.0f).exp() - 1.0f); });
}
void sigmoid_kernel(KernelContext& c) {
  // 1/(1+e^-x) overflows e^-x to inf for x < -88, giving the right limit 0.
  unary(c, [](const auto& x) { return ((-x).exp() + 1.0f).inverse(); });
}
void tanh_kernel(KernelContext& c) { unary(c, [](const auto& x) { return x.tanh(); }); }

void relu_grad_kernel(KernelContext& c) {
  binary(c, [](const auto& g, const auto& x) { return (x > 0.0f).select(g, 0.0f); });
}
void relu6_grad_kernel(KernelContext& c) {
  binary(c, [](const auto& g, const auto& x) { return (x > 0.0f && x < 6.0f).select(g, 0.0f); });
}
void elu_grad_kernel(KernelContext& c) {
  binary(c, [](const auto& g, const auto& y) { return (y > 0.0f).select(g, g * (y + 1.0f)); });
}
void sigmoid_grad_kernel(KernelContext& c) {
  binary(c, [](const auto& y, const auto& dy) { return dy * y * (1.0f - y); });
}
void tanh_grad_kernel(KernelContext& c) {
  binary(c, [](const auto& y, const auto& dy) { return dy * (1.0f - y.square()); });
}

}  // namespace

HUB_REGISTER_KERNEL(Relu, reference, relu_kernel);
HUB_REGISTER_KERNEL(Relu6, reference, relu6_kernel);
HUB_REGISTER_KERNEL(Elu, reference, elu_kernel);
HUB_REGISTER_KERNEL(Sigmoid, reference, sigmoid_kernel);
HUB_REGISTER_KERNEL(Tanh, reference, tanh_kernel);
HUB_REGISTER_KERNEL(ReluGrad, reference, relu_grad_kernel);
HUB_REGISTER_KERNEL(Relu6Grad, reference, relu6_grad_kernel);
HUB_REGISTER_KERNEL(EluGrad, reference, elu_grad_kernel);
HUB_REGISTER_KERNEL(SigmoidGrad, reference, sigmoid_grad_kernel);
HUB_REGISTER_KERNEL(TanhGrad, reference, tanh_grad_kernel);

}  // namespace hub::cpu
