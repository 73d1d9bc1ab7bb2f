// Post-training quantization (quantize.h): the plan is the fused float
// graph; quantize() inserts QuantizeLinear/DequantizeLinear pairs on the
// observed activations, writes every fused node back as the standard ops it
// stands for (with int8 weights for the quantizable ones), and turns the
// large constants back into variables so the result can be a module.
#include "hub/graph/optimize/quantize.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "hub/graph/optimize/passes.h"
#include "hub/ops/fused.h"
#include "hub/ops/quantize.h"

namespace hub {

namespace {

using optimize::INode;
using optimize::Ir;

bool is_fused(const INode& n) { return !n.dead && (n.op == "_FusedConv2D" || n.op == "_FusedMatMul"); }

// Why fused node n cannot run in int8, or "" when it can.
std::string not_quantizable(const INode& n) {
  if (n.op == "_FusedMatMul" && n.attrs.get_bool("transpose_a")) return "MatMul with transpose_a";
  return "";
}

// Constants with at least this many elements become variables of the module.
constexpr int64_t kVariableElements = 16;

}  // namespace

struct QuantizationPlan::Impl {
  explicit Impl(const Graph& g, const std::vector<Output>& keep) : source(g), ir(source, keep) {}
  Graph source;
  Ir ir;
  std::vector<int> layers;          // quantizable fused nodes, in position order
  std::vector<Output> observed_ir;  // tensors of ir to measure
  // observed_ir index -> the index whose parameters it takes: the output of
  // a pool between int8 layers shares its input's, so the pool runs on the
  // 8-bit values (optimize.h).
  std::map<size_t, size_t> shared;
  std::set<int> int8_pools;
  Graph calibration;
  std::map<Output, Output> calibration_kept;
  std::vector<Output> observed;  // observed_ir in calibration
  std::vector<std::string> notes;
};

QuantizationPlan::QuantizationPlan(const Graph& graph, const VariableStore& variables, const std::vector<Output>& keep)
    : impl_(std::make_unique<Impl>(graph, keep)) {
  Ir& ir = impl_->ir;
  ir.drop_unused();
  std::vector<optimize::FrozenVariable> frozen;
  optimize::freeze_variables(ir, variables, &frozen);
  optimize::bypass_identities(ir);
  optimize::fold_constants(ir, false);
  optimize::fuse(ir);
  ir.drop_unused();

  std::vector<int> fused;
  for (size_t i = 0; i < ir.nodes.size(); ++i)
    if (is_fused(ir.nodes[i])) fused.push_back(static_cast<int>(i));
  std::sort(fused.begin(), fused.end(), [&](int a, int b) { return ir.nodes[a].position < ir.nodes[b].position; });
  std::set<int> layer_set;
  for (int f : fused) {
    const std::string why = not_quantizable(ir.nodes[f]);
    if (!why.empty()) {
      impl_->notes.push_back("node '" + ir.nodes[f].name + "' (" + why + ") stays float");
      continue;
    }
    impl_->layers.push_back(f);
    layer_set.insert(f);
  }
  auto observe = [&](Output o) {
    if (std::find(impl_->observed_ir.begin(), impl_->observed_ir.end(), o) == impl_->observed_ir.end())
      impl_->observed_ir.push_back(o);
  };
  for (int f : impl_->layers) {
    observe(ir.nodes[f].inputs[0]);
    for (const auto& [c, index] : ir.consumers(Output{f, 0}))
      if (index == 0 && layer_set.count(c)) observe(Output{f, 0});
  }
  const size_t layer_inputs = impl_->observed_ir.size();
  for (size_t i = 0; i < layer_inputs; ++i) {
    const Output o = impl_->observed_ir[i];
    const INode& p = ir.nodes[o.node];
    if (p.op != "MaxPool" && p.op != "AvgPool") continue;
    observe(p.inputs[0]);
    const auto at = std::find(impl_->observed_ir.begin(), impl_->observed_ir.end(), p.inputs[0]);
    impl_->shared[i] = static_cast<size_t>(at - impl_->observed_ir.begin());
    impl_->int8_pools.insert(o.node);
  }
  impl_->calibration = ir.emit(&impl_->calibration_kept);
  for (Output o : impl_->observed_ir) {
    const std::optional<int> id = impl_->calibration.find(ir.nodes[o.node].name);
    HUB_CHECK(id.has_value(), "quantization: observed node " + ir.nodes[o.node].name + " was not emitted");
    impl_->observed.push_back(Output{*id, o.index});
  }
}

QuantizationPlan::~QuantizationPlan() = default;

const Graph& QuantizationPlan::calibration_graph() const { return impl_->calibration; }

Output QuantizationPlan::calibration_tensor(Output source) const {
  auto it = impl_->calibration_kept.find(source);
  if (it == impl_->calibration_kept.end())
    throw_error(Code::kInvalidArgument, "tensor " + impl_->source.tensor_name(source) + " was not kept");
  return it->second;
}

const std::vector<Output>& QuantizationPlan::observed() const { return impl_->observed; }

int QuantizationPlan::quantizable() const { return static_cast<int>(impl_->layers.size()); }

namespace {

// Appends node `op` named `name` (made unique) before node `before`.
Output add(Ir& ir, const std::string& op, const std::string& name, std::vector<Output> inputs, Attrs attrs,
           int before) {
  INode n;
  n.op = op;
  n.name = ir.unique_name(name);
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  return Output{ir.add(std::move(n), before), 0};
}

// Symmetric int8 weights of a float filter: per output channel (channel
// `axis` of the filter, or -1 for per tensor). Returns {int8 tensor, scales}.
std::pair<Tensor, Tensor> quantize_weights(const Tensor& w, int axis) {
  const int64_t channels = axis < 0 ? 1 : w.dim(axis);
  int64_t inner = 1;
  if (axis >= 0)
    for (int d = axis + 1; d < w.rank(); ++d) inner *= w.dim(d);
  const float* v = w.data<float>();
  auto channel = [&](int64_t i) { return axis < 0 ? 0 : (i / inner) % channels; };
  Tensor scales(DType::kFloat32, Shape{channels});
  float* s = scales.data<float>();
  std::fill(s, s + channels, 0.0f);
  for (int64_t i = 0; i < w.num_elements(); ++i) s[channel(i)] = std::max(s[channel(i)], std::fabs(v[i]));
  for (int64_t c = 0; c < channels; ++c) s[c] = s[c] > 0 ? s[c] / 127.0f : 1.0f;
  Tensor q(DType::kInt8, w.shape());
  for (int64_t i = 0; i < w.num_elements(); ++i)
    q.data<int8_t>()[i] = static_cast<int8_t>(std::clamp(std::rint(v[i] / s[channel(i)]), -127.0f, 127.0f));
  if (axis < 0) scales = scales.reshaped(Shape{});
  return {q, scales};
}

// The standard op and attributes of a post-op.
std::pair<std::string, Attrs> post_op_node(const ops::PostOp& p) {
  if (p.op == "LeakyRelu" || p.op == "Elu") return {p.op, Attrs().set("alpha", static_cast<double>(p.alpha))};
  if (p.op == "Clip")
    return {"ClipByValue", Attrs().set("min", static_cast<double>(p.alpha)).set("max", static_cast<double>(p.beta))};
  return {p.op, Attrs()};
}

struct Rewriter {
  Ir& ir;
  bool per_channel;
  QuantizedGraph& out;
  const std::set<int>& int8_pools;

