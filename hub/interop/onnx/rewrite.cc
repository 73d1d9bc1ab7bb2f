#include "hub/interop/onnx/rewrite.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "hub/core/error.h"
#include "hub/core/text.h"
#include "hub/interop/onnx/model.h"

namespace hub::onnx_interop {

namespace {

using ::onnx::AttributeProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;

// The experimental operators of opsets 1 to 9, all element-wise.
const std::set<std::string>& experimental_ops() {
  static const std::set<std::string> ops{"ImageScaler",        "Scale",          "Affine", "ScaledTanh",
                                         "ParametricSoftplus", "ThresholdedRelu"};
  return ops;
}

const std::set<std::string>& quantized_ops() {
  static const std::set<std::string> ops{"QLinearConv", "ConvInteger", "QLinearMatMul", "MatMulInteger",
                                         "DynamicQuantizeLinear"};
  return ops;
}

const AttributeProto* find_attr(const NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

void erase_attr(NodeProto& n, const std::string& name) {
  auto* attrs = n.mutable_attribute();
  for (int i = attrs->size() - 1; i >= 0; --i)
    if (attrs->Get(i).name() == name) attrs->DeleteSubrange(i, 1);
}

AttributeProto* set_attr(NodeProto& n, const std::string& name, AttributeProto::AttributeType type) {
  erase_attr(n, name);
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(type);
  return a;
}

// Every value's dims as ONNX's shape inference found them over `copy`; a
// value inference did not reach is absent.
std::map<std::string, std::vector<int64_t>> inferred_dims(::onnx::ModelProto copy, const std::string& where) {
  try {
    infer_shapes(copy, where);
  } catch (const Error&) {
    // What inference reached stays in the copy; the model's own inference
    // after conversion reports the error.
  }
  std::map<std::string, std::vector<int64_t>> dims;
  auto add = [&](const ::onnx::ValueInfoProto& v) {
    if (std::optional<Shape> s = shape_of(v.type())) dims[v.name()] = s->dims();
  };
  const ::onnx::GraphProto& g = copy.graph();
  for (const auto& v : g.input()) add(v);
  for (const auto& v : g.value_info()) add(v);
  for (const auto& v : g.output()) add(v);
  for (const auto& t : g.initializer()) dims[t.name()] = std::vector<int64_t>(t.dims().begin(), t.dims().end());
  return dims;
}

// Rewrites a graph node by node: the experimental operators into standard
// ones of the model's own opset (expand), nodes of opsets 1 to 6 into their
// opset-7 forms (upgrade), or the quantized operators into the QDQ form
// (decompose_quantized). The opset-6 forms that need ranks (legacy
// broadcasting along an axis, PRelu's slope, Tile-1) wait for a second
// pass: ONNX's inference at opsets 1 to 6 lacks functions for several ops
// (Reshape-1), so it runs over the model at opset 7 with those nodes read as
// Identity of their first input, which has their output's rank.
class Rewriter {
 public:
  Rewriter(::onnx::ModelProto& model, int opset, const std::string& where)
      : model_(model), g_(*model.mutable_graph()), opset_(opset), where_(where) {
    for (const auto& v : g_.input()) names_.insert(v.name());
    for (const auto& t : g_.initializer()) names_.insert(t.name());
    for (const auto& n : g_.node()) names_.insert(n.output().begin(), n.output().end());
  }

  void set_dims(std::map<std::string, std::vector<int64_t>> dims) { dims_ = std::move(dims); }

  void expand() {
    rewrite([&](NodeProto& n) {
      if (!experimental_ops().count(n.op_type())) return true;
      expand_experimental(n);
      return false;
    });
  }

  void upgrade() {
    std::set<int> ranked;
    rewrite([&](NodeProto& n) {
      erase_attr(n, "consumed_inputs");
      if (needs_ranks(n))
        ranked.insert(index_);
      else
        to_opset7(n);
      return true;
    });
    ::onnx::ModelProto shadow = model_;
    set_opset7(shadow);
    for (int i : ranked) {
      NodeProto& n = *shadow.mutable_graph()->mutable_node(i);
      n.set_op_type("Identity");
      n.clear_attribute();
      while (n.input_size() > 1) n.mutable_input()->RemoveLast();
    }
    dims_ = inferred_dims(std::move(shadow), where_);
    rewrite([&](NodeProto& n) {
      if (ranked.count(index_)) with_ranks(n);
      return true;
    });
    set_opset7(model_);
  }

  // Quantized operators (model converted to kTargetOpset, dims set).
  void decompose_quantized() {
    rewrite([&](NodeProto& n) {
      const std::string& op = n.op_type();
      if (op == "QLinearConv" || op == "ConvInteger")
        integer_conv(n);
      else if (op == "QLinearMatMul" || op == "MatMulInteger")
        integer_matmul(n);
      else if (op == "DynamicQuantizeLinear")
        dynamic_quantize(n);
      else
        return true;
      return false;
    });
  }

 private:
  [[noreturn]] void fail(const NodeProto& n, const std::string& what) const {
    throw_error(Code::kInvalidArgument, where_ + ": node " + std::to_string(index_) + " '" + printable(n.name()) +
                                            "' (" + printable(n.op_type()) + ", opset " + std::to_string(opset_) +
                                            "): " + what);
  }

  // The rank of `value` as inference found it; refused where it did not.
  int64_t rank(const NodeProto& n, const std::string& value, const std::string& why) const {
    auto d = dims_.find(value);
    if (d == dims_.end())
      fail(n, why + " needs the rank of '" + printable(value) + "', which ONNX's shape inference could not find");
    return static_cast<int64_t>(d->second.size());
  }

  // The integers a constant value holds (an initializer, or a Constant
  // node's value), each refused outside [lo, hi].
  std::vector<int64_t> constant_ints(const NodeProto& n, const std::string& value, const std::string& what, int64_t lo,
                                     int64_t hi) const {
    const TensorProto* t = nullptr;
    for (const auto& init : g_.initializer())
      if (init.name() == value) t = &init;
    for (int i = 0; i < index_ && !t; ++i) {
      const NodeProto& c = old_.Get(i);
      if (c.op_type() == "Constant" && c.output_size() == 1 && c.output(0) == value)
        if (const AttributeProto* a = find_attr(c, "value"); a && a->has_t()) t = &a->t();
    }
    if (!t) fail(n, what + " ('" + printable(value) + "') must be a constant (an initializer or a Constant)");
    if (t->data_type() != TensorProto::INT64 && t->data_type() != TensorProto::INT32)
      fail(n, what + " ('" + printable(value) + "') must hold int32 or int64 values");
    const Tensor values = tensor_from_onnx(*t, where_ + ": " + what + " '" + printable(value) + "'");
    std::vector<int64_t> out;
    for (int64_t i = 0; i < values.num_elements(); ++i) {
      const int64_t v = values.dtype() == DType::kInt64 ? values.data<int64_t>()[i] : values.data<int32_t>()[i];
      if (v < lo || v > hi)
        fail(n, what + " ('" + printable(value) + "') holds " + std::to_string(v) + ", outside [" + std::to_string(lo) +
                    ", " + std::to_string(hi) + "]");
      out.push_back(v);
    }
    return out;
  }

  // A value name no other value has, from `base`.
  std::string fresh(const std::string& base) {
    std::string name = base;
    for (int i = 1; names_.count(name); ++i) name = base + "_" + std::to_string(i);
    names_.insert(name);
    return name;
  }

  // A new initializer; before IR version 4 each is a graph input too.
  std::string initializer(const std::string& base, const Tensor& t) {
    auto* p = g_.add_initializer();
    tensor_to_onnx(t, p);
    p->set_name(fresh(base));
    if (model_.ir_version() < 4) {
      auto* v = g_.add_input();
      v->set_name(p->name());
      auto* type = v->mutable_type()->mutable_tensor_type();
      type->set_elem_type(p->data_type());
      auto* shape = type->mutable_shape();
      for (int64_t d : p->dims()) shape->add_dim()->set_dim_value(d);
    }
    return p->name();
  }

  // Appends a node of `op` named after `from`, in the model's opset (a
  // binary op broadcasts its second input before opset 7); returns it, its
  // output `out` or a new value.
  NodeProto& emit(const NodeProto& from, const std::string& op, const std::vector<std::string>& inputs,
                  const std::string& out = "") {
    NodeProto& n = *g_.add_node();
    n.set_op_type(op);
    n.set_name(from.name() + "/" + op);
    for (const auto& in : inputs) n.add_input(in);
    n.add_output(out.empty() ? fresh(from.name() + "/" + op + ":0") : out);
    if (opset_ < 7 && inputs.size() == 2) set_attr(n, "broadcast", AttributeProto::INT)->set_i(1);
    return n;
  }

  // `value` with dims of 1 appended until it has `rank` dims (from `have`).
  std::string append_unit_dims(const NodeProto& from, const std::string& value, int64_t have, int64_t rank) {
    if (have >= rank) return value;
    NodeProto& u = emit(from, "Unsqueeze", {value});
    auto* axes = set_attr(u, "axes", AttributeProto::INTS);
    for (int64_t a = have; a < rank; ++a) axes->add_ints(a);
    return u.output(0);
  }

  // Runs `f` over each node (a copy, appended where it returns true; what it
  // emits comes before).
  template <class F>
  void rewrite(F f) {
    old_.Clear();
    old_.Swap(g_.mutable_node());
    for (index_ = 0; index_ < old_.size(); ++index_) {
      NodeProto n = old_.Get(index_);
      if (f(n)) *g_.add_node() = std::move(n);
    }
  }

  static void set_opset7(::onnx::ModelProto& model) {
    for (auto& op : *model.mutable_opset_import())
      if (op.domain().empty() || op.domain() == "ai.onnx") op.set_version(7);
  }

  static bool aligned_broadcast(const NodeProto& n) {
    static const std::set<std::string> ops{"Add", "Sub", "Mul",   "Div",     "Pow", "And",
                                           "Or",  "Xor", "Equal", "Greater", "Less"};
    const AttributeProto* b = find_attr(n, "broadcast");
    return ops.count(n.op_type()) && b && b->i() != 0 && find_attr(n, "axis") && n.input_size() == 2;
  }

  bool needs_ranks(const NodeProto& n) const {
    return aligned_broadcast(n) || (n.op_type() == "PRelu" && n.input_size() == 2) ||
           (n.op_type() == "Tile" && opset_ < 6);
  }

  void with_ranks(NodeProto& n) {
    if (n.op_type() == "Tile") {
      tile(n);
    } else if (n.op_type() == "PRelu") {
      // Opset 6's slope is per channel (axis 1) where it is not one value;
      // NumPy's rules align a [C] slope with the last axis instead.
      const auto slope = dims_.find(n.input(1));
      if (slope != dims_.end() && slope->second.size() == 1 && slope->second[0] != 1) {
        const int64_t r = rank(n, n.input(0), "a per-channel slope");
        if (r >= 3) n.set_input(1, append_unit_dims(n, n.input(1), 1, r - 1));
      }
    } else {
      broadcast(n);
    }
  }

  float float_attr(const NodeProto& n, const std::string& name, std::optional<float> fallback) const {
    const AttributeProto* a = find_attr(n, name);
    if (!a && !fallback) fail(n, "attribute " + name + " is required");
    return a ? a->f() : *fallback;
  }

  // The forms that need no ranks.
  void to_opset7(NodeProto& n) {
    static const std::set<std::string> legacy_broadcast{"Add", "Sub", "Mul",   "Div",     "Pow",  "And",
                                                        "Or",  "Xor", "Equal", "Greater", "Less", "Gemm"};
    const std::string& op = n.op_type();
    if (legacy_broadcast.count(op)) {
      // Without an axis, legacy broadcasting matches B with A's last dims,
      // as NumPy's rules do; Gemm's C always broadcasts from opset 7.
      erase_attr(n, "broadcast");
      erase_attr(n, "axis");
    } else if (op == "BatchNormalization" || op == "Dropout") {
      const AttributeProto* test = find_attr(n, "is_test");
      if (!test || test->i() == 0)
        fail(n, "is_test = 0 (training mode, the default before opset 7): hub imports models for inference");
      erase_attr(n, "is_test");
    } else if (op == "Cast" && opset_ < 6) {
      const AttributeProto* to = find_attr(n, "to");
      if (to && to->type() == AttributeProto::STRING) {
        std::string name = to->s();
        std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::toupper(c); });
        TensorProto::DataType type;
        if (!TensorProto::DataType_Parse(name, &type) || type == TensorProto::UNDEFINED)
          fail(n, "attribute to = '" + printable(to->s()) + "' names no ONNX data type");
        set_attr(n, "to", AttributeProto::INT)->set_i(type);
      }
    } else if (op == "Concat" && opset_ < 4) {
      if (!find_attr(n, "axis")) set_attr(n, "axis", AttributeProto::INT)->set_i(1);
    } else if (op == "Reshape" && opset_ < 5) {
      const AttributeProto* shape = find_attr(n, "shape");
      if (!shape) fail(n, "attribute shape is required");
      const std::vector<int64_t> dims(shape->ints().begin(), shape->ints().end());
      erase_attr(n, "shape");
      n.add_input(initializer(n.name() + "/shape",
                              Tensor::from_vector<int64_t>(Shape{static_cast<int64_t>(dims.size())}, dims)));
    } else if (op == "Pad" && opset_ < 2) {
      if (const AttributeProto* p = find_attr(n, "paddings")) {
        AttributeProto pads = *p;
        pads.set_name("pads");
        erase_attr(n, "paddings");
        *n.add_attribute() = pads;
      }
    } else if (op == "Split" && opset_ < 2 && n.input_size() == 2) {
      if (!n.input(1).empty()) {
        const std::vector<int64_t> split =
            constant_ints(n, n.input(1), "input 1 (split)", 0, std::numeric_limits<int32_t>::max());
        auto* a = set_attr(n, "split", AttributeProto::INTS);
        for (int64_t s : split) a->add_ints(s);
      }
      n.mutable_input()->RemoveLast();
    } else if (op == "Upsample") {
      upsample(n);
    } else if (op == "GRU" || op == "LSTM" || op == "RNN") {
      erase_attr(n, "output_sequence");
    }
  }

