// oneDNN kernels of the fused inference ops (hub/ops/fused.h): one
// convolution (or matmul) primitive with bias and a post-op chain
//   Add -> sum (the side input is the destination's prior contents: copied
//          into y first, unless the session placed y in the side's buffer),
//   Relu / LeakyRelu -> eltwise_relu(alpha), Relu6 -> clip_v2(0, 6),
//   Clip -> clip_v2(min, max), Elu -> elu(alpha), Sigmoid -> logistic,
//   Tanh -> tanh, HardSwish -> hardswish,
// and _Relayout as a reorder. Activations are NHWC or nChw8c / nChw16c as the
// node's src_block / dst_block say; weights use format `any` and are
// reordered once per (weights storage, generation) (onednn::WeightsMemo).
//
// Everything a call needs beyond the tensors' addresses lives in the node's
// kernel state (KernelContext::state()): the primitive, its memory objects
// and the reordered weights, so a steady-state call only points the memory
// objects at this call's buffers and executes. Primitive descriptors are
// also shared across sessions through the primitive cache (common.h).
//
// The quantized form (hub/ops/fused.h) is the same primitive on u8/s8 source
// and s8 weights (int32 accumulation): output scales src_scale *
// filter_scales (per output channel when there are several; part of the
// primitive, since oneDNN 2.6's int8 kernels take no run-time scales, so
// their exact bytes are part of the cache key), the bias divided by those
// scales (oneDNN v2 adds the bias before scaling), the float post-ops, then
// eltwise_linear(1 / dst_scale) and the destination zero point into u8/s8,
// or f32 when the output is float.
//
// Without VNNI (onednn::int8_exact() false) oneDNN's int8 kernels add pairs
// of u8 x s8 products into int16 with saturation (vpmaddubsw), so a dense
// quantized convolution on NHWC runs on split weights instead: each s8
// weight w as floor(w / 2) and w - floor(w / 2), both in [-64, 64], stacked
// along the input channels, and the input twice ([x; x], copied into a
// buffer kept with the node). The sums are the same, no pair exceeds
// 2 * 255 * 64 = 32640, and every post-op stays as it was; the input
// channels and so the multiply-adds double. An s8 input becomes u8 in that
// copy (+128, the zero point moving with it), since oneDNN's own remedy for
// s8 inputs without VNNI, halving the weights, rounds odd ones. Depthwise
// convolutions add no pairs and run as they are; quantized matmuls and
// grouped convolutions run on the reference kernels there.
//
// `supports` builds the primitive for the node's shapes and declines when
// oneDNN has no implementation for that post-op chain or layout, or only its
// slow reference one ("ref:"): those nodes run on the reference kernel.
#include "hub/ops/fused.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "hub/core/error.h"
#include "hub/core/parallel.h"
#include "hub/ops/conv2d.h"
#include "hub/ops/onednn/common.h"
#include "hub/ops/registry.h"

