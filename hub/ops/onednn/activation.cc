// oneDNN kernels for the activations and their gradient ops (float32).
//
// Eltwise ops view the tensor as one flat vector (element-wise ops do not care
// about layout), so one primitive per (op, alpha, beta, element count) is
// created and cached; alpha and beta come from the node's attributes.
//
// PRelu maps onto oneDNN's channel-wise prelu: x is viewed as [A, C, B] where
// C covers the dims along which slope varies (which must be adjacent) and
// slope as [1, C, 1]; a scalar slope is C = 1. Other slope patterns fall back
// to the reference kernel.
#include <cmath>
#include <cstdio>
#include <memory>

#include "hub/ops/node.h"
#include "hub/ops/onednn/common.h"
#include "hub/ops/registry.h"

namespace hub::onednn {
namespace {

using algo = dnnl::algorithm;

struct Params {
  float alpha = 0.0f, beta = 0.0f;
};
float attr(const Attrs& a, const char* name) { return static_cast<float>(a.get_float(name)); }

struct Eltwise {
  const char* name;
  algo forward;   // forward algorithm
  algo backward;  // backward algorithm (a *_use_dst_for_bwd variant takes y)
  Params (*params)(const Attrs&);
};

Params no_params(const Attrs&) { return {}; }
Params relu6_params(const Attrs&) { return {0.0f, 6.0f}; }
Params alpha_param(const Attrs& a) { return {attr(a, "alpha"), 0.0f}; }
Params clip_params(const Attrs& a) { return {attr(a, "min"), attr(a, "max")}; }

constexpr Eltwise kRelu{"relu", algo::eltwise_relu, algo::eltwise_relu, no_params};
// clip_v2 passes the gradient on the open interval (0, 6), as TF's Relu6Grad.
constexpr Eltwise kRelu6{"relu6", algo::eltwise_clip_v2, algo::eltwise_clip_v2, relu6_params};
// relu with alpha is leaky relu: x > 0 ? x : alpha x; backward g or alpha g.
constexpr Eltwise kLeakyRelu{"leaky_relu", algo::eltwise_relu, algo::eltwise_relu, alpha_param};
// From dst: y > 0 ? g : g (y + alpha), which oneDNN allows for alpha >= 0 (Elu's check).
constexpr Eltwise kElu{"elu", algo::eltwise_elu, algo::eltwise_elu_use_dst_for_bwd, alpha_param};
constexpr Eltwise kHardSwish{"hardswish", algo::eltwise_hardswish, algo::eltwise_hardswish, no_params};
// Forward only (see the header): y = s > max ? max : s > min ? s : min.
constexpr Eltwise kClip{"clip", algo::eltwise_clip, algo::eltwise_clip, clip_params};
constexpr Eltwise kSigmoid{"sigmoid", algo::eltwise_logistic, algo::eltwise_logistic_use_dst_for_bwd, no_params};
constexpr Eltwise kTanh{"tanh", algo::eltwise_tanh, algo::eltwise_tanh_use_dst_for_bwd, no_params};

// Cache key part naming the op and its exact parameters.
std::string eltwise_key(const char* dir, const Eltwise& e, Params p, const dims& d) {
  char buf[96];
  std::snprintf(buf, sizeof buf, ":%a,%a:", p.alpha, p.beta);
  return std::string("eltwise_") + dir + ":" + e.name + buf + key_of(d);
}

dnnl::eltwise_forward::primitive_desc forward_pd(algo a, Params p, const dims& d) {
  dnnl::eltwise_forward::desc fd(dnnl::prop_kind::forward_training, a, desc(d, tag::a), p.alpha, p.beta);
  return dnnl::eltwise_forward::primitive_desc(fd, engine());
}

template <const Eltwise& kE>
void forward_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& y = c.output(0);
  dims d{x.num_elements()};
  Params p = kE.params(c.attrs());
  auto prim = cached_as<dnnl::eltwise_forward>(eltwise_key("fwd", kE, p, d), [&] {
    return std::make_shared<dnnl::eltwise_forward>(forward_pd(kE.forward, p, d));
  });
  dnnl::memory src = memory(x, d, tag::a), dst = memory(y, d, tag::a);
  execute(*prim, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
}

// Inputs as TF orders them: (gradients, features|outputs) for the Relu family,
// Elu and HardSwish, (y, dy) for Sigmoid/Tanh.
template <const Eltwise& kE, int kDataInput>
void backward_kernel(KernelContext& c) {
  const Tensor& data = c.input(kDataInput);
  const Tensor& diff_dst = c.input(1 - kDataInput);
  Tensor& diff_src = c.output(0);
  dims d{data.num_elements()};
  Params p = kE.params(c.attrs());
  auto prim = cached_as<dnnl::eltwise_backward>(eltwise_key("bwd", kE, p, d), [&] {
    auto hint = forward_pd(kE.backward, p, d);
    dnnl::eltwise_backward::desc bd(kE.backward, desc(d, tag::a), desc(d, tag::a), p.alpha, p.beta);
    return std::make_shared<dnnl::eltwise_backward>(dnnl::eltwise_backward::primitive_desc(bd, engine(), hint));
  });
  bool use_dst = kE.backward != kE.forward;
  dnnl::memory m_data = memory(data, d, tag::a), m_dd = memory(diff_dst, d, tag::a), m_ds = memory(diff_src, d, tag::a);
  execute(*prim,
          {{use_dst ? DNNL_ARG_DST : DNNL_ARG_SRC, m_data}, {DNNL_ARG_DIFF_DST, m_dd}, {DNNL_ARG_DIFF_SRC, m_ds}});
}

// Float32, fully defined, non-empty, all inputs of one shape (the grad ops'
// flat views must line up).
bool supports(const Node&, const std::vector<TensorSpec>& inputs) {
  for (const TensorSpec& s : inputs)
    if (!s.shape.is_fully_defined() || s.shape != inputs[0].shape) return false;
  return float32_nonempty(inputs);
}

// oneDNN's clip gives min for x <= min even when min > max (ours: max).
bool supports_clip(const Node& node, const std::vector<TensorSpec>& inputs) {
  return supports(node, inputs) && node.attrs.get_float("min") <= node.attrs.get_float("max");
}

// ---- PRelu --------------------------------------------------------------------

// The [A, C, B] view of x and [1, C, 1] of slope (see the file comment); false
// when slope varies along non-adjacent dims of x.
bool prelu_view(const Shape& x, const Shape& slope, dims* src, dims* wei) {
  int r = x.rank(), off = r - slope.rank();
  auto slope_dim = [&](int i) { return i < off ? int64_t{1} : slope[i - off]; };
  int first = -1, last = -1;
  for (int i = 0; i < r; ++i)
    if (slope_dim(i) != 1) {
      if (first < 0) first = i;
      last = i;
    }
  int64_t a = 1, ch = 1, b = 1;
  for (int i = 0; i < r; ++i) {
    bool inside = first >= 0 && i >= first && i <= last;
    if (inside && slope_dim(i) != x[i]) return false;  // a broadcast dim between varying ones
    (first < 0 || i < first ? a : inside ? ch : b) *= x[i];
  }
  *src = {a, ch, b};
  *wei = {1, ch, 1};
  return true;
}

// Inputs (x, slope) for PRelu, (g, x, slope) for PReluGrad.
bool supports_prelu(const Node&, const std::vector<TensorSpec>& inputs) {
  const TensorSpec& x = inputs[inputs.size() - 2];
  const TensorSpec& slope = inputs.back();
  for (const TensorSpec& s : inputs)
    if (!s.shape.is_fully_defined()) return false;
  if (inputs.size() == 3 && inputs[0].shape != x.shape) return false;
  dims src, wei;
  return float32_nonempty(inputs) && prelu_view(x.shape, slope.shape, &src, &wei);
}

dnnl::prelu_forward::primitive_desc prelu_forward_pd(const dims& src, const dims& wei) {
  dnnl::prelu_forward::desc fd(dnnl::prop_kind::forward_training, desc(src, tag::abc), desc(wei, tag::abc));
  return dnnl::prelu_forward::primitive_desc(fd, engine());
}

void prelu_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  const Tensor& slope = c.input(1);
  dims src, wei;
  prelu_view(x.shape(), slope.shape(), &src, &wei);
  auto prim = cached_as<dnnl::prelu_forward>("prelu_fwd:" + key_of(src) + ":" + key_of(wei), [&] {
    return std::make_shared<dnnl::prelu_forward>(prelu_forward_pd(src, wei));
  });
  execute(*prim, {{DNNL_ARG_SRC, memory(x, src, tag::abc)},
                  {DNNL_ARG_WEIGHTS, memory(slope, wei, tag::abc)},
                  {DNNL_ARG_DST, memory(c.output(0), src, tag::abc)}});
}

void prelu_grad_kernel(KernelContext& c) {
  const Tensor& g = c.input(0);
  const Tensor& x = c.input(1);
  const Tensor& slope = c.input(2);
  dims src, wei;
  prelu_view(x.shape(), slope.shape(), &src, &wei);
  auto prim = cached_as<dnnl::prelu_backward>("prelu_bwd:" + key_of(src) + ":" + key_of(wei), [&] {
    dnnl::prelu_backward::desc bd(desc(src, tag::abc), desc(wei, tag::abc), desc(src, tag::abc), desc(wei, tag::abc));
    return std::make_shared<dnnl::prelu_backward>(
        dnnl::prelu_backward::primitive_desc(bd, engine(), prelu_forward_pd(src, wei)));
  });
  execute(*prim, {{DNNL_ARG_SRC, memory(x, src, tag::abc)},
                  {DNNL_ARG_WEIGHTS, memory(slope, wei, tag::abc)},
                  {DNNL_ARG_DIFF_DST, memory(g, src, tag::abc)},
                  {DNNL_ARG_DIFF_SRC, memory(c.output(0), src, tag::abc)},
                  {DNNL_ARG_DIFF_WEIGHTS, memory(c.output(1), wei, tag::abc)}});
}

}  // namespace