  // Legacy broadcasting along an axis: B's dims match A's from `axis` on.
  void broadcast(NodeProto& n) {
    const int64_t axis = find_attr(n, "axis")->i();
    erase_attr(n, "broadcast");
    erase_attr(n, "axis");
    const std::string why = "broadcasting along axis " + std::to_string(axis);
    const int64_t ra = rank(n, n.input(0), why);
    const int64_t rb = rank(n, n.input(1), why);
    const int64_t a = axis < 0 ? axis + ra : axis;
    if (a < 0 || a + rb > ra)
      fail(n, "axis " + std::to_string(axis) + " places B's " + std::to_string(rb) + " dims outside A's " +
                  std::to_string(ra));
    n.set_input(1, append_unit_dims(n, n.input(1), rb, ra - a));
  }

  // Tile-1: `tiles` copies along `axis`, both scalar inputs.
  void tile(NodeProto& n) {
    if (n.input_size() != 3) fail(n, "Tile before opset 6 takes input, tiles and axis");
    const int64_t r = rank(n, n.input(0), "Tile's repeats");
    const std::vector<int64_t> tiles =
        constant_ints(n, n.input(1), "input 1 (tiles)", 0, std::numeric_limits<int32_t>::max());
    const std::vector<int64_t> axis = constant_ints(n, n.input(2), "input 2 (axis)", -r, r - 1);
    if (tiles.size() != 1 || axis.size() != 1) fail(n, "tiles and axis must be one value each");
    std::vector<int64_t> repeats(static_cast<size_t>(r), 1);
    repeats[static_cast<size_t>(axis[0] < 0 ? axis[0] + r : axis[0])] = tiles[0];
    n.mutable_input()->DeleteSubrange(1, 2);
    n.add_input(initializer(n.name() + "/repeats", Tensor::from_vector<int64_t>(Shape{r}, repeats)));
  }