namespace hub::onednn {
namespace {

using algo = dnnl::algorithm;

dnnl::post_ops make_post_ops(const std::vector<ops::PostOp>& post_ops) {
  dnnl::post_ops po;
  for (const ops::PostOp& p : post_ops) {
    if (p.op == "Add")
      po.append_sum(1.0f);
    else if (p.op == "Relu")
      po.append_eltwise(1.0f, algo::eltwise_relu, 0.0f, 0.0f);
    else if (p.op == "LeakyRelu")
      po.append_eltwise(1.0f, algo::eltwise_relu, p.alpha, 0.0f);
    else if (p.op == "Relu6")
      po.append_eltwise(1.0f, algo::eltwise_clip_v2, 0.0f, 6.0f);
    else if (p.op == "Clip")
      po.append_eltwise(1.0f, algo::eltwise_clip_v2, p.alpha, p.beta);
    else if (p.op == "Elu")
      po.append_eltwise(1.0f, algo::eltwise_elu, p.alpha, 0.0f);
    else if (p.op == "Sigmoid")
      po.append_eltwise(1.0f, algo::eltwise_logistic, 0.0f, 0.0f);
    else if (p.op == "Tanh")
      po.append_eltwise(1.0f, algo::eltwise_tanh, 0.0f, 0.0f);
    else if (p.op == "HardSwish")
      po.append_eltwise(1.0f, algo::eltwise_hardswish, 0.0f, 0.0f);
    else
      HUB_UNREACHABLE("post-op " + p.op);
  }
  return po;
}

// src_scale * filter_scales: the quantized form's output scales.
std::vector<float> output_scales(const ops::FusedQuantization& q) {
  std::vector<float> s;
  for (float f : q.filter_scales) s.push_back(q.src_scale * f);
  return s;
}

// The attributes of a fused primitive: post-ops and, for the quantized
// form, output scales, zero points (the source's moved by `src_shift`) and
// the requantization to the destination.
dnnl::primitive_attr make_attr(const Attrs& a, int src_shift = 0) {
  dnnl::primitive_attr attr;
  dnnl::post_ops po = make_post_ops(ops::post_ops_of(a));
  const ops::FusedQuantization q = ops::quantization_of(a);
  if (q.quantized()) {
    attr.set_output_scales(q.filter_scales.size() > 1 ? 1 << 1 : 0, output_scales(q));
    if (q.src_zero_point + src_shift != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {q.src_zero_point + src_shift});
  }
  if (q.quantized_output()) {
    po.append_eltwise(1.0f, algo::eltwise_linear, 1.0f / q.dst_scale, 0.0f);
    if (q.dst_zero_point != 0) attr.set_zero_points(DNNL_ARG_DST, 0, {q.dst_zero_point});
  }
  attr.set_post_ops(po);
  return attr;
}

std::string attr_key(const Attrs& a) {
  std::string k;
  for (const ops::PostOp& p : ops::post_ops_of(a))
    k += p.op + "(" + std::to_string(p.alpha) + "," + std::to_string(p.beta) + ")";
  const ops::FusedQuantization q = ops::quantization_of(a);
  if (q.quantized()) {
    const std::vector<float> scales = output_scales(q);
    k += "|q" + std::to_string(q.src_zero_point) + "," + std::to_string(q.dst_scale) + "," +
         std::to_string(q.dst_zero_point) + ":" +
         std::string(reinterpret_cast<const char*>(scales.data()), scales.size() * sizeof(float));
  }
  return k;
}

// The quantized form's bias in accumulator units (the bias divided by the
// output scales), recomputed on every call into a buffer kept with the node.
struct ScaledBias {
  std::vector<float> scales, bias;