  // Writes fused node f as standard ops; with quantize, its filter as
  // DequantizeLinear of int8 weights.
  void defuse(int f, bool quantize) {
    const INode n = ir.nodes[f];
    ir.nodes[f].name.clear();  // frees the name for the convolution that replaces it
    const bool matmul = n.op == "_FusedMatMul", depthwise = !matmul && n.attrs.get_bool("depthwise");
    Output filter = n.inputs[1];
    if (quantize) {
      const Tensor& w = ir.constant(filter);
      int axis = matmul ? (n.attrs.get_bool("transpose_b") ? 0 : 1) : 3;
      if (depthwise) axis = w.dim(3) == 1 ? 2 : -1;
      if (!per_channel) axis = -1;
      if (per_channel && axis < 0)
        out.notes.push_back("node '" + n.name + "': depthwise multiplier " + std::to_string(w.dim(3)) +
                            " > 1, weights quantized per tensor");
      auto [q, scales] = quantize_weights(w, axis);
      const Output qc = ir.add_constant(q, n.name + "/weights_quantized", f);
      const Output sc = ir.add_constant(scales, n.name + "/weights_scale", f);
      const Output zc = ir.add_constant(Tensor::zeros(DType::kInt8, scales.shape()), n.name + "/weights_zero_point", f);
      filter = add(ir, "DequantizeLinear", n.name + "/weights_dequantized", {qc, sc, zc},
                   Attrs().set("axis", static_cast<int64_t>(std::max(axis, 0))), f);
      const float* s = scales.data<float>();
      out.weights.push_back({ir.nodes[qc.node].name, scales.num_elements(),
                             *std::min_element(s, s + scales.num_elements()),
                             *std::max_element(s, s + scales.num_elements())});
    }
    Attrs attrs;
    std::string op;
    if (matmul) {
      op = "MatMul";
      attrs.set("transpose_a", n.attrs.get_bool("transpose_a")).set("transpose_b", n.attrs.get_bool("transpose_b"));
    } else {
      op = depthwise ? "DepthwiseConv2dNative" : "Conv2D";
      for (const char* a : {"strides", "explicit_paddings", "dilations"}) attrs.set(a, n.attrs.get_ints(a));
      attrs.set("padding", n.attrs.get_string("padding"));
    }
    Output z = add(ir, op, n.name, {n.inputs[0], filter}, attrs, f);
    z = add(ir, "BiasAdd", n.name + "/BiasAdd", {z, n.inputs[2]}, Attrs(), f);
    for (const ops::PostOp& p : ops::post_ops_of(n.attrs)) {
      if (p.op == "Add") {
        z = add(ir, "Add", n.name + "/Add", {z, n.inputs[3]}, Attrs(), f);
        if (quantize)
          out.notes.push_back("node '" + n.name + "': its residual Add runs in float after the int8 convolution");
        continue;
      }
      auto [pop, pattrs] = post_op_node(p);
      z = add(ir, pop, n.name + "/" + pop, {z}, pattrs, f);
    }
    ir.replace_uses(Output{f, 0}, z);
    ir.nodes[f].dead = true;
  }