  // Upsample-1 (NCHW): height_scale and width_scale; mode nearest or bilinear.
  void upsample(NodeProto& n) {
    const float h = float_attr(n, "height_scale", std::nullopt);
    const float w = float_attr(n, "width_scale", std::nullopt);
    const AttributeProto* m = find_attr(n, "mode");
    const std::string mode = m ? m->s() : "nearest";
    if (mode != "nearest" && mode != "bilinear")
      fail(n, "attribute mode = '" + printable(mode) + "'; Upsample before opset 7 has nearest and bilinear");
    erase_attr(n, "height_scale");
    erase_attr(n, "width_scale");
    set_attr(n, "mode", AttributeProto::STRING)->set_s(mode == "bilinear" ? "linear" : "nearest");
    auto* scales = set_attr(n, "scales", AttributeProto::FLOATS);
    for (float s : {1.0f, 1.0f, h, w}) scales->add_floats(s);
  }

  void expand_experimental(const NodeProto& n) {
    if (n.input_size() != 1 || n.output_size() != 1) fail(n, "takes one input and gives one output");
    const std::string& op = n.op_type();
    const std::string& x = n.input(0);
    const std::string& y = n.output(0);
    auto scalar = [&](const std::string& name, float v) {
      return initializer(n.name() + "/" + name, Tensor::scalar(v));
    };
    if (op == "ImageScaler") {
      // scale * x + bias[c] over NCHW.
      const AttributeProto* bias = find_attr(n, "bias");
      const std::vector<float> b =
          bias ? std::vector<float>(bias->floats().begin(), bias->floats().end()) : std::vector<float>{0.0f};
      const std::string scaled = emit(n, "Mul", {x, scalar("scale", float_attr(n, "scale", 1.0f))}).output(0);
      emit(n, "Add",
           {scaled, initializer(n.name() + "/bias",
                                Tensor::from_vector<float>(Shape{1, static_cast<int64_t>(b.size()), 1, 1}, b))},
           y);
    } else if (op == "Scale") {
      emit(n, "Mul", {x, scalar("scale", float_attr(n, "scale", 1.0f))}, y);
    } else if (op == "Affine") {
      const std::string scaled = emit(n, "Mul", {x, scalar("alpha", float_attr(n, "alpha", 1.0f))}).output(0);
      emit(n, "Add", {scaled, scalar("beta", float_attr(n, "beta", 0.0f))}, y);
    } else if (op == "ScaledTanh" || op == "ParametricSoftplus") {
      // alpha * f(beta * x).
      const std::string inner = emit(n, "Mul", {x, scalar("beta", float_attr(n, "beta", std::nullopt))}).output(0);
      const std::string f = emit(n, op == "ScaledTanh" ? "Tanh" : "Softplus", {inner}).output(0);
      emit(n, "Mul", {f, scalar("alpha", float_attr(n, "alpha", std::nullopt))}, y);
    } else {  // ThresholdedRelu: x where x > alpha, else 0.
      const std::string above = emit(n, "Greater", {x, scalar("alpha", float_attr(n, "alpha", 1.0f))}).output(0);
      NodeProto& mask = emit(n, "Cast", {above});
      if (opset_ < 6)  // Cast-1 names its type
        set_attr(mask, "to", AttributeProto::STRING)->set_s("FLOAT");
      else
        set_attr(mask, "to", AttributeProto::INT)->set_i(TensorProto::FLOAT);
      emit(n, "Mul", {x, mask.output(0)}, y);
    }
  }

