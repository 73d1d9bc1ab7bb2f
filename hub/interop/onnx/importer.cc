#include "hub/interop/onnx/importer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>
#include <map>

#include "hub/backend/backend.h"
#include "hub/core/digest.h"
#include "hub/core/error.h"
#include "hub/core/fileio.h"
#include "hub/graph/graph.h"
#include "hub/graph/session.h"
#include "hub/interop/onnx/convert.h"
#include "hub/interop/onnx/model.h"
#include "hub/ops/array.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/state.h"

namespace hub::onnx_interop {

namespace {

// hub node names may not contain ':' (it separates the output index).
std::string sanitize(const std::string& name) {
  std::string out = name;
  std::replace(out.begin(), out.end(), ':', '_');
  return out.empty() ? "_" : out;
}

// A folded DequantizeLinear of int8 constants with zero point 0: its int8
// values and scales (per tensor, or along `axis`), so that a weight made of
// it stays int8 (GraphContext::weight) and runs on the int8 kernels
// (docs/quantization.md "How it runs fast").
struct QuantizedConstant {
  Tensor q;
  Tensor scale;
  int64_t axis = -1;  // -1: per tensor
};

struct Value {
  std::optional<Tensor> constant;  // known at import, ONNX order
  std::optional<QuantizedConstant> quantized;
  std::optional<SymShape> symbolic;  // a shape computed with run-time dims
  Output out;                        // materialised in the graph being built
  bool nhwc = false;                 // `out` is the NHWC form of a 4-D value
  Output other;                      // cached conversion to the other layout
  std::string unavailable;           // why it cannot exist at run time
};

// Static facts about ONNX values: shape inference's shapes and dtypes.
struct ValueInfo {
  std::optional<Shape> shape;
  int elem_type = 0;
};

class Importer;

// The context of one node: builds into `graph_`, reading inputs from
// `values_` (the import's table, or a scratch table of constants when folding).
class GraphContext final : public NodeContext {
 public:
  GraphContext(Importer& importer, const ::onnx::NodeProto& node, Graph& graph, std::map<std::string, Value>& values,
               bool folding);

  Shape shape(int i) const override;
  DType dtype(int i) const override;
  std::optional<Tensor> constant(int i) const override { return value(i).constant; }
  Output native(int i) override;
  Output nhwc(int i) override;
  bool is_nhwc(int i) const override { return value(i).out.valid() && value(i).nhwc; }
  Output weight(int i, const std::function<Tensor(const Tensor&)>& transform, bool trainable) override;
  Output constant_output(const Tensor& value, const std::string& name) override {
    return ops::constant(scope(), value, name);
  }
  std::optional<Shape> output_shape(int i) const override;
  void set_output(int i, Output value, bool nhwc) override;
  void set_constant(int i, const Tensor& value) override { constants_[i] = value; }
  std::optional<SymShape> symbolic(int i) const override;
  void set_symbolic(int i, SymShape value) override { symbolic_[i] = std::move(value); }
  std::pair<Output, int> dim_source(const SymDim& d) override;
  Subgraphs subgraphs(const std::vector<std::string>& attrs, const std::vector<SubgraphFrame>& frames) override;
  const std::map<int, SymShape>& symbolic_outputs() const { return symbolic_; }

  // Outputs set by the mapper, by index.
  const std::map<int, std::pair<Output, bool>>& outputs() const { return outputs_; }
  const std::map<int, Tensor>& constants() const { return constants_; }

 private:
  const Value& value(int i) const;
  Value& mutable_value(int i);
  Output materialise(int i);
  std::optional<Output> quantized_weight(int i, const std::function<Tensor(const Tensor&)>& transform, const Tensor& w);

  Importer& importer_;
  Graph& graph_;
  std::map<std::string, Value>& values_;
  bool folding_;
  std::map<int, std::pair<Output, bool>> outputs_;
  std::map<int, Tensor> constants_;
  std::map<int, SymShape> symbolic_;
};

class Importer {
 public:
  Importer(const std::string& path, const OnnxImportOptions& options)
      : options_(options), model_(load_onnx_model(path)) {}

  ModuleSpec run();

  const std::string& path() const { return model_.path; }
  const ValueInfo* info(const std::string& name) const {
    auto it = info_.find(name);
    return it == info_.end() ? nullptr : &it->second;
  }
  // The module variable for a weight (created once per name).
  Output variable(Graph& g, const std::string& onnx_name, const Tensor& value, bool trainable);
  // Value `name`, a shape value with run-time elements (symbolic), as a tensor
  // computed at run time from the shapes of the tensors it is made of;
  // Deferred (an error only if the value is needed) where hub cannot.
  Output symbolic_tensor(const std::string& name);
  // Control flow's subgraphs (NodeContext::subgraphs) of `node`.
  NodeContext::Subgraphs import_subgraphs(const ::onnx::NodeProto& node, const std::vector<std::string>& attrs,
                                          const std::vector<NodeContext::SubgraphFrame>& frames);
  // Inside a subgraph, weights are constants of the subgraph (module
  // variables live in the main graph).
  bool in_subgraph() const { return depth_ > 0; }

 private:
  void collect_info();
  void add_info(const ::onnx::GraphProto& g);
  void add_initializers(const ::onnx::GraphProto& g, const std::string& where);
  // An If whose condition is known at import: the branch it takes is
  // imported in its place (its values become the If's outputs).
  void inline_branch(const ::onnx::NodeProto& node, const std::string& where);
  // Maps every node, starting from values_ holding the initializers and the
  // graph inputs' values.
  void import_body();
  void import_node(const ::onnx::NodeProto& node, int index);
  // The image signatures (options_): images -> normalised NHWC -> a second
  // copy of the body (sharing its variables) -> features and logits.
  void add_image_signatures(const std::map<std::string, Value>& initial,
                            std::map<std::string, SignatureInfo>& signatures,
                            std::map<std::string, AttachedValue>& attached);
  // The ONNX value holding the feature vector and the classifier node.
  std::pair<std::string, const ::onnx::NodeProto*> find_features() const;
  Output as_matrix(const std::string& name, const std::string& node_name);
  // Evaluates a node of constant inputs at import; false (nothing done) where
  // its output would outgrow the bound (hub/interop/fold.h): it is then
  // mapped to run in the graph instead.
  bool fold(const ::onnx::NodeProto& node, const OpMapper& mapper);
  // Records a folded DequantizeLinear's int8 form (QuantizedConstant).
  void note_quantized(const ::onnx::NodeProto& node);
  Output graph_output(const std::string& name);
  std::map<std::string, AttachedValue> provenance() const;

