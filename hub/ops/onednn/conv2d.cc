// oneDNN kernels for Conv2D and DepthwiseConv2dNative, forward and backward.
//
// Activations stay NHWC (hub's layout; oneDNN's NHWC kernels are its fast
// channels-last path, and a blocked layout would cost a reorder in and out of
// every op: measured no faster in bench/engine_bench.cc, see
// docs/performance.md; HUB_CONV_LAYOUT=blocked forces it for measuring).
// Weights use format_tag::any: the forward and backward-data primitives pick a
// blocked layout and onednn::reordered_weights() keeps the reordered copy
// until the weights change; backward-weights writes its blocked result to a
// pool buffer and reorders it into the HWIO/HWCM output. A grouped Conv2D's
// [KH,KW,C/G,O] filter is exactly oneDNN's `hwigo` layout of dims
// {G, O/G, C/G, KH, KW}; depthwise is the grouped convolution G = C, its HWCM
// filter the `hwigo` layout of {G=C, O=M, I=1, KH, KW}.
//
// SAME padding is asymmetric and EXPLICIT padding arbitrary: padding_l =
// pad_before, padding_r = pad_after (hub/ops/padding.h). oneDNN's dilation is
// TF's minus one. Conv2DTranspose runs the backward-data pass of its
// geometry (hub/ops/onednn/conv2d.h).
// Primitive descriptors and primitives are cached per shape + attributes.
#include "hub/ops/onednn/conv2d.h"

#include <cstdlib>
#include <memory>
#include <string>

#include "hub/core/error.h"
#include "hub/ops/onednn/common.h"