  // A quantization parameter as DequantizeLinear/QuantizeLinear take it: a
  // 1-D tensor of one element (which these ops read as per tensor) as a
  // scalar.
  std::string per_tensor_or_axis(const NodeProto& n, const std::string& value, bool* per_axis) {
    auto d = dims_.find(value);
    if (d == dims_.end())
      fail(n, "quantization parameter '" + printable(value) + "' has a shape ONNX's shape inference could not find");
    *per_axis = d->second.size() == 1 && d->second[0] != 1;
    if (d->second.size() > 1 || (d->second.size() == 1 && !*per_axis && d->second[0] != 1))
      fail(n, "quantization parameter '" + printable(value) + "' must be a scalar or 1-D");
    if (d->second.size() == 0 || *per_axis) return value;
    if (!scalar_shape_) scalar_shape_ = initializer("hub/scalar_shape", Tensor(DType::kInt64, Shape{0}));
    return emit(n, "Reshape", {value, *scalar_shape_}).output(0);
  }

  // DequantizeLinear(value, scale, zero_point) along `axis` where the scale
  // is per axis; an absent scale is 1 (the integer ops: value - zero_point,
  // exactly, as float).
  std::string dequantize(const NodeProto& n, const std::string& value, const std::string& scale,
                         const std::string& zero_point, int64_t axis) {
    bool scale_axis = false, zero_axis = false;
    std::vector<std::string> in{value};
    const std::string z = zero_point.empty() ? "" : per_tensor_or_axis(n, zero_point, &zero_axis);
    if (!scale.empty()) {
      in.push_back(per_tensor_or_axis(n, scale, &scale_axis));
    } else if (zero_axis) {  // ones in the zero point's shape
      NodeProto& ones = emit(n, "ConstantOfShape", {emit(n, "Shape", {z}).output(0)});
      tensor_to_onnx(Tensor::from_vector<float>(Shape{1}, {1.0f}),
                     set_attr(ones, "value", AttributeProto::TENSOR)->mutable_t());
      in.push_back(ones.output(0));
    } else {
      in.push_back(initializer(n.name() + "/unit_scale", Tensor::scalar(1.0f)));
    }
    if (!z.empty()) in.push_back(z);
    NodeProto& d = emit(n, "DequantizeLinear", in);
    if (scale_axis || zero_axis) set_attr(d, "axis", AttributeProto::INT)->set_i(axis);
    return d.output(0);
  }