  OnnxImportOptions options_;
  OnnxModel model_;
  Graph graph_;
  std::map<std::string, Value> values_;
  std::map<std::string, ValueInfo> info_;
  TensorMap weights_;
  // Variables by ONNX name, with the value each holds: a second import of the
  // body reuses them.
  std::map<std::string, std::vector<std::pair<Tensor, Output>>> variables_;
  int depth_ = 0;             // subgraphs being imported around the current node
  int subgraph_imports_ = 0;  // subgraphs imported so far (interop::kMaxSubgraphImports)
};

// ---- GraphContext ------------------------------------------------------------

GraphContext::GraphContext(Importer& importer, const ::onnx::NodeProto& node, Graph& graph,
                           std::map<std::string, Value>& values, bool folding)
    : NodeContext(node, Scope(graph).sub(sanitize(node.name().empty() ? node.op_type() : node.name())),
                  importer.path()),
      importer_(importer),
      graph_(graph),
      values_(values),
      folding_(folding) {}

const Value& GraphContext::value(int i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is missing");
  auto it = values_.find(node().input(i));
  if (it == values_.end()) fail("input '" + node().input(i) + "' is produced by no earlier node");
  return it->second;
}

Value& GraphContext::mutable_value(int i) { return const_cast<Value&>(value(i)); }

Shape GraphContext::shape(int i) const {
  const Value& v = value(i);
  if (v.constant) return v.constant->shape();
  if (const ValueInfo* info = importer_.info(node().input(i)); info && info->shape) return *info->shape;
  if (v.out.valid()) {
    Shape s = graph_.spec(v.out).shape;
    if (v.nhwc && s.rank() == 4) return Shape{s[0], s[3], s[1], s[2]};
    return s;
  }
  fail("the shape of input '" + node().input(i) + "' is unknown");
}

DType GraphContext::dtype(int i) const {
  const Value& v = value(i);
  if (v.constant) return v.constant->dtype();
  if (v.out.valid()) return graph_.spec(v.out).dtype;
  if (const ValueInfo* info = importer_.info(node().input(i)); info && info->elem_type)
    return dtype_from_onnx(info->elem_type, "input '" + node().input(i) + "'");
  fail("the type of input '" + node().input(i) + "' is unknown");
}

std::pair<Output, int> GraphContext::dim_source(const SymDim& d) {
  if (d.derived) fail("a run-time dim computed by arithmetic (batch x heads) is not a dim of one tensor here");
  auto it = values_.find(d.tensor);
  if (it == values_.end() || !it->second.out.valid())
    fail("the run-time dim " + std::to_string(d.dim) + " of '" + d.tensor + "' is not available here");
  const Value& v = it->second;
  return {v.out, v.nhwc ? static_cast<int>(nhwc_axis(d.dim)) : d.dim};
}

std::optional<SymShape> GraphContext::symbolic(int i) const {
  const Value& v = value(i);
  if (v.symbolic) return v.symbolic;
  if (v.constant && v.constant->rank() <= 1 &&
      (v.constant->dtype() == DType::kInt64 || v.constant->dtype() == DType::kInt32)) {
    SymShape s;
    for (int64_t x : constant_ints(i, "input")) s.push_back(SymDim::constant(x));
    return s;
  }
  return std::nullopt;
}

Output GraphContext::materialise(int i) {
  Value& v = mutable_value(i);
  if (!v.unavailable.empty()) throw Deferred{v.unavailable};
  if (!v.out.valid() && v.symbolic && !v.constant) {
    v.out = importer_.symbolic_tensor(node().input(i));
    v.nhwc = false;
  }
  if (!v.out.valid()) {
    if (!v.constant) fail("input '" + node().input(i) + "' has no value");
    v.out = ops::constant(Scope(graph_), *v.constant, graph_.unique_name(sanitize(node().input(i))));
    v.nhwc = false;
  }
  return v.out;
}

// NCHW <-> NHWC. A free reshape when only size-1 dimensions move (C == 1, or
// H == W == 1), a Transpose otherwise.
Output change_layout(const Scope& s, Output x, const Shape& logical, bool to_nhwc) {
  const bool trivial = logical[1] == 1 || (logical[2] == 1 && logical[3] == 1);
  if (trivial) {
    Shape target = to_nhwc ? Shape{logical[0], logical[2], logical[3], logical[1]} : logical;
    int unknown = 0;
    for (int64_t d : target.dims()) unknown += d < 0;
    if (unknown <= 1) {
      std::vector<int64_t> dims = target.dims();
      return ops::reshape(s, x, dims, to_nhwc ? "to_nhwc" : "to_nchw");
    }
  }
  return ops::transpose(s, x, to_nhwc ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 3, 1, 2},
                        to_nhwc ? "to_nhwc" : "to_nchw");
}

Output GraphContext::native(int i) {
  Output x = materialise(i);
  Value& v = mutable_value(i);
  if (!v.nhwc) return x;
  if (!v.other.valid()) v.other = change_layout(Scope(graph_).sub(sanitize(node().input(i))), x, shape(i), false);
  return v.other;
}

Output GraphContext::nhwc(int i) {
  if (rank(i) != 4) fail("input '" + node().input(i) + "' must be 4-D (N, C, H, W), got " + shape(i).to_string());
  Output x = materialise(i);
  Value& v = mutable_value(i);
  if (v.nhwc) return x;
  if (!v.other.valid()) v.other = change_layout(Scope(graph_).sub(sanitize(node().input(i))), x, shape(i), true);
  return v.other;
}

Output GraphContext::weight(int i, const std::function<Tensor(const Tensor&)>& transform, bool trainable) {
  const Value& v = value(i);
  if (!v.constant)
    fail("input " + std::to_string(i) + " ('" + node().input(i) + "') must be a constant (an initializer); " +
         "weights computed at run time are not supported");
  Tensor t = transform(*v.constant);
  if (folding_ || importer_.in_subgraph()) return ops::constant(scope(), t, "weight" + std::to_string(i));
  if (v.quantized)
    if (std::optional<Output> q = quantized_weight(i, transform, t)) return *q;
  return importer_.variable(graph_, node().input(i), t, trainable);
}

// Element e's coordinate along `axis` of `shape`.
int64_t coordinate(const Shape& shape, int64_t e, int axis) {
  int64_t stride = 1;
  for (int a = shape.rank() - 1; a > axis; --a) stride *= shape[a];
  return (e / stride) % shape[axis];
}

// Input i (a folded int8 DequantizeLinear) transformed to `w`, as
// DequantizeLinear(int8 variable, scales, 0): where the transform moves the
// quantization axis whole to one axis (found by transforming each element's
// index along it), and the int8 values it moved reproduce `w` exactly (a
// transform that computes falls back to the float weight).
std::optional<Output> GraphContext::quantized_weight(int i, const std::function<Tensor(const Tensor&)>& transform,
                                                     const Tensor& w) {
  const QuantizedConstant& qc = *value(i).quantized;
  int axis = -1;
  if (qc.axis >= 0) {
    const std::optional<int> moved = transformed_axis(qc.q.shape(), static_cast<int>(qc.axis), transform);
    if (!moved) return std::nullopt;
    axis = *moved;
  }
  Tensor q(DType::kInt8, w.shape());
  const float* scale = qc.scale.data<float>();
  for (int64_t e = 0; e < w.num_elements(); ++e) {
    const float s = scale[axis < 0 ? 0 : coordinate(w.shape(), e, axis)];
    const float v = std::nearbyint(w.data<float>()[e] / s);
    if (!(v >= -128 && v <= 127) || v * s != w.data<float>()[e]) return std::nullopt;
    q.data<int8_t>()[e] = static_cast<int8_t>(v);
  }
  const Scope s = scope();
  const Output values = importer_.variable(graph_, node().input(i), q, /*trainable=*/false);
  return s.op("DequantizeLinear",
              {values, ops::constant(s, qc.scale, "weight_scale"),
               ops::constant(s, Tensor::zeros(DType::kInt8, qc.scale.shape()), "weight_zero_point")},
              Attrs().set("axis", int64_t{axis < 0 ? 0 : axis}), "weight");
}

std::optional<Shape> GraphContext::output_shape(int i) const {
  if (i >= node().output_size()) return std::nullopt;
  const ValueInfo* info = importer_.info(node().output(i));
  return info ? info->shape : std::nullopt;
}

void GraphContext::set_output(int i, Output value, bool nhwc) {
  HUB_CHECK(i < node().output_size(), "mapper for " + op() + " set output " + std::to_string(i));
  if (nhwc && graph_.spec(value).shape.rank() != 4) fail("internal: an NHWC output must be 4-D");
  outputs_[i] = {value, nhwc};
}

NodeContext::Subgraphs GraphContext::subgraphs(const std::vector<std::string>& attrs,
                                               const std::vector<SubgraphFrame>& frames) {
  for (const std::string& a : attrs)
    if (!attr(a) || !attr(a)->has_g()) fail("attribute " + a + " must be a graph");
  return importer_.import_subgraphs(node(), attrs, frames);
}

// ---- Importer ------------------------------------------------------------------

Output Importer::variable(Graph& g, const std::string& onnx_name, const Tensor& value, bool trainable) {
  auto& known = variables_[onnx_name];
  for (const auto& [v, out] : known)
    if (identical(v, value)) return out;
  std::string name = g.unique_name(sanitize(onnx_name));
  ops::VariableOptions o;
  o.trainable = trainable;
  o.dtype = value.dtype();
  Output v = ops::variable(Scope(g), name, value.shape(), o);
  weights_[g.node(v).name] = value;
  known.emplace_back(value, v);
  return v;
}

void Importer::collect_info() { add_info(model_.proto.graph()); }

void Importer::add_info(const ::onnx::GraphProto& g) {
  auto add = [&](const ::onnx::ValueInfoProto& vi) {
    ValueInfo info;
    info.shape = shape_of(vi.type());
    if (vi.type().has_tensor_type()) info.elem_type = vi.type().tensor_type().elem_type();
    info_[vi.name()] = info;
  };
  for (const auto& vi : g.input()) add(vi);
  for (const auto& vi : g.value_info()) add(vi);
  for (const auto& vi : g.output()) add(vi);
}

void Importer::add_initializers(const ::onnx::GraphProto& g, const std::string& where) {
  for (const auto& t : g.initializer())
    values_[t.name()].constant = tensor_from_onnx(t, where + ": initializer '" + t.name() + "'");
}

namespace {

// The values the nodes of `g` (and of the subgraphs in them) read that `g`
// does not define, in the order first read.
void free_values(const ::onnx::GraphProto& g, std::vector<std::string>& out) {
  std::set<std::string> defined;
  for (const auto& v : g.input()) defined.insert(v.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  auto use = [&](const std::string& v) {
    if (!v.empty() && !defined.count(v) && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  };
  for (const auto& n : g.node()) {
    for (const auto& in : n.input()) use(in);
    for (const auto& a : n.attribute())
      if (a.has_g()) {
        std::vector<std::string> inner;
        free_values(a.g(), inner);
        for (const std::string& v : inner) use(v);
      }
    defined.insert(n.output().begin(), n.output().end());
  }
  for (const auto& v : g.output()) use(v.name());
}

}  // namespace

NodeContext::Subgraphs Importer::import_subgraphs(const ::onnx::NodeProto& node, const std::vector<std::string>& attrs,
                                                  const std::vector<NodeContext::SubgraphFrame>& frames) {
  const std::string where = "ONNX model '" + path() + "': node '" + node.name() + "' (" + node.op_type() + ")";
  std::vector<const ::onnx::GraphProto*> graphs;
  for (const std::string& a : attrs)
    for (const auto& at : node.attribute())
      if (at.name() == a) graphs.push_back(&at.g());
  HUB_CHECK(graphs.size() == attrs.size() && frames.size() == attrs.size(), "import_subgraphs arguments");
  // What the subgraphs read from here: constants are copied in, the rest passed.
  std::vector<std::string> reads;
  for (const auto* g : graphs) free_values(*g, reads);
  std::map<std::string, Value> copied;
  std::vector<std::pair<std::string, std::pair<TensorSpec, bool>>> passed;
  NodeContext::Subgraphs out;
  for (const std::string& name : reads) {
    auto it = values_.find(name);
    if (it == values_.end())
      throw_error(Code::kInvalidArgument, where + ": a subgraph reads '" + name + "', which is not defined before it");
    Value& v = it->second;
    if (!v.unavailable.empty()) throw Deferred{v.unavailable};
    if (v.constant) {
      copied[name].constant = v.constant;
      copied[name].quantized = v.quantized;
      continue;
    }
    if (!v.out.valid() && v.symbolic) {
      v.out = symbolic_tensor(name);
      v.nhwc = false;
    }
    HUB_CHECK(v.out.valid(), "value '" + name + "' has no tensor");
    out.captured.push_back(v.out);
    passed.push_back({name, {graph_.spec(v.out), v.nhwc}});
  }
  for (size_t k = 0; k < graphs.size(); ++k) {
    if (++subgraph_imports_ > interop::kMaxSubgraphImports)
      throw_error(Code::kResourceExhausted, where + ": importing its subgraphs takes more than " +
                                                std::to_string(interop::kMaxSubgraphImports) +
                                                " subgraph imports (nested loops whose carried shapes relax)");
    const ::onnx::GraphProto& g = *graphs[k];
    const NodeContext::SubgraphFrame& f = frames[k];
    const std::string gw = where + " attribute " + attrs[k];
    // This frame (graph, values, value infos) is set aside while the subgraph is built.
    struct Frame {
      Importer& im;
      Graph graph;
      std::map<std::string, Value> values;
      std::map<std::string, ValueInfo> info;
      explicit Frame(Importer& i) : im(i) {
        std::swap(graph, im.graph_);
        std::swap(values, im.values_);
        info = im.info_;
        ++im.depth_;
      }
      ~Frame() {
        std::swap(graph, im.graph_);
        std::swap(values, im.values_);
        im.info_ = std::move(info);
        --im.depth_;
      }
    } frame(*this);
    values_ = copied;
    add_info(g);
    std::vector<Output> arguments;
    const Scope s(graph_);
    for (size_t i = 0; i < f.arguments.size(); ++i)
      arguments.push_back(ops::placeholder(
          s, f.arguments[i].dtype, f.arguments[i].shape,
          i < static_cast<size_t>(g.input_size()) ? sanitize(g.input(static_cast<int>(i)).name()) : "argument"));
    const std::vector<Output> inputs = f.inputs ? f.inputs(s, arguments) : arguments;
    if (g.input_size() != static_cast<int>(inputs.size()))
      throw_error(Code::kInvalidArgument, gw + ": the graph has " + std::to_string(g.input_size()) + " inputs; " +
                                              node.op_type() + " gives it " + std::to_string(inputs.size()));
    for (int i = 0; i < g.input_size(); ++i) {
      values_[g.input(i).name()] = Value{};
      values_[g.input(i).name()].out = inputs[static_cast<size_t>(i)];
    }
    for (const auto& [name, spec] : passed) {
      Output p = ops::placeholder(s, spec.first.dtype, spec.first.shape, sanitize(name));
      values_[name] = Value{};
      values_[name].out = p;
      values_[name].nhwc = spec.second;
      arguments.push_back(p);
    }
    add_initializers(g, gw);
    for (int i = 0; i < g.node_size(); ++i) import_node(g.node(i), i);
    std::vector<Output> results;
    for (const auto& o : g.output()) results.push_back(graph_output(o.name()));
    if (f.results) results = f.results(s, results);
    out.graphs.push_back(make_subgraph(graph_, arguments, results));
  }
  return out;
}

void Importer::inline_branch(const ::onnx::NodeProto& node, const std::string& where) {
  const Tensor& cond = *values_.at(node.input(0)).constant;
  if (cond.dtype() != DType::kBool || cond.num_elements() != 1)
    throw_error(Code::kInvalidArgument, where + ": cond must be a bool of one element, got " + cond.spec_string());
  const std::string taken = cond.item<bool>() ? "then_branch" : "else_branch";
  const ::onnx::GraphProto* g = nullptr;
  for (const auto& a : node.attribute())
    if (a.name() == taken && a.has_g()) g = &a.g();
  if (!g) throw_error(Code::kInvalidArgument, where + ": attribute " + taken + " must be a graph");
  if (g->output_size() != node.output_size())
    throw_error(Code::kInvalidArgument, where + ": " + taken + " has " + std::to_string(g->output_size()) +
                                            " outputs, the node " + std::to_string(node.output_size()));
  add_info(*g);
  add_initializers(*g, where + " attribute " + taken);
  for (int i = 0; i < g->node_size(); ++i) import_node(g->node(i), i);
  for (int i = 0; i < node.output_size(); ++i)
    if (!node.output(i).empty()) values_[node.output(i)] = values_.at(g->output(i).name());
}

bool Importer::fold(const ::onnx::NodeProto& node, const OpMapper& mapper) {
  Graph scratch;
  std::map<std::string, Value> inputs;
  for (const std::string& in : node.input())
    if (!in.empty()) inputs[in].constant = values_.at(in).constant;
  GraphContext ctx(*this, node, scratch, inputs, /*folding=*/true);
  mapper.map(ctx);
  // A few bytes of Tile or Expand must not compute terabytes at import (hub/interop/fold.h).
  int64_t in_elements = 0;
  for (const auto& [name, v] : inputs) in_elements += v.constant->num_elements();
  std::vector<Output> fetches;
  std::vector<int> which;
  for (const auto& [i, out] : ctx.outputs()) {
    if (!interop::fold_allowed(scratch.spec(out.first).shape, in_elements)) return false;
    Output o = out.first;
    if (out.second) o = ops::transpose(Scope(scratch), o, {0, 3, 1, 2}, "to_nchw" + std::to_string(i));
    fetches.push_back(o);
    which.push_back(i);
  }
  Session session(scratch, nullptr, {&reference_backend()});
  std::vector<Tensor> results;
  try {
    if (!fetches.empty()) results = session.run({}, fetches);
  } catch (const Error& e) {
    throw e.with_context("ONNX model '" + path() + "': folding node '" + node.name() + "' (" + node.op_type() + ")");
  }
  for (size_t k = 0; k < which.size(); ++k) values_[node.output(which[k])].constant = results[k];
  for (const auto& [i, t] : ctx.constants()) values_[node.output(i)].constant = t;
  return true;
}

void Importer::note_quantized(const ::onnx::NodeProto& node) {
  const Tensor& q = *values_.at(node.input(0)).constant;
  const Tensor& scale = *values_.at(node.input(1)).constant;
  if (q.dtype() != DType::kInt8 || scale.dtype() != DType::kFloat32 || scale.rank() > 1) return;
  if (node.input_size() > 2 && !node.input(2).empty()) {
    const Tensor& zero_point = *values_.at(node.input(2)).constant;
    for (int64_t e = 0; e < zero_point.num_elements(); ++e)
      if (zero_point.data<int8_t>()[e] != 0) return;
  }
  int64_t axis = -1;
  if (scale.rank() == 1) {
    axis = 1;
    for (const auto& a : node.attribute())
      if (a.name() == "axis") axis = a.i();
    if (axis < 0) axis += q.rank();
    if (axis < 0 || axis >= q.rank() || q.shape()[static_cast<int>(axis)] != scale.num_elements()) return;
  }
  for (int64_t e = 0; e < scale.num_elements(); ++e)
    if (!(scale.data<float>()[e] > 0) || !std::isfinite(scale.data<float>()[e])) return;
  values_[node.output(0)].quantized = QuantizedConstant{q, scale, axis};
}

void Importer::import_node(const ::onnx::NodeProto& node, int index) {
  (void)index;
  const auto& mappers = op_mappers();
  auto it = mappers.find(node.op_type());
  const std::string where = "ONNX model '" + path() + "': node '" + node.name() + "' (" + node.op_type() + ")";
  if (it == mappers.end())
    throw_error(Code::kUnimplemented,
                where + ": operator " + node.op_type() + " is not supported (docs/import.md lists the supported ones)");
  const OpMapper& mapper = it->second;
  for (const auto& a : node.attribute())
    if (!mapper.attributes.count(a.name()))
      throw_error(Code::kUnimplemented, where + ": attribute '" + a.name() + "' is not supported");
  bool all_constant = mapper.foldable;
  for (const std::string& in : node.input()) {
    if (in.empty()) continue;
    auto v = values_.find(in);
    if (v == values_.end())
      throw_error(Code::kInvalidArgument, where + ": input '" + in + "' is produced by no earlier node");
    all_constant = all_constant && v->second.constant.has_value();
  }
  if (node.op_type() == "If" && node.input_size() > 0 && values_.count(node.input(0)) &&
      values_.at(node.input(0)).constant) {
    inline_branch(node, where);
    return;
  }
  if (all_constant && fold(node, mapper)) {
    if (node.op_type() == "DequantizeLinear") note_quantized(node);
  } else {
    GraphContext ctx(*this, node, graph_, values_, /*folding=*/false);
    try {
      mapper.map(ctx);
      for (const auto& [i, out] : ctx.outputs()) {
        Value& v = values_[node.output(i)];
        v.out = out.first;
        v.nhwc = out.second;
      }
      for (const auto& [i, t] : ctx.constants()) values_[node.output(i)].constant = t;
      // (A run-time use of one computes it as a tensor: Importer::symbolic_tensor.)
      for (const auto& [i, s] : ctx.symbolic_outputs()) values_[node.output(i)].symbolic = s;
    } catch (const Deferred& d) {
      for (const std::string& out : node.output())
        if (!out.empty()) values_[out].unavailable = d.reason;
      return;
    }
  }
  for (int i = 0; i < node.output_size(); ++i) {
    const std::string& out = node.output(i);
    if (out.empty()) continue;
    Value& v = values_[out];
    if (!v.constant && !v.out.valid() && !v.symbolic && v.unavailable.empty())
      v.unavailable = where + ": output " + std::to_string(i) + " ('" + out + "') is not supported";
  }
}

// Each element: a constant, or its terms' dims read from their tensors'
// shapes (Shape, Slice) times their coefficients, summed; then the value's
// rank (a scalar reshaped) and type.
Output Importer::symbolic_tensor(const std::string& name) {
  const Value& v = values_.at(name);
  const std::string where = "ONNX model '" + path() + "': value '" + name + "'";
  const Scope s = Scope(graph_).sub(sanitize(name));
  std::vector<interop::Linear<std::pair<Output, int>>> elements;
  for (const SymDim& d : *v.symbolic) {
    const std::optional<interop::Linear<DimKey>> linear = d.linear();
    if (!linear)
      throw Deferred{where + " is computed from run-time dims by arithmetic other than sums and constant " +
                     "multiples, which hub cannot compute as a tensor"};
    interop::Linear<std::pair<Output, int>> in_graph{linear->value, {}};
    for (const auto& [key, coefficient] : linear->terms) {
      auto it = values_.find(key.first);
      if (it == values_.end() || !it->second.out.valid())
        throw Deferred{where + ": the run-time dims of '" + key.first + "' are not available"};
      const int dim = it->second.nhwc ? static_cast<int>(nhwc_axis(key.second)) : key.second;
      in_graph.terms.emplace_back(std::make_pair(it->second.out, dim), coefficient);
    }
    elements.push_back(std::move(in_graph));
  }
  const ValueInfo* type = info(name);
  return interop::run_time_tensor(s, elements, type && type->shape && type->shape->rank() == 0,
                                  type && type->elem_type ? dtype_from_onnx(type->elem_type, where) : DType::kInt64);
}

Output Importer::graph_output(const std::string& name) {
  Value& v = values_.at(name);
  if (!v.unavailable.empty()) throw_error(Code::kUnimplemented, v.unavailable);
  if (!v.out.valid() && !v.constant && v.symbolic) {
    try {
      v.out = symbolic_tensor(name);
    } catch (const Deferred& d) {
      throw_error(Code::kUnimplemented, d.reason);
    }
  }
  const std::string node_name = graph_.unique_name(sanitize(name));
  if (!v.out.valid()) return ops::constant(Scope(graph_), *v.constant, node_name);
  Output x = v.out;
  if (v.nhwc) {
    if (!v.other.valid()) {
      const ValueInfo* vi = info(name);
      Shape s = graph_.spec(x).shape;
      Shape logical = vi && vi->shape ? *vi->shape : Shape{s[0], s[3], s[1], s[2]};
      v.other = change_layout(Scope(graph_).sub(sanitize(name)), x, logical, false);
    }
    x = v.other;
  }
  return ops::identity(Scope(graph_), x, node_name);
}

std::map<std::string, AttachedValue> Importer::provenance() const {
  std::map<std::string, AttachedValue> a;
  a["source_format"] = std::string("onnx");
  a["source_sha256"] = sha256_hex(read_file_bytes(model_.path, kMaxModelBytes));
  a["source_opset"] = int64_t{model_.source_opset};
  a["source_producer"] = model_.proto.producer_name() +
                         (model_.proto.producer_version().empty() ? "" : " " + model_.proto.producer_version());
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  a["imported_at"] = std::string(buf);
  return a;
}

void Importer::import_body() {
  const auto& g = model_.proto.graph();
  for (int i = 0; i < g.node_size(); ++i) import_node(g.node(i), i);
}

std::pair<std::string, const ::onnx::NodeProto*> Importer::find_features() const {
  const auto& g = model_.proto.graph();
  const std::string where = "ONNX model '" + path() + "'";
  if (!options_.feature_output.empty()) {
    if (!values_.count(options_.feature_output))
      throw_error(Code::kInvalidArgument,
                  where + ": --feature_output '" + options_.feature_output + "' is no value of the model");
    const ::onnx::NodeProto* consumer = nullptr;
    for (const auto& n : g.node())
      for (const auto& in : n.input())
        if (in == options_.feature_output) consumer = &n;
    return {options_.feature_output, consumer};
  }
  // The last matrix product (or 1x1 convolution) of the graph: its input is
  // the feature vector.
  for (int i = g.node_size() - 1; i >= 0; --i) {
    const auto& n = g.node(i);
    bool one_by_one = false;
    if (n.op_type() == "Conv") {
      const ValueInfo* w = info(n.input(1));
      std::optional<Tensor> wt = values_.count(n.input(1)) ? values_.at(n.input(1)).constant : std::nullopt;
      Shape ws = wt ? wt->shape() : (w && w->shape ? *w->shape : Shape{});
      one_by_one = ws.rank() == 4 && ws[2] == 1 && ws[3] == 1;
    }
    if (n.op_type() == "Gemm" || n.op_type() == "MatMul" || one_by_one) return {n.input(0), &n};
  }
  throw_error(Code::kInvalidArgument, where +
                                          ": no final classifier (Gemm, MatMul or 1x1 Conv) to take the feature "
                                          "vector from; name it with --feature_output");
}

// A value as [N, D]: flattened, after a global average over H, W when a 4-D
// value has spatial extent (a 1x1-convolution classifier's input).
Output Importer::as_matrix(const std::string& name, const std::string& node_name) {
  Value& v = values_.at(name);
  if (!v.unavailable.empty()) throw_error(Code::kUnimplemented, v.unavailable);
  Scope s = Scope(graph_).sub(node_name);
  Output x = v.out.valid() ? v.out : ops::constant(s, *v.constant, "value");
  Shape shape = graph_.spec(x).shape;
  if (shape.rank() == 4) {
    if (!v.nhwc) x = ops::transpose(s, x, {0, 2, 3, 1}, "to_nhwc");
    Shape nhwc = graph_.spec(x).shape;
    if (!(nhwc[1] == 1 && nhwc[2] == 1))
      x = s.op("Mean", {x}, Attrs().set("axes", std::vector<int64_t>{1, 2}).set("keep_dims", false), "global_pool");
    else
      x = ops::reshape(s, x, {-1, nhwc[3]}, "flatten");
  } else if (shape.rank() != 2) {
    int64_t d = 1;
    for (int i = 1; i < shape.rank(); ++i) d *= shape[i];
    x = ops::reshape(s, x, {-1, d}, "flatten");
  }
  return ops::identity(Scope(graph_), x, graph_.unique_name(node_name));
}

void Importer::add_image_signatures(const std::map<std::string, Value>& initial,
                                    std::map<std::string, SignatureInfo>& signatures,
                                    std::map<std::string, AttachedValue>& attached) {
  const std::string where = "ONNX model '" + path() + "'";
  // The model's single image input [N, C, H, W].
  std::string input;
  for (const auto& [name, info] : signatures.at(kDefaultSignature).inputs) {
    if (!input.empty())
      throw_error(Code::kInvalidArgument, where + ": image signatures need a single input, the model has several");
    input = name;
  }
  const TensorInfo& in = signatures.at(kDefaultSignature).inputs.at(input);
  if (in.dtype != DType::kFloat32 || in.shape.rank() != 4 || (in.shape[1] != 3 && in.shape[1] != 1))
    throw_error(Code::kInvalidArgument, where + ": input '" + input + "' is " + std::string(dtype_name(in.dtype)) +
                                            in.shape.to_string() + "; image signatures need float32 [N, 3, H, W]");
  const int64_t channels = in.shape[1];
  int64_t h = in.shape[2], w = in.shape[3];
  if (!options_.image_size.empty()) {
    if (options_.image_size.size() != 2 || options_.image_size[0] <= 0 || options_.image_size[1] <= 0)
      throw_error(Code::kInvalidArgument, "--image_size must be H,W with positive sizes");
    h = options_.image_size[0];
    w = options_.image_size[1];
  }
  if (h <= 0 || w <= 0)
    throw_error(Code::kInvalidArgument, where + ": input '" + input + "' " + in.shape.to_string() +
                                            " has no static image size; give --image_size H,W");
  auto per_channel = [&](const std::vector<double>& v, double dflt, const char* flag) {
    if (v.empty()) return std::vector<float>(static_cast<size_t>(channels), static_cast<float>(dflt));
    if (static_cast<int64_t>(v.size()) != channels)
      throw_error(Code::kInvalidArgument, std::string(flag) + " needs " + std::to_string(channels) + " values");
    return std::vector<float>(v.begin(), v.end());
  };
  std::vector<float> mean = per_channel(options_.mean, 0.0, "--mean"), stdev = per_channel(options_.std, 1.0, "--std");
  for (float s : stdev)
    if (s == 0.0f) throw_error(Code::kInvalidArgument, "--std must not contain 0");
  double lo = 0, hi = 1;
  if (!options_.input_range.empty()) {
    if (options_.input_range.size() != 2) throw_error(Code::kInvalidArgument, "--input_range must be LO,HI");
    lo = options_.input_range[0];
    hi = options_.input_range[1];
  }
  // x' = ((x * (hi - lo) + lo) - mean) / std, as x * scale + shift per channel.
  std::vector<float> scale(static_cast<size_t>(channels)), shift(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    scale[c] = static_cast<float>((hi - lo) / stdev[c]);
    shift[c] = static_cast<float>((lo - mean[c]) / stdev[c]);
  }
  Scope s = Scope(graph_).sub("image_input");
  Output images =
      ops::placeholder(Scope(graph_), DType::kFloat32, {kUnknownDim, h, w, 3}, graph_.unique_name("images"));
  Output x = images;
  if (channels == 1) x = s.op("Mean", {x}, Attrs().set("axes", std::vector<int64_t>{3}).set("keep_dims", true), "gray");
  x = s.op("Mul", {x, ops::constant(s, Tensor::from_vector<float>({channels}, scale), "scale")}, {}, "scaled");
  x = s.op("Add", {x, ops::constant(s, Tensor::from_vector<float>({channels}, shift), "shift")}, {}, "normalized");

  auto [feature_name, classifier] = find_features();
  // Second import of the body, from the normalised images, with shapes
  // inferred again for a batch of any size at the image size.
  std::map<std::string, ValueInfo> main_info = std::move(info_);
  info_.clear();
  for (auto& vi : *model_.proto.mutable_graph()->mutable_input()) {
    if (vi.name() != input) continue;
    auto* dims = vi.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim();
    (*dims)[0].set_dim_param("N");
    (*dims)[2].set_dim_value(h);
    (*dims)[3].set_dim_value(w);
  }
  infer_shapes(model_.proto, where);
  collect_info();
  std::map<std::string, Value> main = std::move(values_);
  values_ = initial;
  values_[input].out = x;
  values_[input].nhwc = true;
  import_body();
  SignatureInfo fv;
  fv.inputs["images"] = TensorInfo{graph_.tensor_name(images), DType::kFloat32, Shape{kUnknownDim, h, w, 3}};
  Output features = as_matrix(feature_name, "image_feature_vector");
  fv.outputs["default"] = TensorInfo{graph_.tensor_name(features), DType::kFloat32, graph_.spec(features).shape};
  signatures["image_feature_vector"] = fv;
  if (classifier && !classifier->output(0).empty()) {
    SignatureInfo cls;
    cls.inputs = fv.inputs;
    Output logits = as_matrix(classifier->output(0), "image_classification");
    cls.outputs["default"] = TensorInfo{graph_.tensor_name(logits), DType::kFloat32, graph_.spec(logits).shape};
    signatures["image_classification"] = cls;
  }
  values_ = std::move(main);
  info_ = std::move(main_info);
  attached[kImageHeightKey] = h;
  attached[kImageWidthKey] = w;
  attached[kImageChannelsKey] = int64_t{3};
}

ModuleSpec Importer::run() {
  collect_info();
  const auto& g = model_.proto.graph();
  std::set<std::string> initializer_names;
  add_initializers(g, "ONNX model '" + path() + "'");
  for (const auto& t : g.initializer()) initializer_names.insert(t.name());
  const std::map<std::string, Value> initial = values_;
  SignatureInfo sig;
  for (const auto& in : g.input()) {
    if (initializer_names.count(in.name())) continue;  // an overridable default: used as the constant
    const ValueInfo& vi = info_.at(in.name());
    if (!vi.shape)
      throw_error(Code::kInvalidArgument, "ONNX model '" + path() + "': input '" + in.name() + "' has no shape");
    DType dtype = dtype_from_onnx(vi.elem_type, "ONNX model '" + path() + "': input '" + in.name() + "'");
    Output p = ops::placeholder(Scope(graph_), dtype, *vi.shape, sanitize(in.name()));
    values_[in.name()].out = p;
    sig.inputs[in.name()] = TensorInfo{graph_.tensor_name(p), dtype, *vi.shape};
  }
  import_body();
  for (const auto& out : g.output()) {
    if (!values_.count(out.name()))
      throw_error(Code::kInvalidArgument,
                  "ONNX model '" + path() + "': output '" + out.name() + "' is produced by no node");
    Output o = graph_output(out.name());
    const TensorSpec& s = graph_.spec(o);
    sig.outputs[out.name()] = TensorInfo{graph_.tensor_name(o), s.dtype, s.shape};
  }
  std::map<std::string, SignatureInfo> signatures{{kDefaultSignature, sig}};
  std::map<std::string, AttachedValue> attached = provenance();
  const bool images = options_.image_signatures || !options_.image_size.empty() || !options_.mean.empty() ||
                      !options_.std.empty() || !options_.input_range.empty() || !options_.feature_output.empty();
  if (images) add_image_signatures(initial, signatures, attached);
  ModuleMetadata md;
  md.name = model_.proto.graph().name();
  md.description = model_.proto.doc_string();
  md.version = model_.proto.model_version() ? std::to_string(model_.proto.model_version()) : "";
  md.author = model_.proto.producer_name();
  std::vector<ModuleSpec::TagSetParts> parts;
  parts.push_back({TagSet{}, std::move(graph_), std::move(signatures)});
  std::map<std::string, std::string> assets;
  if (!options_.labels.empty()) assets["labels.txt"] = options_.labels;
  return ModuleSpec::from_parts(std::move(parts), std::move(weights_), std::move(attached), md, model_.path, "",
                                std::move(assets));
}

}  // namespace

// ---- NodeContext ------------------------------------------------------------------

const ::onnx::AttributeProto* NodeContext::attr(const std::string& name) const {
  for (const auto& a : node_.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

bool NodeContext::has_attr(const std::string& name) const { return attr(name) != nullptr; }

int64_t NodeContext::attr_int(const std::string& name, int64_t dflt) const {
  const auto* a = attr(name);
  return a ? a->i() : dflt;
}

float NodeContext::attr_float(const std::string& name, float dflt) const {
  const auto* a = attr(name);
  return a ? a->f() : dflt;
}

std::string NodeContext::attr_string(const std::string& name, const std::string& dflt) const {
  const auto* a = attr(name);
  return a ? a->s() : dflt;
}

std::vector<int64_t> NodeContext::attr_ints(const std::string& name, std::vector<int64_t> dflt) const {
  const auto* a = attr(name);
  if (!a) return dflt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::vector<float> NodeContext::attr_floats(const std::string& name, std::vector<float> dflt) const {
  const auto* a = attr(name);
  if (!a) return dflt;
  return std::vector<float>(a->floats().begin(), a->floats().end());
}

std::vector<std::string> NodeContext::attr_strings(const std::string& name) const {
  const auto* a = attr(name);
  if (!a) return {};
  return std::vector<std::string>(a->strings().begin(), a->strings().end());
}

const ::onnx::TensorProto* NodeContext::attr_tensor(const std::string& name) const {
  const auto* a = attr(name);
  return a && a->has_t() ? &a->t() : nullptr;
}

void NodeContext::fail(const std::string& message) const {
  throw_error(Code::kInvalidArgument,
              "ONNX model '" + model_path_ + "': node '" + node_.name() + "' (" + node_.op_type() + "): " + message);
}

void NodeContext::fail_attr(const std::string& attr, const std::string& value, const std::string& why) const {
  throw_error(Code::kUnimplemented, "ONNX model '" + model_path_ + "': node '" + node_.name() + "' (" +
                                        node_.op_type() + "): attribute " + attr + " = " + value + ": " + why);
}

void NodeContext::check_folded_size(const Shape& shape, const std::string& what) const {
  for (int64_t d : shape.dims())
    if (d < 0) fail(what + " " + shape.to_string() + " has a negative dimension");
  if (interop::saturated_elements(shape) > kMaxFoldedElements)
    fail(what + " " + shape.to_string() + " would be folded at import with more than 2^24 elements");
}

std::vector<int64_t> NodeContext::constant_ints(int i, const std::string& what) const {
  std::optional<Tensor> t = constant(i);
  if (!t) fail(what + " (input " + std::to_string(i) + ") must be a constant");
  std::optional<std::vector<int64_t>> values = t->to_int64_vector();
  if (!values) fail(what + " must be int32 or int64, got " + t->spec_string());
  return *values;
}

Output NodeContext::weight_or(int i, const std::function<Tensor(const Tensor&)>& transform,
                              const std::function<Output(Output)>& runtime, bool trainable) {
  return constant(i) ? weight(i, transform, trainable) : runtime(native(i));
}

int NodeContext::rank(int i) const {
  Shape s = shape(i);
  return s.rank();
}

const std::map<std::string, OpMapper>& op_mappers() {
  static const auto* mappers = [] {
    auto* m = new std::map<std::string, OpMapper>;
    add_tensor_mappers(*m);
    add_nn_mappers(*m);
    add_control_flow_mappers(*m);
    return m;
  }();
  return *mappers;
}

Tensor evaluate(const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs) {
  Graph g;
  Scope s(g);
  std::vector<Output> in;
  for (size_t i = 0; i < inputs.size(); ++i) in.push_back(ops::constant(s, inputs[i], "in" + std::to_string(i)));
  Output out = s.op(op, in, attrs, "op");
  Session session(g, nullptr, {&reference_backend()});
  return session.run({}, {out})[0];
}

std::optional<int> transformed_axis(const Shape& shape, int axis,
                                    const std::function<Tensor(const Tensor&)>& transform) {
  Tensor index(DType::kFloat32, shape);
  for (int64_t e = 0; e < index.num_elements(); ++e)
    index.data<float>()[e] = static_cast<float>(coordinate(shape, e, axis));
  const Tensor moved = transform(index);
  for (int a = 0; a < moved.rank(); ++a) {
    bool follows = moved.shape()[a] == shape[axis];
    for (int64_t e = 0; e < moved.num_elements() && follows; ++e)
      follows = moved.data<float>()[e] == static_cast<float>(coordinate(moved.shape(), e, a));
    if (follows) return a;
  }
  return std::nullopt;
}

Tensor to_nhwc_operand(const Tensor& t) {
  std::vector<int64_t> dims(4 - t.rank(), 1);
  for (int64_t d : t.shape().dims()) dims.push_back(d);
  return evaluate("Transpose", {t.reshaped(Shape(dims))}, Attrs().set("perm", std::vector<int64_t>{0, 2, 3, 1}));
}

int64_t nhwc_axis(int64_t nchw_axis) {
  static constexpr int64_t kPos[4] = {0, 3, 1, 2};
  return kPos[nchw_axis];
}

int64_t normalize_axis(const NodeContext& ctx, int64_t axis, int rank, const std::string& attr) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) ctx.fail_attr(attr, std::to_string(axis), "out of range for rank " + std::to_string(rank));
  return a;
}

ModuleSpec import_onnx(const std::string& path, const OnnxImportOptions& options) {
  return Importer(path, options).run();
}

}  // namespace hub::onnx_interop
