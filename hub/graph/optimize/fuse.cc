// Fusing convolution and dense layers (optimize.h): conv / matmul with a
// constant filter -> _FusedConv2D / _FusedMatMul, then batch norm, bias and
// per-channel scale folded into the filter and bias, and activations and a
// residual Add appended as post-ops. Folding never writes a tensor it did
// not create: the filter and bias a fold changes are new constants.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <optional>

#include "hub/graph/optimize/passes.h"
#include "hub/ops/fused.h"

namespace hub::optimize {

namespace {

using Matrix = Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapMatrix = Eigen::Map<Matrix>;
using Vector = Eigen::Array<float, Eigen::Dynamic, 1>;
using MapVector = Eigen::Map<const Vector>;

bool is_fused(const INode& n) { return n.op == "_FusedConv2D" || n.op == "_FusedMatMul"; }

// A scalar constant as float (its dtype float32, int8, uint8 or int32).
std::optional<float> scalar(const Ir& ir, Output o) {
  const Tensor& t = ir.constant(o);
  if (!t.defined() || t.num_elements() != 1) return std::nullopt;
  switch (t.dtype()) {
    case DType::kFloat32:
      return t.data<float>()[0];
    case DType::kInt8:
      return t.data<int8_t>()[0];
    case DType::kUInt8:
      return t.data<uint8_t>()[0];
    default:
      return std::nullopt;
  }
}

// o = DequantizeLinear(q, scale, zero_point) per tensor with q uint8/int8 and
// constant parameters: fills q, scale and zero point.
bool dequantized_activation(const Ir& ir, Output o, Output* q, float* scale, int32_t* zero_point) {
  const INode& d = ir.nodes[o.node];
  if (d.op != "DequantizeLinear" || !is_8bit(ir.spec(d.inputs[0]).dtype)) return false;
  const std::optional<float> s = scalar(ir, d.inputs[1]), z = scalar(ir, d.inputs[2]);
  if (!s || !z || ir.spec(d.inputs[1]).shape.rank() != 0) return false;
  *q = d.inputs[0];
  *scale = *s;
  *zero_point = static_cast<int32_t>(*z);
  return true;
}

// o = DequantizeLinear(w, scale, 0) of a constant int8 filter, per tensor or
// per output channel (`channel_axis` of the filter, `channels` output
// channels, `repeat` consecutive output channels per scale: a depthwise
// filter's multiplier). Fills the int8 filter and one scale per output
// channel (or a single one).
bool quantized_filter(const Ir& ir, Output o, int channel_axis, int64_t channels, int64_t repeat, Output* w,
                      std::vector<float>* scales) {
  const INode& d = ir.nodes[o.node];
  if (d.op != "DequantizeLinear" || ir.spec(d.inputs[0]).dtype != DType::kInt8) return false;
  const Tensor& q = ir.constant(d.inputs[0]);
  const Tensor& scale = ir.constant(d.inputs[1]);
  const Tensor& zp = ir.constant(d.inputs[2]);
  if (!q.defined() || !scale.defined() || !zp.defined() || scale.dtype() != DType::kFloat32) return false;
  for (int64_t i = 0; i < zp.num_elements(); ++i)
    if (zp.data<int8_t>()[i] != 0) return false;
  scales->clear();
  if (scale.rank() == 0) {
    scales->push_back(scale.data<float>()[0]);
  } else {
    int64_t axis = d.attrs.get_int("axis");
    if (axis < 0) axis += q.rank();
    if (axis != channel_axis || scale.num_elements() * repeat != channels) return false;
    for (int64_t c = 0; c < channels; ++c) scales->push_back(scale.data<float>()[c / repeat]);
  }
  for (float v : *scales)
    if (!(v > 0) || !std::isfinite(v)) return false;
  *w = d.inputs[0];
  return true;
}

// Conv2D / DepthwiseConv2dNative / MatMul (not transpose_a) reading
// DequantizeLinear'd 8-bit activations and a DequantizeLinear'd constant int8
// filter: the quantized form's inputs and attributes (hub/ops/fused.h); x,
// w and q are left as they were otherwise.
bool quantized_operands(const Ir& ir, const INode& n, Output* x, Output* w, ops::FusedQuantization* q) {
  if (n.op == "MatMul" && n.attrs.get_bool("transpose_a")) return false;
  Output q8;
  ops::FusedQuantization found;
  if (!dequantized_activation(ir, n.inputs[0], &q8, &found.src_scale, &found.src_zero_point)) return false;
  const Shape& wshape = ir.spec(n.inputs[1]).shape;
  const int64_t channels = n.outputs[0].shape.dim(-1);
  if (channels < 0 || !wshape.is_fully_defined()) return false;
  int axis = wshape.rank() - 1;
  int64_t repeat = 1;
  if (n.op == "DepthwiseConv2dNative") {  // [KH,KW,C,M]: output channel c*M + m
    axis = 2;
    repeat = wshape[3];
  } else if (n.op == "MatMul" && n.attrs.get_bool("transpose_b")) {
    axis = 0;
  }
  if (!quantized_filter(ir, n.inputs[1], axis, channels, repeat, w, &found.filter_scales)) return false;
  *x = q8;
  *q = found;
  return true;
}

// The values of a per-channel constant `o` with `channels` entries that
// broadcasts along the last dim of a tensor of rank `rank` (shape [C],
// [1,C], [1,1,1,C], ...); undefined otherwise.
Tensor per_channel(const Ir& ir, Output o, int64_t channels, int rank) {
  const Tensor& t = ir.constant(o);
  if (!t.defined() || t.dtype() != DType::kFloat32 || t.rank() > rank || t.rank() < 1) return Tensor();
  for (int i = 0; i + 1 < t.rank(); ++i)
    if (t.dim(i) != 1) return Tensor();
  if (t.dim(-1) != channels) return Tensor();
  return t.reshaped(Shape{channels});
}

// The fused node's filter viewed as [rows, channels] with channels the output
// channels (HWIO / HWCM: the last dims; MatMul b [K,N], or [N,K] transposed).
struct FilterView {
  Tensor copy;   // a new tensor with the filter's values
  bool by_rows;  // channel i is row i (transposed MatMul operand) instead of column i
};

FilterView copy_filter(const Ir& ir, int f) {
  const INode& n = ir.nodes[f];
  FilterView v;
  v.copy = ir.constant(n.inputs[1]).clone();
  v.by_rows = n.op == "_FusedMatMul" && n.attrs.get_bool("transpose_b");
  return v;
}

// filter *= scale per output channel; returns the new filter constant.
Output scale_filter(Ir& ir, int f, const Tensor& scale) {
  FilterView v = copy_filter(ir, f);
  const int64_t channels = scale.num_elements();
  const int64_t rows = v.copy.num_elements() / channels;
  MapVector s(scale.data<float>(), channels);
  if (v.by_rows) {
    MapMatrix(v.copy.data<float>(), channels, rows).colwise() *= s;
  } else {
    MapMatrix(v.copy.data<float>(), rows, channels).rowwise() *= s.transpose();
  }
  return ir.add_constant(v.copy, ir.nodes[f].name + "/folded_filter", f);
}

void set_bias(Ir& ir, int f, const Tensor& bias) {
  ir.nodes[f].inputs[2] = ir.add_constant(bias, ir.nodes[f].name + "/folded_bias", f);
}

Tensor bias_of(const Ir& ir, int f) { return ir.constant(ir.nodes[f].inputs[2]).clone(); }

// Moves fused node f to consumer c's place: c's output is now f's.
void absorb(Ir& ir, int f, int c) {
  ir.replace_uses(Output{c, 0}, Output{f, 0});
  ir.nodes[f].position = ir.nodes[c].position;
  ir.nodes[c].dead = true;
  ir.infer(f);
}

bool no_post_ops(const INode& n) { return n.attrs.get_strings("post_ops").empty(); }

void append_post_op(Ir& ir, int f, ops::PostOp p) {
  std::vector<ops::PostOp> post = ops::post_ops_of(ir.nodes[f].attrs);
  post.push_back(std::move(p));
  ops::set_post_ops(ir.nodes[f].attrs, post);
}

// The post-op an activation node is, if it is one.
std::optional<ops::PostOp> activation(const INode& c) {
  const Attrs& a = c.attrs;
  auto arg = [&](const char* name, double def) { return static_cast<float>(a.has(name) ? a.get_float(name) : def); };
  if (c.op == "Relu" || c.op == "Relu6" || c.op == "Sigmoid" || c.op == "Tanh" || c.op == "HardSwish")
    return ops::PostOp{c.op};
  if (c.op == "Elu") return ops::PostOp{"Elu", arg("alpha", 1.0)};
  if (c.op == "LeakyRelu") return ops::PostOp{"LeakyRelu", arg("alpha", 0.2)};
  if (c.op == "ClipByValue") return ops::PostOp{"Clip", arg("min", -INFINITY), arg("max", INFINITY)};
  return std::nullopt;
}

// Conv2D / DepthwiseConv2dNative / MatMul with a constant float32 filter ->
// the fused op with a zero bias and no post-ops; with dequantized 8-bit
// operands (quantized_operands) -> its quantized form, float output.
bool to_fused(Ir& ir, int id) {
  INode& n = ir.nodes[id];
  const bool conv = n.op == "Conv2D" || n.op == "DepthwiseConv2dNative";
  if (!conv && n.op != "MatMul") return false;
  if (n.outputs[0].dtype != DType::kFloat32) return false;
  const int64_t channels = n.outputs[0].shape.dim(-1);
  if (channels < 0) return false;
  Output x = n.inputs[0], filter = n.inputs[1];
  ops::FusedQuantization q;
  if (!quantized_operands(ir, n, &x, &filter, &q)) {
    const Tensor& w = ir.constant(n.inputs[1]);
    if (!w.defined() || w.dtype() != DType::kFloat32) return false;
  }
  const Shape& w = ir.spec(filter).shape;
  // Grouped convolutions (filter input channels C/G < C) stay as they are.
  if (n.op == "Conv2D" && (w.rank() != 4 || ir.spec(x).shape.rank() != 4 || ir.spec(x).shape[3] != w[2])) return false;
  Attrs attrs = n.attrs;
  if (conv) attrs.set("depthwise", n.op == "DepthwiseConv2dNative");
  ops::set_post_ops(attrs, {});
  ops::set_quantization(attrs, q);
  const std::string op = conv ? "_FusedConv2D" : "_FusedMatMul";
  const std::string name = n.name;
  Output bias = ir.add_constant(Tensor::zeros(DType::kFloat32, Shape{channels}), name + "/bias", id);
  INode& fused = ir.nodes[id];  // add_constant may have moved the nodes
  fused.op = op;
  fused.attrs = attrs;
  fused.inputs = {x, filter, bias};
  ir.infer(id);
  return true;
}

// A float _FusedConv2D whose input is a zero constant Pad of only the
// spatial dims (slim's conv2d_same before a strided convolution) and whose
// own padding is VALID or EXPLICIT -> the convolution reads the Pad's input
// with the pads added to its explicit padding: one pass over the tensor
// fewer. (The quantized form is left alone: its kernels pad with the zero
// point.)
bool absorb_pad(Ir& ir, int f) {
  const INode& n = ir.nodes[f];
  if (n.op != "_FusedConv2D" || ops::quantization_of(n.attrs).quantized()) return false;
  const INode& p = ir.nodes[n.inputs[0].node];
  if (p.op != "Pad" || p.attrs.get_string("mode") != "CONSTANT" || p.attrs.get_float("constant_value") != 0)
    return false;
  const std::vector<int64_t> pads = p.attrs.get_ints("paddings");  // [before_0, after_0, ...]
  if (pads.size() != 8 || pads[0] != 0 || pads[1] != 0 || pads[6] != 0 || pads[7] != 0) return false;
  const std::string padding = n.attrs.get_string("padding");
  std::vector<int64_t> own{0, 0, 0, 0};  // [top, bottom, left, right]
  if (padding == "EXPLICIT") {
    own = n.attrs.get_ints("explicit_paddings");
    if (own.size() == 8) own = {own[2], own[3], own[4], own[5]};  // TensorFlow's form
  } else if (padding != "VALID") {
    return false;
  }
  const Output source = p.inputs[0];
  INode& conv = ir.nodes[f];
  conv.inputs[0] = source;
  conv.attrs.set("padding", std::string("EXPLICIT"))
      .set("explicit_paddings",
           std::vector<int64_t>{own[0] + pads[2], own[1] + pads[3], own[2] + pads[4], own[3] + pads[5]});
  ir.infer(f);
  return true;
}

// One rewrite at fused node f's single consumer, if one applies.
bool fuse_consumer(Ir& ir, int f, FuseCounts& counts) {
  const Output out{f, 0};
  if (!ir.single_use(out)) return false;
  const auto [c, index] = ir.consumers(out)[0];
  const INode& cn = ir.nodes[c];
  const int64_t channels = ir.spec(ir.nodes[f].inputs[2]).shape[0];
  const int rank = ir.spec(out).shape.rank();
  const ops::FusedQuantization q = ops::quantization_of(ir.nodes[f].attrs);
  if (q.quantized_output()) return false;
  // Folds that rescale the filter or add a side input apply to float filters only.
  const bool plain = no_post_ops(ir.nodes[f]), float_filter = !q.quantized();
  if (cn.op == "QuantizeLinear" && index == 0 && q.quantized()) {
    const std::optional<float> scale = scalar(ir, cn.inputs[1]), zero_point = scalar(ir, cn.inputs[2]);
    if (!scale || !zero_point || ir.spec(cn.inputs[1]).shape.rank() != 0) return false;
    ops::FusedQuantization requantized = q;
    requantized.dst_scale = *scale;
    requantized.dst_zero_point = static_cast<int32_t>(*zero_point);
    requantized.dst_type = ir.spec(cn.inputs[2]).dtype;
    ops::set_quantization(ir.nodes[f].attrs, requantized);
    absorb(ir, f, c);
    ++counts.absorbed;
    return true;
  }

  if (cn.op == "FusedBatchNorm" && index == 0 && plain && float_filter && !cn.attrs.get_bool("is_training")) {
    for (int i = 1; i < 4; ++i)
      if (!ir.consumers(Output{c, i}).empty() || ir.kept(Output{c, i})) return false;
    // Const: these may share a variable's storage, and mutable access would
    // mark it written (Storage::generation).
    const Tensor scale = per_channel(ir, cn.inputs[1], channels, 1),
                 offset = per_channel(ir, cn.inputs[2], channels, 1);
    const Tensor mean = per_channel(ir, cn.inputs[3], channels, 1), var = per_channel(ir, cn.inputs[4], channels, 1);
    if (!scale.defined() || !offset.defined() || !mean.defined() || !var.defined()) return false;
    const float eps = static_cast<float>(cn.attrs.get_float("epsilon"));
    Tensor s(DType::kFloat32, Shape{channels});
    Eigen::Map<Vector>(s.data<float>(), channels) =
        MapVector(scale.data<float>(), channels) / (MapVector(var.data<float>(), channels) + eps).sqrt();
    Tensor bias = bias_of(ir, f);
    Eigen::Map<Vector> b(bias.data<float>(), channels);
    b = (b - MapVector(mean.data<float>(), channels)) * MapVector(s.data<float>(), channels) +
        MapVector(offset.data<float>(), channels);
    Output w = scale_filter(ir, f, s);
    ir.nodes[f].inputs[1] = w;
    set_bias(ir, f, bias);
    absorb(ir, f, c);
    ++counts.batch_norms;
    return true;
  }
  if ((cn.op == "BiasAdd" && index == 0) || cn.op == "Add" || cn.op == "Mul") {
    const Output other = cn.inputs[1 - index];
    if (cn.inputs.size() == 2 && plain && (float_filter || cn.op != "Mul")) {
      const Tensor v = per_channel(ir, other, channels, rank);
      if (v.defined() && ir.spec(Output{c, 0}).shape == ir.spec(out).shape) {
        Tensor bias = bias_of(ir, f);
        Eigen::Map<Vector> b(bias.data<float>(), channels);
        if (cn.op == "Mul") {
          b *= MapVector(v.data<float>(), channels);
          Output w = scale_filter(ir, f, v);
          ir.nodes[f].inputs[1] = w;
        } else {
          b += MapVector(v.data<float>(), channels);
        }
        set_bias(ir, f, bias);
        absorb(ir, f, c);
        ++counts.absorbed;
        return true;
      }
    }
    // A residual Add of a same-shaped tensor.
    const INode& fn = ir.nodes[f];
    bool has_add = fn.inputs.size() > 3;
    if (cn.op == "Add" && !has_add && float_filter && ir.spec(other).dtype == DType::kFloat32 &&
        ir.spec(other).shape == ir.spec(out).shape && ir.spec(Output{c, 0}).shape == ir.spec(out).shape) {
      append_post_op(ir, f, ops::PostOp{"Add"});
      ir.nodes[f].inputs.push_back(other);
      absorb(ir, f, c);
      ++counts.absorbed;
      return true;
    }
    return false;
  }
  if (std::optional<ops::PostOp> p = activation(cn); p && index == 0) {
    append_post_op(ir, f, *p);
    absorb(ir, f, c);
    ++counts.absorbed;
    return true;
  }
  return false;
}

// An inference FusedBatchNorm with constant parameters that no convolution
// absorbed (resnet_v2's pre-activation follows a residual Add whose sum also
// feeds the shortcut) -> a 1x1 depthwise _FusedConv2D with filter s and bias
// offset - mean * s (s = scale / sqrt(variance + epsilon)), so that a
// following activation becomes its post-op: one pass over the tensor instead
// of one for the batch norm and one for the activation.
bool batch_norm_to_fused(Ir& ir, int id) {
  const INode& n = ir.nodes[id];
  if (n.op != "FusedBatchNorm" || n.attrs.get_bool("is_training")) return false;
  const TensorSpec& x = ir.spec(n.inputs[0]);
  if (x.dtype != DType::kFloat32 || x.shape.rank() != 4 || x.shape[3] < 1) return false;
  for (int i = 1; i < 4; ++i)
    if (!ir.consumers(Output{id, i}).empty() || ir.kept(Output{id, i})) return false;
  const int64_t channels = x.shape[3];
  const Tensor scale = per_channel(ir, n.inputs[1], channels, 1), offset = per_channel(ir, n.inputs[2], channels, 1);
  const Tensor mean = per_channel(ir, n.inputs[3], channels, 1), var = per_channel(ir, n.inputs[4], channels, 1);
  if (!scale.defined() || !offset.defined() || !mean.defined() || !var.defined()) return false;
  const float eps = static_cast<float>(n.attrs.get_float("epsilon"));
  Tensor filter(DType::kFloat32, Shape{1, 1, channels, 1}), bias(DType::kFloat32, Shape{channels});
  Eigen::Map<Vector> s(filter.data<float>(), channels);
  s = MapVector(scale.data<float>(), channels) / (MapVector(var.data<float>(), channels) + eps).sqrt();
  Eigen::Map<Vector>(bias.data<float>(), channels) =
      MapVector(offset.data<float>(), channels) - MapVector(mean.data<float>(), channels) * s;
  const std::string name = n.name;
  const Output x_in = n.inputs[0];
  const Output w = ir.add_constant(filter, name + "/folded_filter", id);
  const Output b = ir.add_constant(bias, name + "/folded_bias", id);
  INode& fused = ir.nodes[id];  // add_constant may have moved the nodes
  fused.op = "_FusedConv2D";
  fused.inputs = {x_in, w, b};
  fused.attrs = Attrs();
  fused.attrs.set("depthwise", true).set("padding", std::string("VALID"));
  ir.infer(id);
  return true;
}

// QuantizeLinear(MaxPool / AvgPool(DequantizeLinear(q))) with one scale and
// zero point on both sides -> the pool on the 8-bit q itself.
bool int8_pool(Ir& ir, int p) {
  INode& pool = ir.nodes[p];
  if (pool.op != "MaxPool" && pool.op != "AvgPool") return false;
  Output q;
  float in_scale;
  int32_t in_zp;
  if (!dequantized_activation(ir, pool.inputs[0], &q, &in_scale, &in_zp) || !ir.single_use(Output{p, 0})) return false;
  const auto [c, index] = ir.consumers(Output{p, 0})[0];
  const INode& quantize = ir.nodes[c];
  if (quantize.op != "QuantizeLinear" || ir.spec(quantize.inputs[1]).shape.rank() != 0) return false;
  const std::optional<float> s = scalar(ir, quantize.inputs[1]), z = scalar(ir, quantize.inputs[2]);
  if (!s || !z || *s != in_scale || static_cast<int32_t>(*z) != in_zp ||
      ir.spec(quantize.inputs[2]).dtype != ir.spec(q).dtype)
    return false;
  pool.inputs[0] = q;
  ir.infer(p);
  ir.replace_uses(Output{c, 0}, Output{p, 0});
  ir.nodes[p].position = ir.nodes[c].position;
  ir.nodes[c].dead = true;
  return true;
}

// Transpose / Reshape(DequantizeLinear(q)) per tensor ->
// DequantizeLinear(Transpose / Reshape(q)): moving data commutes with a
// per-tensor dequantize, and the 8-bit tensor is a quarter of the bytes. The
// DequantizeLinear then reads straight into the convolution or MatMul after
// it (an imported NCHW model's first layer: QuantizeLinear, then the
// importer's change to NHWC; a QLinearMatMul after a flatten).
bool sink_dequantize(Ir& ir, int t) {
  if (ir.nodes[t].op != "Transpose" && ir.nodes[t].op != "Reshape") return false;
  Output q;
  float scale;
  int32_t zero_point;
  if (!dequantized_activation(ir, ir.nodes[t].inputs[0], &q, &scale, &zero_point)) return false;
  const INode dequantize = ir.nodes[ir.nodes[t].inputs[0].node];
  INode moved = ir.nodes[t];
  moved.name = ir.unique_name(moved.name + "/8bit");
  moved.inputs[0] = q;
  const int m = ir.add(std::move(moved), t);
  INode& d = ir.nodes[t];
  d.op = dequantize.op;
  d.inputs = {Output{m, 0}, dequantize.inputs[1], dequantize.inputs[2]};
  d.attrs = dequantize.attrs;
  ir.infer(t);
  return true;
}

}  // namespace

FuseCounts fuse(Ir& ir) {
  FuseCounts counts;
  const size_t n = ir.nodes.size();
  for (size_t id = 0; id < n; ++id)
    if (!ir.nodes[id].dead) sink_dequantize(ir, static_cast<int>(id));
  for (size_t id = 0; id < n; ++id)
    if (!ir.nodes[id].dead && to_fused(ir, static_cast<int>(id))) {
      ++counts.fused;
      if (absorb_pad(ir, static_cast<int>(id))) ++counts.absorbed;
    }
  auto absorb_consumers = [&] {
    bool changed = true;
    while (changed) {
      changed = false;
      for (size_t id = 0; id < ir.nodes.size(); ++id)
        if (!ir.nodes[id].dead && is_fused(ir.nodes[id]))
          while (fuse_consumer(ir, static_cast<int>(id), counts)) changed = true;
    }
  };
  absorb_consumers();
  // Batch norms left over become convolutions of their own, which may then
  // take the activation after them.
  for (size_t id = 0; id < ir.nodes.size(); ++id)
    if (!ir.nodes[id].dead && batch_norm_to_fused(ir, static_cast<int>(id))) {
      ++counts.fused;
      ++counts.batch_norms;
    }
  absorb_consumers();
  for (size_t id = 0; id < ir.nodes.size(); ++id)
    if (!ir.nodes[id].dead && int8_pool(ir, static_cast<int>(id))) ++counts.absorbed;
  return counts;
}

}  // namespace hub::optimize