  // The float op's result: quantized with the node's output scale and zero
  // point (QLinear*), or cast to int32 (*Integer, exact while the float32
  // sums stay below 2^24).
  void finish(const NodeProto& n, const std::string& result, bool qlinear) {
    if (qlinear) {
      bool axis = false;
      const std::string scale = per_tensor_or_axis(n, n.input(6), &axis);
      std::vector<std::string> in{result, scale};
      if (!n.input(7).empty()) in.push_back(per_tensor_or_axis(n, n.input(7), &axis));
      if (axis) fail(n, "the output's scale and zero point must be per tensor");
      emit(n, "QuantizeLinear", in, n.output(0));
    } else {
      set_attr(emit(n, "Cast", {result}, n.output(0)), "to", AttributeProto::INT)->set_i(TensorProto::INT32);
    }
  }

  std::string input_or_empty(const NodeProto& n, int i) const { return i < n.input_size() ? n.input(i) : ""; }

  // QLinearConv (x, x_scale, x_zero_point, w, w_scale, w_zero_point,
  // y_scale, y_zero_point, B) and ConvInteger (x, w, x_zero_point,
  // w_zero_point): Conv of the dequantized tensors (w per output channel),
  // with QLinearConv's int32 bias dequantized at x_scale * w_scale.
  void integer_conv(const NodeProto& n) {
    const bool qlinear = n.op_type() == "QLinearConv";
    if (n.input_size() < (qlinear ? 8 : 2) || n.output_size() != 1) fail(n, "has too few inputs or outputs");
    const std::string x = qlinear ? dequantize(n, n.input(0), n.input(1), n.input(2), 1)
                                  : dequantize(n, n.input(0), "", input_or_empty(n, 2), 1);
    const std::string w = qlinear ? dequantize(n, n.input(3), n.input(4), n.input(5), 0)
                                  : dequantize(n, n.input(1), "", input_or_empty(n, 3), 0);
    std::vector<std::string> in{x, w};
    if (qlinear && !input_or_empty(n, 8).empty()) {
      bool x_axis = false, w_axis = false;
      const std::string bias_scale =
          emit(n, "Mul", {per_tensor_or_axis(n, n.input(1), &x_axis), per_tensor_or_axis(n, n.input(4), &w_axis)})
              .output(0);
      NodeProto& b = emit(n, "DequantizeLinear", {n.input(8), bias_scale});
      if (x_axis || w_axis) set_attr(b, "axis", AttributeProto::INT)->set_i(0);
      in.push_back(b.output(0));
    }
    NodeProto& conv = emit(n, "Conv", in);
    for (const auto& a : n.attribute()) *conv.add_attribute() = a;
    finish(n, conv.output(0), qlinear);
  }

