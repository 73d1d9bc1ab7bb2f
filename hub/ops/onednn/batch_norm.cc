// oneDNN batch normalization, forward (training: batch statistics;
// inference: use_global_stats) and backward (training: full; inference:
// use_global_stats, i.e. dx = dy * scale * rstd). x is [N,H,W,C] (oneDNN nhwc)
// or [N,C] (nc); scale/shift/mean/variance are 1-D [C]. oneDNN returns the
// biased variance; the Bessel-corrected output is derived from it here.
#include <algorithm>
#include <cstring>
#include <string>

#include "hub/ops/node.h"
#include "hub/ops/onednn/common.h"
#include "hub/ops/registry.h"

namespace hub::onednn {
namespace {

using flags = dnnl::normalization_flags;

struct Layout {
  dims data;
  tag layout;
  int64_t rows, channels;
};

Layout layout_of(const Tensor& x) {
  const Shape& s = x.shape();
  if (s.rank() == 4) return {{s[0], s[3], s[1], s[2]}, tag::nhwc, s[0] * s[1] * s[2], s[3]};
  return {{s[0], s[1]}, tag::nc, s[0], s[1]};
}

flags flags_of(bool training) {
  flags f = flags::use_scale | flags::use_shift;
  return training ? f : f | flags::use_global_stats;
}

std::string key_of_node(const char* op, const Layout& l, float eps, bool training) {
  return std::string(op) + ":" + key_of(l.data) + std::to_string(static_cast<int>(l.layout)) + "," +
         std::to_string(eps) + "," + (training ? "t" : "i");
}

dnnl::memory vec(const Tensor& t, int64_t c) { return memory(t, {c}, tag::a); }

struct Forward {
  dnnl::batch_normalization_forward::primitive_desc pd;
  dnnl::batch_normalization_forward prim;
};

dnnl::batch_normalization_forward::primitive_desc forward_pd(const Layout& l, float eps, bool training,
                                                             dnnl::prop_kind kind) {
  dnnl::batch_normalization_forward::desc d(kind, desc(l.data, l.layout), eps, flags_of(training));
  return dnnl::batch_normalization_forward::primitive_desc(d, engine());
}

// Inputs: x, scale, offset, mean, variance. Outputs: y, batch_mean, batch_variance, unbiased_variance.
void fused_batch_norm_kernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  Layout l = layout_of(x);
  float eps = static_cast<float>(c.attrs().get_float("epsilon"));
  bool training = c.attrs().get_bool("is_training");
  auto f = cached_as<Forward>(key_of_node("FusedBatchNorm", l, eps, training), [&] {
    auto pd =
        forward_pd(l, eps, training, training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference);
    return std::make_shared<Forward>(Forward{pd, dnnl::batch_normalization_forward(pd)});
  });
  const int64_t C = l.channels;
  Tensor& mean = c.output(1);
  Tensor& var = c.output(2);
  if (!training) {
    std::memcpy(mean.raw_data(), c.input(3).raw_data(), c.input(3).nbytes());
    std::memcpy(var.raw_data(), c.input(4).raw_data(), c.input(4).nbytes());
  }
  execute(f->prim, {{DNNL_ARG_SRC, memory(x, l.data, l.layout)},
                    {DNNL_ARG_DST, memory(c.output(0), l.data, l.layout)},
                    {DNNL_ARG_SCALE, vec(c.input(1), C)},
                    {DNNL_ARG_SHIFT, vec(c.input(2), C)},
                    {DNNL_ARG_MEAN, vec(mean, C)},
                    {DNNL_ARG_VARIANCE, vec(var, C)}});
  const float bessel =
      training ? static_cast<float>(l.rows) / static_cast<float>(std::max<int64_t>(l.rows - 1, 1)) : 1.0f;
  const float* pv = var.data<float>();
  float* pu = c.output(3).data<float>();
  for (int64_t i = 0; i < C; ++i) pu[i] = pv[i] * bessel;
}

struct Backward {
  dnnl::batch_normalization_backward::primitive_desc pd;
  dnnl::batch_normalization_backward prim;
};

// Inputs: dy, x, scale, mean, variance. Outputs: dx, dscale, doffset.
void fused_batch_norm_grad_kernel(KernelContext& c) {
  const Tensor& x = c.input(1);
  Layout l = layout_of(x);
  float eps = static_cast<float>(c.attrs().get_float("epsilon"));
  bool training = c.attrs().get_bool("is_training");
  auto b = cached_as<Backward>(key_of_node("FusedBatchNormGrad", l, eps, training), [&] {
    auto hint = forward_pd(l, eps, training, dnnl::prop_kind::forward_training);
    dnnl::batch_normalization_backward::desc d(dnnl::prop_kind::backward, desc(l.data, l.layout),
                                               desc(l.data, l.layout), eps, flags_of(training));
    auto pd = dnnl::batch_normalization_backward::primitive_desc(d, engine(), hint);
    return std::make_shared<Backward>(Backward{pd, dnnl::batch_normalization_backward(pd)});
  });
  const int64_t C = l.channels;
  // oneDNN 2.6 insists on a shift argument for backward with use_shift,
  // though dx/dscale/dshift do not depend on it.
  Tensor unused_shift = c.temp(DType::kFloat32, Shape{C});
  unused_shift.fill(0.0);
  execute(b->prim, {{DNNL_ARG_DIFF_DST, memory(c.input(0), l.data, l.layout)},
                    {DNNL_ARG_SRC, memory(x, l.data, l.layout)},
                    {DNNL_ARG_SCALE, vec(c.input(2), C)},
                    {DNNL_ARG_SHIFT, vec(unused_shift, C)},
                    {DNNL_ARG_MEAN, vec(c.input(3), C)},
                    {DNNL_ARG_VARIANCE, vec(c.input(4), C)},
                    {DNNL_ARG_DIFF_SRC, memory(c.output(0), l.data, l.layout)},
                    {DNNL_ARG_DIFF_SCALE, vec(c.output(1), C)},
                    {DNNL_ARG_DIFF_SHIFT, vec(c.output(2), C)}});
}

// Float32, x of rank 2 or 4 with no empty dimension.
bool supports(const Node&, const std::vector<TensorSpec>& inputs) { return float32_nonempty(inputs); }

}  // namespace

HUB_REGISTER_KERNEL(FusedBatchNorm, onednn, guarded<fused_batch_norm_kernel>, supports);
HUB_REGISTER_KERNEL(FusedBatchNormGrad, onednn, guarded<fused_batch_norm_grad_kernel>, supports);

}  // namespace hub::onednn