namespace hub::onednn {
namespace {

using ops::ConvGeometry;

enum class Pass { kForward, kBackwardData, kBackwardWeights };

struct ConvDims {
  dims src, weights, dst, strides, dilates, pad_l, pad_r;
  tag weights_tag;
  std::string key;
};

ConvDims conv_dims(const ConvGeometry& g, Pass pass) {
  ConvDims d;
  d.src = {g.n, g.c, g.h, g.w};
  d.dst = {g.n, g.oc, g.oh, g.ow};
  if (g.groups > 1) {
    d.weights = {g.groups, g.og, g.cg, g.kh, g.kw};
    d.weights_tag = tag::hwigo;
  } else {
    d.weights = {g.oc, g.c, g.kh, g.kw};
    d.weights_tag = tag::hwio;
  }
  d.strides = {g.sh, g.sw};
  d.dilates = {g.dh - 1, g.dw - 1};
  d.pad_l = {g.pad_top, g.pad_left};
  d.pad_r = {g.pad_bottom, g.pad_right};
  d.key = "conv:" + std::to_string(static_cast<int>(pass)) + ":" + key_of(d.src) + "|" + key_of(d.weights) + "|" +
          key_of(d.strides) + "|" + key_of(d.dilates) + "|" + key_of(d.pad_l) + "|" + key_of(d.pad_r);
  return d;
}

ConvGeometry geometry(const KernelContext& c, bool depthwise) {
  ConvGeometry g;
  std::string error = ops::conv_geometry(c.input(0).shape(), c.input(1).shape(), c.attrs(), depthwise, &g);
  HUB_CHECK(error.empty(), error);
  return g;
}

dnnl::memory::desc any(const dims& d) { return dnnl::memory::desc(d, dt::f32, tag::any); }

// Whether a pass runs on oneDNN's blocked activation layout (format `any`,
// reordered from and to NHWC around the primitive) instead of NHWC directly.
bool blocked_activations() {
  static const bool blocked = [] {
    const char* env = std::getenv("HUB_CONV_LAYOUT");  // measuring knob, see docs/performance.md
    return env && std::string(env) == "blocked";
  }();
  return blocked;
}

dnnl::memory::desc act(const dims& d, bool blocked) { return blocked ? any(d) : desc(d, tag::nhwc); }

dnnl::convolution_forward::desc forward_desc(const ConvDims& d, dnnl::prop_kind kind, bool blocked) {
  return dnnl::convolution_forward::desc(kind, dnnl::algorithm::convolution_direct, act(d.src, blocked), any(d.weights),
                                         act(d.dst, blocked), d.strides, d.dilates, d.pad_l, d.pad_r);
}

struct Forward {
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;
};
struct BackwardData {
  dnnl::convolution_backward_data::primitive_desc pd;
  dnnl::convolution_backward_data prim;
};
struct BackwardWeights {
  dnnl::convolution_backward_weights::primitive_desc pd;
  dnnl::convolution_backward_weights prim;
};

// `t` (NHWC, or the weights' own layout) as the primitive wants it: the tensor
// itself, or a reordered copy in a pool buffer held by `holder`.
dnnl::memory input_as(KernelContext& c, const Tensor& t, const dims& d, tag layout, const dnnl::memory::desc& want,
                      Tensor& holder) {
  dnnl::memory user = memory(t, d, layout);
  if (user.get_desc() == want) return user;
  holder = c.temp(DType::kUInt8, Shape{static_cast<int64_t>(want.get_size())});
  dnnl::memory m(want, engine(), holder.raw_data());
  reorder(user, m);
  return m;
}

// Output `i` as the primitive wants it; finish() reorders into the tensor when
// the primitive wrote a blocked copy.
struct OutputAs {
  dnnl::memory user, mem;
  Tensor holder;
  OutputAs(KernelContext& c, int i, const dims& d, tag layout, const dnnl::memory::desc& want) {
    user = memory(c.output(i), d, layout);
    mem = user;
    if (user.get_desc() != want) {
      holder = c.temp(DType::kUInt8, Shape{static_cast<int64_t>(want.get_size())});
      mem = dnnl::memory(want, engine(), holder.raw_data());
    }
  }
  void finish() {
    if (holder.defined()) reorder(mem, user);
  }
};

void forward_kernel(KernelContext& c, bool depthwise) {
  const bool blocked = blocked_activations();
  const ConvDims d = conv_dims(geometry(c, depthwise), Pass::kForward);
  auto p = cached_as<Forward>(d.key + (blocked ? "b" : ""), [&] {
    dnnl::convolution_forward::primitive_desc pd(forward_desc(d, dnnl::prop_kind::forward_inference, blocked),
                                                 engine());
    return std::make_shared<Forward>(Forward{pd, dnnl::convolution_forward(pd)});
  });
  Tensor src_holder;
  dnnl::memory src = input_as(c, c.input(0), d.src, tag::nhwc, p->pd.src_desc(), src_holder);
  dnnl::memory weights = reordered_weights(c.input(1), d.weights, d.weights_tag, p->pd.weights_desc());
  OutputAs dst(c, 0, d.dst, tag::nhwc, p->pd.dst_desc());
  execute(p->prim, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst.mem}});
  dst.finish();
}

}  // namespace

void conv2d_backward_data(KernelContext& c, const ConvGeometry& g, const Tensor& w, const Tensor& dy) {
  const bool blocked = blocked_activations();
  const ConvDims d = conv_dims(g, Pass::kBackwardData);
  auto p = cached_as<BackwardData>(d.key + (blocked ? "b" : ""), [&] {
    dnnl::convolution_forward::primitive_desc hint(forward_desc(d, dnnl::prop_kind::forward_training, blocked),
                                                   engine());
    dnnl::convolution_backward_data::desc bd(dnnl::algorithm::convolution_direct, act(d.src, blocked), any(d.weights),
                                             act(d.dst, blocked), d.strides, d.dilates, d.pad_l, d.pad_r);
    dnnl::convolution_backward_data::primitive_desc pd(bd, engine(), hint);
    return std::make_shared<BackwardData>(BackwardData{pd, dnnl::convolution_backward_data(pd)});
  });
  Tensor dy_holder;
  dnnl::memory dy_mem = input_as(c, dy, d.dst, tag::nhwc, p->pd.diff_dst_desc(), dy_holder);
  dnnl::memory weights = reordered_weights(w, d.weights, d.weights_tag, p->pd.weights_desc());
  OutputAs dx(c, 0, d.src, tag::nhwc, p->pd.diff_src_desc());
  execute(p->prim, {{DNNL_ARG_DIFF_DST, dy_mem}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DIFF_SRC, dx.mem}});
  dx.finish();
}