  // QLinearMatMul (a, a_scale, a_zero_point, b, b_scale, b_zero_point,
  // y_scale, y_zero_point) and MatMulInteger (a, b, a_zero_point,
  // b_zero_point): MatMul of the dequantized tensors, a's parameters per
  // row and b's per column where they are 1-D.
  void integer_matmul(const NodeProto& n) {
    const bool qlinear = n.op_type() == "QLinearMatMul";
    if (n.input_size() < (qlinear ? 8 : 2) || n.output_size() != 1) fail(n, "has too few inputs or outputs");
    const std::string a = qlinear ? dequantize(n, n.input(0), n.input(1), n.input(2), -2)
                                  : dequantize(n, n.input(0), "", input_or_empty(n, 2), -2);
    const std::string b = qlinear ? dequantize(n, n.input(3), n.input(4), n.input(5), -1)
                                  : dequantize(n, n.input(1), "", input_or_empty(n, 3), -1);
    finish(n, emit(n, "MatMul", {a, b}).output(0), qlinear);
  }

  // DynamicQuantizeLinear: uint8 over [min(x, 0), max(x, 0)]: scale =
  // (max - min) / 255, zero point = clamp(round(-min / scale), 0, 255)
  // (ties to even), y = QuantizeLinear(x, scale, zero point).
  void dynamic_quantize(const NodeProto& n) {
    if (n.input_size() != 1 || n.output_size() != 3) fail(n, "takes one input and gives three outputs");
    auto scalar = [&](const std::string& name, float v) {
      return initializer(n.name() + "/" + name, Tensor::scalar(v));
    };
    auto reduce = [&](const char* op) {
      NodeProto& r = emit(n, op, {n.input(0)});
      set_attr(r, "keepdims", AttributeProto::INT)->set_i(0);
      return r.output(0);
    };
    const std::string zero = scalar("zero", 0.0f);
    const std::string lo = emit(n, "Min", {reduce("ReduceMin"), zero}).output(0);
    const std::string hi = emit(n, "Max", {reduce("ReduceMax"), zero}).output(0);
    const std::string scale =
        emit(n, "Div", {emit(n, "Sub", {hi, lo}).output(0), scalar("levels", 255.0f)}, n.output(1)).output(0);
    const std::string point = emit(n, "Div", {emit(n, "Neg", {lo}).output(0), scale}).output(0);
    const std::string rounded =
        emit(n, "Clip", {emit(n, "Round", {point}).output(0), zero, scalar("max", 255.0f)}).output(0);
    set_attr(emit(n, "Cast", {rounded}, n.output(2)), "to", AttributeProto::INT)->set_i(TensorProto::UINT8);
    emit(n, "QuantizeLinear", {n.input(0), scale, n.output(2)}, n.output(0));
  }