  void init(const ops::FusedQuantization& q, int64_t channels) {
    const std::vector<float> s = output_scales(q);
    for (int64_t c = 0; c < channels; ++c) scales.push_back(s[s.size() > 1 ? c : 0]);
    bias.resize(scales.size());
  }
  void* of(const Tensor& b) {
    const float* v = b.data<float>();
    for (size_t c = 0; c < bias.size(); ++c) bias[c] = v[c] / scales[c];
    return bias.data();
  }
};

// The input dtypes and non-empty, fully known shapes a fused primitive takes:
// float32 throughout, or the quantized form's dtypes (its shape function
// checked those).
bool supported_specs(const Node& node, const std::vector<TensorSpec>& in) {
  for (const TensorSpec& s : in) {
    if (!s.shape.is_fully_defined()) return false;
    for (int64_t d : s.shape.dims())
      if (d <= 0) return false;
  }
  return ops::quantization_of(node.attrs).quantized() || float32_nonempty(in);
}

bool is_reference_impl(const char* impl) { return std::string(impl).rfind("ref", 0) == 0; }

// ---- _FusedConv2D -------------------------------------------------------------

struct ConvSetup {
  dims src, weights, bias, dst, strides, dilates, pad_l, pad_r;
  tag weights_tag, src_tag, dst_tag;
  dt src_type, weights_type, dst_type;
  // > 0: the input's channels, doubled in `src` and `weights` for a
  // quantized convolution on split weights (int8_exact() false).
  int64_t split_channels = 0;
  // 128 when that convolution's s8 input is doubled into u8 (src_type).
  int src_shift = 0;
  // The primitive equals exact int32 sums (always, unless a quantized
  // convolution has to add pairs of products without VNNI).
  bool exact = true;
  std::string key;
};

// Everything about the convolution that the node's specs determine.
ConvSetup conv_setup(const Node& node, const std::vector<TensorSpec>& in) {
  const Attrs& a = node.attrs;
  const bool depthwise = a.get_bool("depthwise");
  const int64_t src_block = a.get_int("src_block"), dst_block = a.get_int("dst_block");
  const Shape& wshape = in[1].shape;
  Shape x = in[0].shape;
  if (src_block > 0) x = Shape{x[0], x[2], x[3], wshape[2]};
  ops::ConvGeometry g;
  std::string error = ops::conv_geometry(x, wshape, a, depthwise, &g);
  HUB_CHECK(error.empty(), error);
  ConvSetup s;
  s.src = {g.n, g.c, g.h, g.w};
  s.dst = {g.n, g.oc, g.oh, g.ow};
  s.bias = {g.oc};
  if (depthwise) {
    s.weights = {g.c, g.m, 1, g.kh, g.kw};
    s.weights_tag = tag::hwigo;
  } else if (wshape[2] != g.c) {  // grouped: [KH,KW,C/G,O] is hwigo of {G, O/G, C/G, KH, KW}
    const int64_t groups = g.c / wshape[2];
    s.weights = {groups, g.oc / groups, wshape[2], g.kh, g.kw};
    s.weights_tag = tag::hwigo;
  } else {
    s.weights = {g.oc, g.c, g.kh, g.kw};
    s.weights_tag = tag::hwio;
  }
  s.strides = {g.sh, g.sw};
  s.dilates = {g.dh - 1, g.dw - 1};
  s.pad_l = {g.pad_top, g.pad_left};
  s.pad_r = {g.pad_bottom, g.pad_right};
  s.src_tag = activation_tag(src_block);
  s.dst_tag = activation_tag(dst_block);
  const ops::FusedQuantization q = ops::quantization_of(a);
  s.src_type = data_type(in[0].dtype);
  if (q.quantized() && !int8_exact() && !depthwise) {
    s.exact = wshape[2] == g.c && src_block == 0;  // dense on NHWC: split weights
    if (s.exact) {
      s.split_channels = g.c;
      s.src[1] *= 2;
      s.weights[1] *= 2;
      if (s.src_type == dt::s8) {
        s.src_type = dt::u8;
        s.src_shift = 128;
      }
    }
  }
  s.weights_type = data_type(in[1].dtype);
  s.dst_type = data_type(q.quantized_output() ? q.dst_type : DType::kFloat32);
  s.key = "fconv:" + std::to_string(static_cast<int>(s.src_type)) + std::to_string(static_cast<int>(s.dst_type)) + "|" +
          key_of(s.src) + "|" + key_of(s.weights) + std::to_string(static_cast<int>(s.weights_tag)) + "|" +
          key_of(s.strides) + "|" + key_of(s.dilates) + "|" + key_of(s.pad_l) + "|" + key_of(s.pad_r) + "|" +
          std::to_string(src_block) + "," + std::to_string(dst_block) + "," + std::to_string(s.src_shift) + "|" +
          attr_key(a);
  return s;
}

struct ConvPrimitive {
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;
};

// s8 weights [KH, KW, C, O] as two halves stacked along the input channels,
// [KH, KW, 2C, O]: floor(w / 2) in [-64, 63], then w - floor(w / 2) in
// [-64, 64]. Made once per weights (WeightsMemo).
Tensor split_weights(const Tensor& w) {
  const Shape& s = w.shape();
  const int64_t block = s[2] * s[3];
  Tensor out(DType::kInt8, Shape{s[0], s[1], 2 * s[2], s[3]});
  const int8_t* from = w.data<int8_t>();
  int8_t* to = out.data<int8_t>();
  for (int64_t tap = 0; tap < s[0] * s[1]; ++tap, from += block, to += 2 * block)
    for (int64_t i = 0; i < block; ++i) {
      to[i] = static_cast<int8_t>(from[i] >> 1);
      to[block + i] = static_cast<int8_t>(from[i] - to[i]);
    }
  return out;
}

// The input of a convolution on split weights twice along its channels
// ([x; x], NHWC) in a buffer kept with the node; an s8 input becomes u8
// (src_shift: +128 is its sign bit flipped).
struct DoubledInput {
  Tensor buffer;
  int64_t pixels = 0, channels = 0;
  uint8_t flip = 0;