HUB_REGISTER_KERNEL(Relu, onednn, guarded<forward_kernel<kRelu>>, supports);
HUB_REGISTER_KERNEL(Relu6, onednn, guarded<forward_kernel<kRelu6>>, supports);
HUB_REGISTER_KERNEL(LeakyRelu, onednn, guarded<forward_kernel<kLeakyRelu>>, supports);
HUB_REGISTER_KERNEL(Elu, onednn, guarded<forward_kernel<kElu>>, supports);
HUB_REGISTER_KERNEL(HardSwish, onednn, guarded<forward_kernel<kHardSwish>>, supports);
HUB_REGISTER_KERNEL(ClipByValue, onednn, guarded<forward_kernel<kClip>>, supports_clip);
HUB_REGISTER_KERNEL(Sigmoid, onednn, guarded<forward_kernel<kSigmoid>>, supports);
HUB_REGISTER_KERNEL(Tanh, onednn, guarded<forward_kernel<kTanh>>, supports);
HUB_REGISTER_KERNEL(PRelu, onednn, guarded<prelu_kernel>, supports_prelu);
HUB_REGISTER_KERNEL(ReluGrad, onednn, guarded<backward_kernel<kRelu, 1>>, supports);
HUB_REGISTER_KERNEL(Relu6Grad, onednn, guarded<backward_kernel<kRelu6, 1>>, supports);
HUB_REGISTER_KERNEL(LeakyReluGrad, onednn, guarded<backward_kernel<kLeakyRelu, 1>>, supports);
HUB_REGISTER_KERNEL(EluGrad, onednn, guarded<backward_kernel<kElu, 1>>, supports);
HUB_REGISTER_KERNEL(HardSwishGrad, onednn, guarded<backward_kernel<kHardSwish, 1>>, supports);
HUB_REGISTER_KERNEL(SigmoidGrad, onednn, guarded<backward_kernel<kSigmoid, 0>>, supports);
HUB_REGISTER_KERNEL(TanhGrad, onednn, guarded<backward_kernel<kTanh, 0>>, supports);
HUB_REGISTER_KERNEL(PReluGrad, onednn, guarded<prelu_grad_kernel>, supports_prelu);

}  // namespace hub::onednn