bool backward_data_worthwhile(const std::vector<TensorSpec>& inputs, int filter) {
  return float32_nonempty(inputs) && inputs[filter].shape[2] >= 8;
}

namespace {

void backward_weights_kernel(KernelContext& c, bool depthwise) {
  const bool blocked = blocked_activations();
  const ConvDims d = conv_dims(geometry(c, depthwise), Pass::kBackwardWeights);
  auto p = cached_as<BackwardWeights>(d.key + (blocked ? "b" : ""), [&] {
    dnnl::convolution_forward::primitive_desc hint(forward_desc(d, dnnl::prop_kind::forward_training, blocked),
                                                   engine());
    dnnl::convolution_backward_weights::desc bd(dnnl::algorithm::convolution_direct, act(d.src, blocked),
                                                any(d.weights), act(d.dst, blocked), d.strides, d.dilates, d.pad_l,
                                                d.pad_r);
    dnnl::convolution_backward_weights::primitive_desc pd(bd, engine(), hint);
    return std::make_shared<BackwardWeights>(BackwardWeights{pd, dnnl::convolution_backward_weights(pd)});
  });
  Tensor src_holder, dy_holder;
  dnnl::memory src = input_as(c, c.input(0), d.src, tag::nhwc, p->pd.src_desc(), src_holder);
  dnnl::memory dy = input_as(c, c.input(2), d.dst, tag::nhwc, p->pd.diff_dst_desc(), dy_holder);
  OutputAs dw(c, 0, d.weights, d.weights_tag, p->pd.diff_weights_desc());
  execute(p->prim, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_DIFF_WEIGHTS, dw.mem}});
  dw.finish();
}

// float32 only; empty tensors go to the reference kernels.
bool supports(const Node&, const std::vector<TensorSpec>& inputs) { return float32_nonempty(inputs); }

bool supports_backprop_input(const Node&, const std::vector<TensorSpec>& inputs) {
  return backward_data_worthwhile(inputs, 1);
}

void backprop_input(KernelContext& c, bool depthwise) {
  conv2d_backward_data(c, geometry(c, depthwise), c.input(1), c.input(2));
}

void conv2d(KernelContext& c) { forward_kernel(c, false); }
void conv2d_backprop_input(KernelContext& c) { backprop_input(c, false); }
void conv2d_backprop_filter(KernelContext& c) { backward_weights_kernel(c, false); }
void depthwise(KernelContext& c) { forward_kernel(c, true); }
void depthwise_backprop_input(KernelContext& c) { backprop_input(c, true); }
void depthwise_backprop_filter(KernelContext& c) { backward_weights_kernel(c, true); }

}  // namespace

HUB_REGISTER_KERNEL(Conv2D, onednn, guarded<conv2d>, supports);
HUB_REGISTER_KERNEL(Conv2DBackpropInput, onednn, guarded<conv2d_backprop_input>, supports_backprop_input);
HUB_REGISTER_KERNEL(Conv2DBackpropFilter, onednn, guarded<conv2d_backprop_filter>, supports);
HUB_REGISTER_KERNEL(DepthwiseConv2dNative, onednn, guarded<depthwise>, supports);
HUB_REGISTER_KERNEL(DepthwiseConv2dNativeBackpropInput, onednn, guarded<depthwise_backprop_input>, supports);
HUB_REGISTER_KERNEL(DepthwiseConv2dNativeBackpropFilter, onednn, guarded<depthwise_backprop_filter>, supports);

}  // namespace hub::onednn
