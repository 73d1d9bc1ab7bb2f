// oneDNN eltwise kernels for the activations and their gradient ops (float32).
// The tensor is viewed as one flat vector (element-wise ops do not care about
// layout), so one primitive per (op, element count) is created and cached.
#include <memory>

#include "hub/ops/node.h"
#include "hub/ops/onednn/common.h"
#include "hub/ops/registry.h"

namespace hub::onednn {
namespace {

using algo = dnnl::algorithm;

struct Eltwise {
  const char* name;
  algo forward;   // forward algorithm
  algo backward;  // backward algorithm (a *_use_dst_for_bwd variant takes y)
  float alpha, beta;
};

constexpr Eltwise kRelu{"relu", algo::eltwise_relu, algo::eltwise_relu, 0.0f, 0.0f};
// clip_v2 passes the gradient on the open interval (0, 6), as TF's Relu6Grad.
constexpr Eltwise kRelu6{"relu6", algo::eltwise_clip_v2, algo::eltwise_clip_v2, 0.0f, 6.0f};
constexpr Eltwise kElu{"elu", algo::eltwise_elu, algo::eltwise_elu_use_dst_for_bwd, 1.0f, 0.0f};
constexpr Eltwise kSigmoid{"sigmoid", algo::eltwise_logistic, algo::eltwise_logistic_use_dst_for_bwd, 0.0f, 0.0f};
constexpr Eltwise kTanh{"tanh", algo::eltwise_tanh, algo::eltwise_tanh_use_dst_for_bwd, 0.0f, 0.0f};

dnnl::eltwise_forward::primitive_desc forward_pd(const Eltwise& e, algo a, const dims& d) {
  dnnl::eltwise_forward::desc fd(dnnl::prop_kind::forward_training, a, desc(d, tag::a), e.alpha, e.beta);
  return dnnl::eltwise_forward::primitive_desc(fd, engine());
}

template <const Eltwise& kE> void forward_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  Tensor& y = c.output(0);
  dims d{x.num_elements()};
  auto prim = cached_as<dnnl::eltwise_forward>(std::string("eltwise_fwd:") + kE.name + ":" + key_of(d), [&] {
    return std::make_shared<dnnl::eltwise_forward>(forward_pd(kE, kE.forward, d));
  });
  dnnl::memory src = memory(x, d, tag::a), dst = memory(y, d, tag::a);
  execute(*prim, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
}

// Inputs as TF orders them: (gradients, features|outputs) for Relu/Relu6/Elu,
// (y, dy) for Sigmoid/Tanh.
template <const Eltwise& kE, int kDataInput> void backward_kernel(KernelContext& c) {
  const Tensor& data = c.input(kDataInput);
  const Tensor& diff_dst = c.input(1 - kDataInput);
  Tensor& diff_src = c.output(0);
  dims d{data.num_elements()};
  auto prim = cached_as<dnnl::eltwise_backward>(std::string("eltwise_bwd:") + kE.name + ":" + key_of(d), [&] {
    auto hint = forward_pd(kE, kE.backward, d);
    dnnl::eltwise_backward::desc bd(kE.backward, desc(d, tag::a), desc(d, tag::a), kE.alpha, kE.beta);
    return std::make_shared<dnnl::eltwise_backward>(dnnl::eltwise_backward::primitive_desc(bd, engine(), hint));
  });
  bool use_dst = kE.backward != kE.forward;
  dnnl::memory m_data = memory(data, d, tag::a), m_dd = memory(diff_dst, d, tag::a),
               m_ds = memory(diff_src, d, tag::a);
  execute(*prim, {{use_dst ? DNNL_ARG_DST : DNNL_ARG_SRC, m_data},
                  {DNNL_ARG_DIFF_DST, m_dd},
                  {DNNL_ARG_DIFF_SRC, m_ds}});
}

bool supports(const Node&, const std::vector<TensorSpec>& inputs) {
  for (const TensorSpec& s : inputs) {
    if (s.dtype != DType::kFloat32 || !s.shape.is_fully_defined()) return false;
    if (s.shape.num_elements() == 0) return false;
  }
  // Same-shaped inputs only (the grad ops); a flat view of both must line up.
  for (const TensorSpec& s : inputs)
    if (s.shape != inputs[0].shape) return false;
  return true;
}

}  // namespace

HUB_REGISTER_KERNEL(Relu, onednn, guarded<forward_kernel<kRelu>>, supports);
HUB_REGISTER_KERNEL(Relu6, onednn, guarded<forward_kernel<kRelu6>>, supports);
HUB_REGISTER_KERNEL(Elu, onednn, guarded<forward_kernel<kElu>>, supports);
HUB_REGISTER_KERNEL(Sigmoid, onednn, guarded<forward_kernel<kSigmoid>>, supports);
HUB_REGISTER_KERNEL(Tanh, onednn, guarded<forward_kernel<kTanh>>, supports);
HUB_REGISTER_KERNEL(ReluGrad, onednn, guarded<backward_kernel<kRelu, 1>>, supports);
HUB_REGISTER_KERNEL(Relu6Grad, onednn, guarded<backward_kernel<kRelu6, 1>>, supports);
HUB_REGISTER_KERNEL(EluGrad, onednn, guarded<backward_kernel<kElu, 1>>, supports);
HUB_REGISTER_KERNEL(SigmoidGrad, onednn, guarded<backward_kernel<kSigmoid, 0>>, supports);
HUB_REGISTER_KERNEL(TanhGrad, onednn, guarded<backward_kernel<kTanh, 0>>, supports);

}  // namespace hub::onednn
