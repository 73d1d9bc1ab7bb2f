// oneDNN pooling kernels (NHWC viewed as oneDNN's nhwc layout, float32; the
// forward ones uint8 / int8 too, which oneDNN averages rounding to nearest), through
// pooling_v2 (dilated pooling; oneDNN's dilation is ours minus one).
// Padding maps to padding_l = pad_before and padding_r = the padding the last
// window actually reaches: pad_after, or more with a ceil_mode overhang.
// oneDNN ignores padded positions in a max and, with
// pooling_avg_exclude_padding, divides by the in-bounds count (TF, and
// count_include_pad = false); pooling_avg_include_padding divides by kh*kw,
// which is hub's count_include_pad divisor only when no window reaches past
// pad_after, so a ceil_mode overhang with count_include_pad runs on the
// reference kernel. oneDNN also wants each pad smaller than the (dilated)
// window; larger pads run on the reference kernel.
// Max-pool backward needs the forward's workspace (argmax); ops do not carry
// it between nodes, so MaxPoolGrad re-runs the forward with a workspace first.
// Measured on [16,56,56,64], 3x3/2 SAME, 2 busy cores: that makes oneDNN's
// MaxPoolGrad ~2x slower than the reference kernel (96 vs 52 ms), while
// MaxPool, AvgPool and AvgPoolGrad are on par. Carrying the workspace from
// MaxPool (an extra output) would remove the recomputation.
#include "hub/ops/pool.h"

#include <algorithm>
#include <string>

#include "hub/ops/onednn/common.h"
#include "hub/ops/registry.h"

namespace hub::onednn {
namespace {

// Padding after the input that the last of `out` windows reaches (>= 0).
int64_t reached_after(int64_t in, int64_t out, int64_t k, int64_t s, int64_t d, int64_t before, int64_t after) {
  return std::max(after, (out - 1) * s + (k - 1) * d + 1 - in - before);
}

struct Geometry {
  ops::PoolGeometry g;
  dims src, dst, kernel, strides, dilation, pad_l, pad_r;
  dnnl::algorithm algorithm;
  std::string key;
};

Geometry geometry_of(const ops::PoolGeometry& g, bool max) {
  Geometry r;
  r.g = g;
  r.src = {g.n, g.c, g.h, g.w};
  r.dst = {g.n, g.c, g.oh, g.ow};
  r.kernel = {g.kh, g.kw};
  r.strides = {g.sh, g.sw};
  r.dilation = {g.dh - 1, g.dw - 1};
  r.pad_l = {g.pad_top, g.pad_left};
  r.pad_r = {reached_after(g.h, g.oh, g.kh, g.sh, g.dh, g.pad_top, g.pad_bottom),
             reached_after(g.w, g.ow, g.kw, g.sw, g.dw, g.pad_left, g.pad_right)};
  r.algorithm = max ? dnnl::algorithm::pooling_max
                    : (g.count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                           : dnnl::algorithm::pooling_avg_exclude_padding);
  r.key = std::to_string(static_cast<int>(r.algorithm)) + ":" + key_of(r.src) + key_of(r.kernel) + key_of(r.strides) +
          key_of(r.dilation) + key_of(r.pad_l) + key_of(r.pad_r);
  return r;
}

Geometry geometry_of(const KernelContext& c, bool max) {
  return geometry_of(ops::pool_geometry(c.attrs(), c.input(0).shape(), c.node().name), max);
}

dnnl::pooling_v2_forward::desc forward_desc(const Geometry& r, dnnl::prop_kind kind, dt type = dt::f32) {
  return dnnl::pooling_v2_forward::desc(kind, r.algorithm, desc(r.src, tag::nhwc, type), desc(r.dst, tag::nhwc, type),
                                        r.strides, r.kernel, r.dilation, r.pad_l, r.pad_r);
}

struct Forward {
  dnnl::pooling_v2_forward::primitive_desc pd;
  dnnl::pooling_v2_forward prim;
};

template <bool kMax>
void pool_kernel(KernelContext& c) {
  Geometry r = geometry_of(c, kMax);
  const dt type = data_type(c.input(0).dtype());
  auto f = cached_as<Forward>("pool:" + std::to_string(static_cast<int>(type)) + r.key, [&] {
    auto pd =
        dnnl::pooling_v2_forward::primitive_desc(forward_desc(r, dnnl::prop_kind::forward_inference, type), engine());
    return std::make_shared<Forward>(Forward{pd, dnnl::pooling_v2_forward(pd)});
  });
  dnnl::memory src = memory(c.input(0), r.src, tag::nhwc);
  dnnl::memory dst = memory(c.output(0), r.dst, tag::nhwc);
  execute(f->prim, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
}

struct Backward {
  dnnl::pooling_v2_forward::primitive_desc fwd_pd;  // forward_training (max: with workspace)
  dnnl::pooling_v2_forward fwd;
  dnnl::pooling_v2_backward::primitive_desc pd;
  dnnl::pooling_v2_backward prim;
};

template <bool kMax>
void pool_grad_kernel(KernelContext& c) {
  Geometry r = geometry_of(c, kMax);
  auto b = cached_as<Backward>("pool_grad:" + r.key, [&] {
    auto fwd_pd =
        dnnl::pooling_v2_forward::primitive_desc(forward_desc(r, dnnl::prop_kind::forward_training), engine());
    auto bwd_desc = dnnl::pooling_v2_backward::desc(r.algorithm, desc(r.src, tag::nhwc), desc(r.dst, tag::nhwc),
                                                    r.strides, r.kernel, r.dilation, r.pad_l, r.pad_r);
    auto pd = dnnl::pooling_v2_backward::primitive_desc(bwd_desc, engine(), fwd_pd);
    return std::make_shared<Backward>(
        Backward{fwd_pd, dnnl::pooling_v2_forward(fwd_pd), pd, dnnl::pooling_v2_backward(pd)});
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

// Float32 NHWC (uint8 / int8 too for the forward ops) with no empty
// dimension (oneDNN rejects zero-sized pooling), pads smaller than the
// window, and count_include_pad only without a ceil_mode overhang (see the
// top of this file).
bool supports(const Node& node, const std::vector<TensorSpec>& inputs) {
  std::vector<TensorSpec> as_float = inputs;
  const bool forward = node.op == "MaxPool" || node.op == "AvgPool";
  if (forward && is_8bit(inputs[0].dtype)) as_float[0].dtype = DType::kFloat32;
  if (!float32_nonempty(as_float, 4)) return false;
  const Geometry r = geometry_of(ops::pool_geometry(node.attrs, inputs[0].shape, node.name), false);
  const ops::PoolGeometry& g = r.g;
  const int64_t span_h = (g.kh - 1) * g.dh + 1, span_w = (g.kw - 1) * g.dw + 1;
  if (r.pad_l[0] >= span_h || r.pad_r[0] >= span_h || r.pad_l[1] >= span_w || r.pad_r[1] >= span_w) return false;
  return !g.count_include_pad || (r.pad_r[0] == g.pad_bottom && r.pad_r[1] == g.pad_right);
}

}  // namespace

HUB_REGISTER_KERNEL(MaxPool, onednn, guarded<pool_kernel<true>>, supports);
HUB_REGISTER_KERNEL(AvgPool, onednn, guarded<pool_kernel<false>>, supports);
HUB_REGISTER_KERNEL(MaxPoolGrad, onednn, guarded<pool_grad_kernel<true>>, supports);
HUB_REGISTER_KERNEL(AvgPoolGrad, onednn, guarded<pool_grad_kernel<false>>, supports);

}  // namespace hub::onednn