  void init(const ConvSetup& s) {
    pixels = s.src[0] * s.src[2] * s.src[3];
    channels = s.split_channels;
    flip = s.src_shift != 0 ? 0x80 : 0;
    buffer = Tensor(DType::kUInt8, Shape{pixels, 2 * channels});
  }
  void* of(const Tensor& x) {
    const auto* from = static_cast<const uint8_t*>(x.raw_data());
    auto* to = static_cast<uint8_t*>(buffer.raw_data());
    const int64_t c = channels;
    const uint8_t bit = flip;
    parallel_for(pixels, std::max<int64_t>(1, 16384 / c), [=](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p)
        for (int64_t i = 0; i < c; ++i) to[2 * c * p + i] = to[2 * c * p + c + i] = from[c * p + i] ^ bit;
    });
    return to;
  }
};

std::shared_ptr<ConvPrimitive> conv_primitive(const Node& node, const ConvSetup& s) {
  return cached_as<ConvPrimitive>(s.key, [&] {
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, algo::convolution_direct,
                                      desc(s.src, s.src_tag, s.src_type),
                                      dnnl::memory::desc(s.weights, s.weights_type, tag::any), desc(s.bias, tag::a),
                                      desc(s.dst, s.dst_tag, s.dst_type), s.strides, s.dilates, s.pad_l, s.pad_r);
    dnnl::convolution_forward::primitive_desc pd(d, make_attr(node.attrs, s.src_shift), engine());
    return std::make_shared<ConvPrimitive>(ConvPrimitive{pd, dnnl::convolution_forward(pd)});
  });
}

// What a node keeps between calls (KernelContext::state()).
struct ConvState {
  ConvSetup setup;
  std::shared_ptr<ConvPrimitive> p;
  WeightsMemo weights;
  ops::FusedQuantization q;
  ScaledBias scaled_bias;
  DoubledInput doubled;  // with split weights
  dnnl::memory src, bias, dst;
  std::unordered_map<int, dnnl::memory> args;
};

void fused_conv2d(KernelContext& c) {
  auto& slot = c.state();
  if (!slot) {
    auto st = std::make_shared<ConvState>();
    std::vector<TensorSpec> in;
    for (int i = 0; i < c.num_inputs(); ++i) in.push_back({c.input(i).dtype(), c.input(i).shape()});
    st->setup = conv_setup(c.node(), in);
    st->p = conv_primitive(c.node(), st->setup);
    const ConvSetup& s = st->setup;
    st->src = dnnl::memory(desc(s.src, s.src_tag, s.src_type), engine(), DNNL_MEMORY_NONE);
    st->bias = dnnl::memory(desc(s.bias, tag::a), engine(), DNNL_MEMORY_NONE);
    st->dst = dnnl::memory(desc(s.dst, s.dst_tag, s.dst_type), engine(), DNNL_MEMORY_NONE);
    st->args = {{DNNL_ARG_SRC, st->src}, {DNNL_ARG_BIAS, st->bias}, {DNNL_ARG_DST, st->dst}};
    st->q = ops::quantization_of(c.attrs());
    if (st->q.quantized()) st->scaled_bias.init(st->q, s.dst[1]);
    if (s.split_channels > 0) st->doubled.init(s);
    slot = st;
  }
  auto& st = *static_cast<ConvState*>(slot.get());
  const ConvSetup& s = st.setup;
  Tensor& y = c.output(0);
  if (c.num_inputs() > 3) {  // sum post-op: y starts as the side input
    const Tensor& side = c.input(3);
    if (side.raw_data() != static_cast<const Tensor&>(y).raw_data())
      std::memcpy(y.raw_data(), side.raw_data(), side.nbytes());
  }
  st.src.set_data_handle(s.split_channels > 0 ? st.doubled.of(c.input(0)) : const_cast<void*>(c.input(0).raw_data()));
  st.bias.set_data_handle(st.q.quantized() ? st.scaled_bias.of(c.input(2)) : const_cast<void*>(c.input(2).raw_data()));
  st.dst.set_data_handle(y.raw_data());
  st.args[DNNL_ARG_WEIGHTS] =
      st.weights.get(c.input(1), s.weights, s.weights_tag, st.p->pd.weights_desc(),
                     s.split_channels > 0 ? split_weights : std::function<Tensor(const Tensor&)>{});
  execute(st.p->prim, st.args);
}

bool supports_fused_conv2d(const Node& node, const std::vector<TensorSpec>& in) {
  if (!supported_specs(node, in)) return false;
  try {
    const ConvSetup s = conv_setup(node, in);
    return s.exact && !is_reference_impl(conv_primitive(node, s)->pd.impl_info_str());
  } catch (const dnnl::error&) {
    return false;
  }
}

// ---- _FusedMatMul ---------------------------------------------------------------

struct MatMulSetup {
  dims a, b, bias, y;
  tag a_tag, b_tag;
  dt a_type, b_type, y_type;
  std::string key;
};

