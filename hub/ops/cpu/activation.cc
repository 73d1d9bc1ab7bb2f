#include <Eigen/Core>

#include "hub/core/parallel.h"
#include "hub/ops/cpu/broadcast.h"
#include "hub/ops/registry.h"

namespace hub::cpu {
namespace {

using Arr = Eigen::ArrayXf;
using CMap = Eigen::Map<const Arr>;
using OMap = Eigen::Map<Arr>;
constexpr int64_t kGrain = 16384;

template <class F>
void unary(KernelContext& c, F f) {
  const float* px = c.input(0).data<float>();
  float* po = c.output(0).data<float>();
  parallel_for(c.input(0).num_elements(), kGrain,
               [&](int64_t b, int64_t e) { OMap(po + b, e - b) = f(CMap(px + b, e - b)); });
}
template <class F>
void binary(KernelContext& c, F f) {
  const float* pa = c.input(0).data<float>();
  const float* pb = c.input(1).data<float>();
  float* po = c.output(0).data<float>();
  parallel_for(c.input(0).num_elements(), kGrain,
               [&](int64_t b, int64_t e) { OMap(po + b, e - b) = f(CMap(pa + b, e - b), CMap(pb + b, e - b)); });
}
float attr(const KernelContext& c, const char* name) { return static_cast<float>(c.attrs().get_float(name)); }

void relu_kernel(KernelContext& c) {
  unary(c, [](const auto& x) { return x.max(0.0f); });
}
void relu6_kernel(KernelContext& c) {
  unary(c, [](const auto& x) { return x.max(0.0f).min(6.0f); });
}
void leaky_relu_kernel(KernelContext& c) {
  float alpha = attr(c, "alpha");
  unary(c, [alpha](const auto& x) { return (x > 0.0f).select(x, x * alpha); });
}
void elu_kernel(KernelContext& c) {
  float alpha = attr(c, "alpha");
  unary(c, [alpha](const auto& x) { return (x > 0.0f).select(x, alpha * (x.min(0.0f).exp() - 1.0f)); });
}
void hard_sigmoid_kernel(KernelContext& c) {
  float alpha = attr(c, "alpha"), beta = attr(c, "beta");
  unary(c, [=](const auto& x) { return (x * alpha + beta).max(0.0f).min(1.0f); });
}
void hard_swish_kernel(KernelContext& c) {
  unary(c, [](const auto& x) { return x * (x + 3.0f).max(0.0f).min(6.0f) / 6.0f; });
}
void clip_kernel(KernelContext& c) {
  float lo = attr(c, "min"), hi = attr(c, "max");
  unary(c, [=](const auto& x) { return x.max(lo).min(hi); });
}
void sigmoid_kernel(KernelContext& c) {
  // 1/(1+e^-x) overflows e^-x to inf for x < -88, giving the right limit 0.
  unary(c, [](const auto& x) { return ((-x).exp() + 1.0f).inverse(); });
}
void tanh_kernel(KernelContext& c) {
  unary(c, [](const auto& x) { return x.tanh(); });
}

void relu_grad_kernel(KernelContext& c) {
  binary(c, [](const auto& g, const auto& x) { return (x > 0.0f).select(g, 0.0f); });
}
void relu6_grad_kernel(KernelContext& c) {
  binary(c, [](const auto& g, const auto& x) { return (x > 0.0f && x < 6.0f).select(g, 0.0f); });
}
void leaky_relu_grad_kernel(KernelContext& c) {
  float alpha = attr(c, "alpha");
  binary(c, [alpha](const auto& g, const auto& x) { return (x > 0.0f).select(g, g * alpha); });
}
void elu_grad_kernel(KernelContext& c) {
  float alpha = attr(c, "alpha");
  binary(c, [alpha](const auto& g, const auto& y) { return (y > 0.0f).select(g, g * (y + alpha)); });
}
void hard_sigmoid_grad_kernel(KernelContext& c) {
  float alpha = attr(c, "alpha"), beta = attr(c, "beta");
  binary(c, [=](const auto& g, const auto& x) {
    auto v = x * alpha + beta;
    return (v > 0.0f && v < 1.0f).select(g * alpha, 0.0f);
  });
}
void hard_swish_grad_kernel(KernelContext& c) {
  binary(c, [](const auto& g, const auto& x) {
    return (x >= 3.0f).select(g, (x > -3.0f).select(g * (2.0f * x + 3.0f) / 6.0f, 0.0f));
  });
}
void clip_grad_kernel(KernelContext& c) {
  float lo = attr(c, "min"), hi = attr(c, "max");
  binary(c, [=](const auto& g, const auto& x) { return (x >= lo && x <= hi).select(g, 0.0f); });
}
void sigmoid_grad_kernel(KernelContext& c) {
  binary(c, [](const auto& y, const auto& dy) { return dy * y * (1.0f - y); });
}
void tanh_grad_kernel(KernelContext& c) {
  binary(c, [](const auto& y, const auto& dy) { return dy * (1.0f - y.square()); });
}

void prelu_kernel(KernelContext& c) {
  broadcast_apply<float, float>(c.input(0), c.input(1), c.output(0),
                                [](const auto& x, const auto& s) { return (x > 0.0f).select(x, x * s); });
}

// dx = g * (x > 0 ? 1 : slope); dslope = g * min(x, 0) summed to slope's shape.
void prelu_grad_kernel(KernelContext& c) {
  const Tensor& g = c.input(0);
  const Tensor& x = c.input(1);
  const Tensor& slope = c.input(2);
  Tensor& dx = c.output(0);
  broadcast_apply<float, float>(
      x, slope, dx, [](const auto& xv, const auto& s) { return (xv > 0.0f).select(Arr::Ones(xv.size()), s); });
  Tensor dslope_full = c.temp(DType::kFloat32, x.shape());
  int64_t n = x.num_elements();
  parallel_for(n, kGrain, [&](int64_t b, int64_t e) {
    CMap gv(g.data<float>() + b, e - b), xv(x.data<float>() + b, e - b);
    OMap(dx.data<float>() + b, e - b) *= gv;
    OMap(dslope_full.data<float>() + b, e - b) = gv * xv.min(0.0f);
  });
  sum_to_shape<float>(dslope_full, c.output(1));
}

}  // namespace

HUB_REGISTER_KERNEL(Relu, reference, relu_kernel);
HUB_REGISTER_KERNEL(Relu6, reference, relu6_kernel);
HUB_REGISTER_KERNEL(LeakyRelu, reference, leaky_relu_kernel);
HUB_REGISTER_KERNEL(Elu, reference, elu_kernel);
HUB_REGISTER_KERNEL(HardSigmoid, reference, hard_sigmoid_kernel);
HUB_REGISTER_KERNEL(HardSwish, reference, hard_swish_kernel);
HUB_REGISTER_KERNEL(ClipByValue, reference, clip_kernel);
HUB_REGISTER_KERNEL(PRelu, reference, prelu_kernel);
HUB_REGISTER_KERNEL(Sigmoid, reference, sigmoid_kernel);
HUB_REGISTER_KERNEL(Tanh, reference, tanh_kernel);
HUB_REGISTER_KERNEL(ReluGrad, reference, relu_grad_kernel);
HUB_REGISTER_KERNEL(Relu6Grad, reference, relu6_grad_kernel);
HUB_REGISTER_KERNEL(LeakyReluGrad, reference, leaky_relu_grad_kernel);
HUB_REGISTER_KERNEL(EluGrad, reference, elu_grad_kernel);
HUB_REGISTER_KERNEL(HardSigmoidGrad, reference, hard_sigmoid_grad_kernel);
HUB_REGISTER_KERNEL(HardSwishGrad, reference, hard_swish_grad_kernel);
HUB_REGISTER_KERNEL(ClipByValueGrad, reference, clip_grad_kernel);
HUB_REGISTER_KERNEL(PReluGrad, reference, prelu_grad_kernel);
HUB_REGISTER_KERNEL(SigmoidGrad, reference, sigmoid_grad_kernel);
HUB_REGISTER_KERNEL(TanhGrad, reference, tanh_grad_kernel);

}  // namespace hub::cpu