  ::onnx::ModelProto& model_;
  ::onnx::GraphProto& g_;
  const int opset_;
  const std::string& where_;
  std::map<std::string, std::vector<int64_t>> dims_;
  std::set<std::string> names_;
  google::protobuf::RepeatedPtrField<NodeProto> old_;
  int index_ = 0;
  std::optional<std::string> scalar_shape_;  // the [0]-shaped int64 shape of a scalar
};

}  // namespace

const std::set<std::string>& rewritten_operators() {
  static const std::set<std::string> ops = [] {
    std::set<std::string> all = experimental_ops();
    all.insert(quantized_ops().begin(), quantized_ops().end());
    return all;
  }();
  return ops;
}

void expand_experimental_operators(::onnx::ModelProto& model, int opset, const std::string& where) {
  if (opset < 10) Rewriter(model, opset, where).expand();
}

void upgrade_to_opset7(::onnx::ModelProto& model, int opset, const std::string& where) {
  if (opset < 7) Rewriter(model, opset, where).upgrade();
}

void decompose_quantized_operators(::onnx::ModelProto& model, int opset, const std::string& where) {
  const auto& nodes = model.graph().node();
  if (std::none_of(nodes.begin(), nodes.end(), [](const NodeProto& n) { return quantized_ops().count(n.op_type()); }))
    return;
  Rewriter rewriter(model, opset, where);
  rewriter.set_dims(inferred_dims(model, where));
  rewriter.decompose_quantized();
}

}  // namespace hub::onnx_interop