MatMulSetup matmul_setup(const Node& node, const std::vector<TensorSpec>& in) {
  const bool ta = node.attrs.get_bool("transpose_a"), tb = node.attrs.get_bool("transpose_b");
  const Shape& a = in[0].shape;
  const Shape& b = in[1].shape;
  int64_t m = ta ? a[1] : a[0], k = ta ? a[0] : a[1], n = tb ? b[0] : b[1];
  MatMulSetup s;
  s.a = {m, k};
  s.b = {k, n};
  s.bias = {1, n};
  s.y = {m, n};
  s.a_tag = ta ? tag::ba : tag::ab;
  s.b_tag = tb ? tag::ba : tag::ab;
  const ops::FusedQuantization q = ops::quantization_of(node.attrs);
  s.a_type = data_type(in[0].dtype);
  s.b_type = data_type(in[1].dtype);
  s.y_type = data_type(q.quantized_output() ? q.dst_type : DType::kFloat32);
  s.key = "fmatmul:" + std::to_string(static_cast<int>(s.a_type)) + std::to_string(static_cast<int>(s.y_type)) +
          key_of({m, k, n}) + (ta ? "T" : "N") + (tb ? "T" : "N") + "|" + attr_key(node.attrs);
  return s;
}

struct MatMulPrimitive {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
};

std::shared_ptr<MatMulPrimitive> matmul_primitive(const Node& node, const MatMulSetup& s) {
  return cached_as<MatMulPrimitive>(s.key, [&] {
    dnnl::matmul::desc d(desc(s.a, s.a_tag, s.a_type), dnnl::memory::desc(s.b, s.b_type, tag::any),
                         desc(s.bias, tag::ab), desc(s.y, tag::ab, s.y_type));
    dnnl::matmul::primitive_desc pd(d, make_attr(node.attrs), engine());
    return std::make_shared<MatMulPrimitive>(MatMulPrimitive{pd, dnnl::matmul(pd)});
  });
}

struct MatMulState {
  MatMulSetup setup;
  std::shared_ptr<MatMulPrimitive> p;
  WeightsMemo weights;
  ops::FusedQuantization q;
  ScaledBias scaled_bias;
  dnnl::memory a, bias, y;
  std::unordered_map<int, dnnl::memory> args;
};

void fused_matmul(KernelContext& c) {
  auto& slot = c.state();
  if (!slot) {
    auto st = std::make_shared<MatMulState>();
    std::vector<TensorSpec> in;
    for (int i = 0; i < c.num_inputs(); ++i) in.push_back({c.input(i).dtype(), c.input(i).shape()});
    st->setup = matmul_setup(c.node(), in);
    st->p = matmul_primitive(c.node(), st->setup);
    const MatMulSetup& s = st->setup;
    st->a = dnnl::memory(desc(s.a, s.a_tag, s.a_type), engine(), DNNL_MEMORY_NONE);
    st->bias = dnnl::memory(desc(s.bias, tag::ab), engine(), DNNL_MEMORY_NONE);
    st->y = dnnl::memory(desc(s.y, tag::ab, s.y_type), engine(), DNNL_MEMORY_NONE);
    st->args = {{DNNL_ARG_SRC, st->a}, {DNNL_ARG_BIAS, st->bias}, {DNNL_ARG_DST, st->y}};
    st->q = ops::quantization_of(c.attrs());
    if (st->q.quantized()) st->scaled_bias.init(st->q, s.y[1]);
    slot = st;
  }
  auto& st = *static_cast<MatMulState*>(slot.get());
  Tensor& y = c.output(0);
  if (c.num_inputs() > 3) {
    const Tensor& side = c.input(3);
    if (side.raw_data() != static_cast<const Tensor&>(y).raw_data())
      std::memcpy(y.raw_data(), side.raw_data(), side.nbytes());
  }
  st.a.set_data_handle(const_cast<void*>(c.input(0).raw_data()));
  st.bias.set_data_handle(st.q.quantized() ? st.scaled_bias.of(c.input(2)) : const_cast<void*>(c.input(2).raw_data()));
  st.y.set_data_handle(y.raw_data());
  st.args[DNNL_ARG_WEIGHTS] = st.weights.get(c.input(1), st.setup.b, st.setup.b_tag, st.p->pd.weights_desc());
  execute(st.p->prim, st.args);
}

