// oneDNN pooling kernels (NHWC viewed as oneDNN's nhwc layout, float32).
// TF's asymmetric SAME padding maps to padding_l / padding_r; AvgPool uses
// pooling_avg_exclude_padding, which divides by the in-bounds count as TF does.
// Max-pool backward needs the forward's workspace (argmax); ops do not carry
// it between nodes, so MaxPoolGrad re-runs the forward with a workspace first.
// Measured on [16,56,56,64], 3x3/2 SAME, 2 busy cores: that makes oneDNN's
// MaxPoolGrad ~2x slower than the reference kernel (96 vs 52 ms), while
// MaxPool, AvgPool and AvgPoolGrad are on par. Carrying the workspace from
// MaxPool (an extra output) would remove the recomputation.
#include <string>

#include "hub/ops/onednn/common.h"
#include "hub/ops/pool.h"
#include "hub/ops/registry.h"

namespace hub::onednn {
namespace {

struct Geometry {
  ops::PoolGeometry g;
  dims src, dst, kernel, strides, pad_l, pad_r;
  std::string key;
};

Geometry geometry_of(const KernelContext& c, const char* op) {
  Geometry r;
  r.g = ops::pool_geometry(c.attrs(), c.input(0).shape(), c.node().name);
  const ops::PoolGeometry& g = r.g;
  r.src = {g.n, g.c, g.h, g.w};
  r.dst = {g.n, g.c, g.oh, g.ow};
  r.kernel = {g.kh, g.kw};
  r.strides = {g.sh, g.sw};
  r.pad_l = {g.pad_top, g.pad_left};
  r.pad_r = {g.pad_bottom, g.pad_right};
  r.key = std::string(op) + ":" + key_of(r.src) + key_of(r.kernel) + key_of(r.strides) + key_of(r.pad_l) +
          key_of(r.pad_r);
  return r;
}

dnnl::algorithm algorithm_of(bool max) {
  return max ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_exclude_padding;
}

dnnl::pooling_forward::desc forward_desc(const Geometry& r, bool max, dnnl::prop_kind kind) {
  return dnnl::pooling_forward::desc(kind, algorithm_of(max), desc(r.src, tag::nhwc), desc(r.dst, tag::nhwc),
                                     r.strides, r.kernel, r.pad_l, r.pad_r);
}

struct Forward {
  dnnl::pooling_forward::primitive_desc pd;
  dnnl::pooling_forward prim;
};

template <bool kMax> void pool_kernel(KernelContext& c) {
  Geometry r = geometry_of(c, kMax ? "MaxPool" : "AvgPool");
  auto f = cached_as<Forward>(r.key, [&] {
    auto pd = dnnl::pooling_forward::primitive_desc(forward_desc(r, kMax, dnnl::prop_kind::forward_inference),
                                                    engine());
    return std::make_shared<Forward>(Forward{pd, dnnl::pooling_forward(pd)});
  });
  dnnl::memory src = memory(c.input(0), r.src, tag::nhwc);
  dnnl::memory dst = memory(c.output(0), r.dst, tag::nhwc);
  execute(f->prim, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
}

struct Backward {
  dnnl::pooling_forward::primitive_desc fwd_pd;  // forward_training (max: with workspace)
  dnnl::pooling_forward fwd;
  dnnl::pooling_backward::primitive_desc pd;
  dnnl::pooling_backward prim;
};

template <bool kMax> void pool_grad_kernel(KernelContext& c) {
  Geometry r = geometry_of(c, kMax ? "MaxPoolGrad" : "AvgPoolGrad");
  auto b = cached_as<Backward>(r.key, [&] {
    auto fwd_pd = dnnl::pooling_forward::primitive_desc(
        forward_desc(r, kMax, dnnl::prop_kind::forward_training), engine());
    auto bwd_desc = dnnl::pooling_backward::desc(algorithm_of(kMax), desc(r.src, tag::nhwc),
                                                 desc(r.dst, tag::nhwc), r.strides, r.kernel, r.pad_l,
                                                 r.pad_r);
    auto pd = dnnl::pooling_backward::primitive_desc(bwd_desc, engine(), fwd_pd);
    return std::make_shared<Backward>(
        Backward{fwd_pd, dnnl::pooling_forward(fwd_pd), pd, dnnl::pooling_backward(pd)});
  });
  const Tensor& grad = c.input(kMax ? 2 : 1);
  dnnl::memory diff_dst = memory(grad, r.dst, tag::nhwc);
  dnnl::memory diff_src = memory(c.output(0), r.src, tag::nhwc);
  if (kMax) {
    // Recompute the forward to get oneDNN's argmax workspace.
    dnnl::memory::desc ws_desc = b->fwd_pd.workspace_desc();
    Tensor ws = c.temp(DType::kUInt8, Shape{static_cast<int64_t>(ws_desc.get_size())});
    Tensor y = c.temp(DType::kFloat32, c.input(2).shape());
    dnnl::memory ws_mem(ws_desc, engine(), ws.raw_data());
    dnnl::memory src = memory(c.input(0), r.src, tag::nhwc);
    dnnl::memory dst = memory(y, r.dst, tag::nhwc);
    b->fwd.execute(stream(), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}, {DNNL_ARG_WORKSPACE, ws_mem}});
    b->prim.execute(stream(),
                    {{DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_DIFF_SRC, diff_src}, {DNNL_ARG_WORKSPACE, ws_mem}});
  } else {
    b->prim.execute(stream(), {{DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_DIFF_SRC, diff_src}});
  }
  stream().wait();
}

// Float32 NHWC with no empty dimension (oneDNN rejects zero-sized pooling).
bool supports(const Node&, const std::vector<TensorSpec>& inputs) { return float32_nonempty(inputs, 4); }

}  // namespace

HUB_REGISTER_KERNEL(MaxPool, onednn, guarded<pool_kernel<true>>, supports);
HUB_REGISTER_KERNEL(AvgPool, onednn, guarded<pool_kernel<false>>, supports);
HUB_REGISTER_KERNEL(MaxPoolGrad, onednn, guarded<pool_grad_kernel<true>>, supports);
HUB_REGISTER_KERNEL(AvgPoolGrad, onednn, guarded<pool_grad_kernel<false>>, supports);

}  // namespace hub::onednn