  // QuantizeLinear + DequantizeLinear of t (uint8, `params`) before t's
  // first consumer; every consumer then reads the dequantized tensor.
  void insert_qdq(Output t, const TensorRange& range) {
    const ops::QuantParams p = ops::nudged_quant_params(range.min, range.max);
    std::vector<std::pair<int, int>> uses = ir.consumers(t);
    HUB_CHECK(!uses.empty(), "quantization: observed tensor without consumers");
    int first = uses[0].first;
    for (const auto& [c, i] : uses)
      if (ir.nodes[c].position < ir.nodes[first].position) first = c;
    const std::string base = ir.nodes[t.node].name;
    const Output scale = ir.add_constant(Tensor::scalar<float>(p.scale), base + "/act_scale", first);
    const Output zp =
        ir.add_constant(Tensor::scalar<uint8_t>(static_cast<uint8_t>(p.zero_point)), base + "/act_zero_point", first);
    const Output q = add(ir, "QuantizeLinear", base + "/act_quantized", {t, scale, zp}, Attrs(), first);
    const Output dq = add(ir, "DequantizeLinear", base + "/act_dequantized", {q, scale, zp}, Attrs(), first);
    for (const auto& [c, i] : uses) {
      ir.nodes[c].inputs[i] = dq;
      if (!is_fused(ir.nodes[c]) && !int8_pools.count(c))
        out.notes.push_back("node '" + ir.nodes[c].name + "' (" + ir.nodes[c].op +
                            ") runs in float on dequantized int8 values");
    }
    out.activations.push_back({ir.nodes[q.node].name, p.scale, p.zero_point, range});
  }

  // Live constants of at least kVariableElements float32 / int8 values
  // become non-trainable variables holding them.
  void constants_to_variables() {
    for (INode& n : ir.nodes) {
      if (n.dead || n.op != "Const") continue;
      const Tensor value = n.attrs.get_tensor("value");
      if ((value.dtype() != DType::kFloat32 && value.dtype() != DType::kInt8) ||
          value.num_elements() < kVariableElements)
        continue;
      n.op = "Variable";
      n.attrs = Attrs().set("dtype", value.dtype()).set("shape", value.shape()).set("trainable", false);
      out.variables[n.name] = value;
    }
  }
};

}  // namespace

QuantizedGraph QuantizationPlan::quantize(const std::vector<TensorRange>& ranges, bool per_channel) const {
  if (ranges.size() != impl_->observed_ir.size())
    throw_error(Code::kInvalidArgument, "quantization needs " + std::to_string(impl_->observed_ir.size()) +
                                            " ranges, got " + std::to_string(ranges.size()));
  for (const TensorRange& r : ranges)
    if (!std::isfinite(r.min) || !std::isfinite(r.max) || r.min > r.max)
      throw_error(Code::kInvalidArgument, "calibration range [" + std::to_string(r.min) + ", " + std::to_string(r.max) +
                                              "] is not a finite interval");
  QuantizedGraph out;
  out.notes = impl_->notes;
  Ir ir = impl_->ir;
  Rewriter rw{ir, per_channel, out, impl_->int8_pools};
  for (size_t i = 0; i < impl_->observed_ir.size(); ++i) {
    const auto shared = impl_->shared.find(i);
    rw.insert_qdq(impl_->observed_ir[i], ranges[shared == impl_->shared.end() ? i : shared->second]);
  }
  const std::set<int> layers(impl_->layers.begin(), impl_->layers.end());
  const size_t n = ir.nodes.size();
  for (size_t f = 0; f < n; ++f)
    if (is_fused(ir.nodes[f])) rw.defuse(static_cast<int>(f), layers.count(static_cast<int>(f)) > 0);
  ir.drop_unused();
  rw.constants_to_variables();
  out.graph = ir.emit(&out.tensors);
  // Name each activation by its float tensor in the emitted graph.
  for (QuantizedActivation& a : out.activations) {
    const std::optional<int> q = out.graph.find(a.tensor);
    if (q) a.tensor = out.graph.tensor_name(out.graph.node(*q).inputs[0]);
  }
  std::sort(out.notes.begin(), out.notes.end());
  out.notes.erase(std::unique(out.notes.begin(), out.notes.end()), out.notes.end());
  return out;
}

}  // namespace hub