bool supports_fused_matmul(const Node& node, const std::vector<TensorSpec>& in) {
  if (!supported_specs(node, in) || (ops::quantization_of(node.attrs).quantized() && !int8_exact())) return false;
  try {
    return !is_reference_impl(matmul_primitive(node, matmul_setup(node, in))->pd.impl_info_str());
  } catch (const dnnl::error&) {
    return false;
  }
}

// ---- _Relayout ------------------------------------------------------------------

struct RelayoutState {
  dnnl::reorder prim;
  dnnl::memory src, dst;
};

void relayout(KernelContext& c) {
  auto& slot = c.state();
  if (!slot) {
    const int64_t from = c.attrs().get_int("from_block"), to = c.attrs().get_int("to_block");
    const int64_t ch = c.attrs().get_int("channels");
    const Shape& y = c.output_spec(0).shape;
    dims d = from == 0 ? dims{y[0], ch, y[2], y[3]} : dims{y[0], ch, y[1], y[2]};
    auto st = std::make_shared<RelayoutState>();
    st->src = dnnl::memory(desc(d, activation_tag(from)), engine(), DNNL_MEMORY_NONE);
    st->dst = dnnl::memory(desc(d, activation_tag(to)), engine(), DNNL_MEMORY_NONE);
    st->prim = *cached_as<dnnl::reorder>("relayout:" + key_of(d) + std::to_string(from) + "," + std::to_string(to),
                                         [&] { return std::make_shared<dnnl::reorder>(st->src, st->dst); });
    slot = st;
  }
  auto& st = *static_cast<RelayoutState*>(slot.get());
  st.src.set_data_handle(const_cast<void*>(c.input(0).raw_data()));
  st.dst.set_data_handle(c.output(0).raw_data());
  execute(st.prim, {{DNNL_ARG_FROM, st.src}, {DNNL_ARG_TO, st.dst}});
}

bool supports_relayout(const Node&, const std::vector<TensorSpec>& in) {
  return float32_nonempty(in) && in[0].shape.is_fully_defined();
}

// The layout oneDNN itself picks (format `any`) for a typical convolution's
// activations on this CPU first: NHWC for its AVX-512 brgemm kernels, nChw8c
// on AVX2, nChw16c on older AVX-512 paths; then the other of NHWC and the
// CPU's channel block (16 with AVX-512, else 8), which some nets and batch
// sizes run faster (a blocked MobileNet at batch 32, NHWC at batch 1).
// Computed once.
std::vector<int64_t> activation_blocks() {
  static const std::vector<int64_t> blocks = [] {
    int64_t preferred = 0;
    try {
      const dims src{1, 64, 28, 28}, w{64, 64, 1, 1};
      dnnl::convolution_forward::desc d(
          dnnl::prop_kind::forward_inference, algo::convolution_direct, dnnl::memory::desc(src, dt::f32, tag::any),
          dnnl::memory::desc(w, dt::f32, tag::any), dnnl::memory::desc(src, dt::f32, tag::any), {1, 1}, {0, 0}, {0, 0});
      dnnl::convolution_forward::primitive_desc pd(d, engine());
      const auto& blocking = pd.src_desc().data.format_desc.blocking;
      if (blocking.inner_nblks == 1 && blocking.inner_idxs[0] == 1 &&
          (blocking.inner_blks[0] == 8 || blocking.inner_blks[0] == 16))
        preferred = static_cast<int64_t>(blocking.inner_blks[0]);
    } catch (const dnnl::error&) {
    }
    if (preferred > 0) return std::vector<int64_t>{preferred, 0};
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());  // ISA sets are bit masks
    const auto avx512_core = static_cast<unsigned>(dnnl::cpu_isa::avx512_core);
    const bool avx512 = (isa & avx512_core) == avx512_core;
    return std::vector<int64_t>{0, avx512 ? 16 : 8};
  }();
  return blocks;
}

const bool kBlocksRegistered = [] {
  OpRegistry::global().set_activation_blocks("onednn", activation_blocks);
  return true;
}();

}  // namespace

HUB_REGISTER_KERNEL(_FusedConv2D, onednn, guarded<fused_conv2d>, supports_fused_conv2d);
HUB_REGISTER_KERNEL(_FusedMatMul, onednn, guarded<fused_matmul>, supports_fused_matmul);
HUB_REGISTER_KERNEL(_Relayout, onednn, guarded<relayout>, supports_relayout);

}  // namespace hub::onednn
