#include "hub/interop/onnx/exporter.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "hub/core/error.h"
#include "hub/core/fileio.h"
#include "hub/interop/onnx/convert.h"
#include "hub/interop/onnx/model.h"
#include "hub/ops/array.h"

namespace fs = std::filesystem;

namespace hub::onnx_interop {

namespace {

using ::onnx::AttributeProto;
using ::onnx::NodeProto;

class Exporter;
using ExportFn = void (*)(Exporter&, const Node&);
const std::map<std::string, ExportFn>& exporters();

// Where a hub tensor lives in the ONNX graph: its value name, and whether a
// 4-D (NHWC in hub) tensor is stored NCHW there.
struct Val {
  std::string name;
  bool nchw = false;
  std::string other;  // cached conversion to the other layout
};

class Exporter {
 public:
  Exporter(const ModuleSpec& spec, const OnnxExportOptions& options)
      : spec_(spec), g_(spec.graph()), options_(options) {}

  ::onnx::ModelProto run();
  int opset() const { return opset_; }

  // Writes `sub` (a branch or loop body of a node being exported) into `out`:
  // its first `formal` arguments become the graph's inputs, the others read
  // the values `outer` of this graph by name (ONNX subgraphs see the values
  // around them); its results become the graph's outputs.
  void subgraph(const Subgraph& sub, size_t formal, const std::vector<Output>& outer, ::onnx::GraphProto* out);

  // ---- what the per-op functions use ---------------------------------------
  const Graph& graph() const { return g_; }
  const Node& node(Output o) const { return g_.node(o); }
  const TensorSpec& spec(Output o) const { return g_.spec(o); }
  // A tensor's value when it is a constant or a variable (weights).
  std::optional<Tensor> constant(Output o) const;
  // The value in hub's layout / (4-D) in NCHW.
  std::string nhwc(Output o);
  std::string nchw(Output o);
  bool is_nchw(Output o) const { return vals_.at(o).nchw; }
  // The node inputs that read o, as (node id, input index), and how many
  // node inputs and signature outputs read it (counted once in run()).
  const std::vector<std::pair<int, int>>& readers(Output o) const;
  int uses(Output o) const;
  void set(Output o, std::string name, bool nchw = false) { vals_[o] = Val{std::move(name), nchw, ""}; }
  // A fresh value name based on `base`.
  std::string fresh(const std::string& base);
  std::string initializer(const Tensor& t, const std::string& base);
  std::string ints(const std::vector<int64_t>& v, const std::string& base) {
    return initializer(Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v), base);
  }
  NodeProto* add(const std::string& op, const std::vector<std::string>& inputs, const std::string& output,
                 const std::string& name);
  // add() of a node named after its output, a fresh value `base`; returns the value.
  std::string value(const std::string& op, const std::vector<std::string>& inputs, const std::string& base) {
    const std::string v = fresh(base);
    add(op, inputs, v, v);
    return v;
  }
  // A weight input: its constant value transformed into an initializer, or
  // (computed at run time) the runtime transform of the value.
  std::string weight(Output o, const std::function<Tensor(const Tensor&)>& transform,
                     const std::function<std::string(const std::string&)>& runtime);
  const Val& val(Output o) const { return vals_.at(o); }
  [[noreturn]] void fail(const Node& n, const std::string& why) const {
    throw_error(Code::kUnimplemented,
                "converting module " + spec_.source() + " to ONNX: node '" + n.name + "' (" + n.op + "): " + why);
  }

 private:
  // A subgraph's exporter: names, variables and opset are the model's.
  Exporter(const Exporter& parent, const Graph& g, ::onnx::GraphProto* out)
      : spec_(parent.spec_),
        g_(g),
        options_(parent.options_),
        out_(out),
        variables_(parent.variables_),
        opset_(parent.opset_),
        names_(parent.names_) {}
  std::string convert(Output o, bool to_nchw);
  // Counts the readers of every tensor, the `results` as uses too, and
  // returns the nodes the results need, stopping at the nodes in `stop`.
  std::vector<char> plan(const std::vector<Output>& results, const std::set<int>& stop);

  const ModuleSpec& spec_;
  const Graph& g_;
  OnnxExportOptions options_;
  ::onnx::GraphProto* out_ = nullptr;
  std::map<Output, Val> vals_;
  std::map<Output, std::vector<std::pair<int, int>>> readers_;
  std::map<Output, int> signature_uses_;
  std::map<std::string, Tensor> variables_;
  int opset_ = 0;  // the opset written
  // Value and node names, shared with the subgraphs' exporters: a name
  // defined anywhere in the model is defined once (ONNX Runtime refuses a
  // model that repeats a node name).
  struct Names {
    std::set<std::string> values, nodes;
  };
  std::shared_ptr<Names> names_ = std::make_shared<Names>();
};

void set_ints(NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void set_int(NodeProto* n, const std::string& name, int64_t v) {
  AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(AttributeProto::INT);
  a->set_i(v);
}
void set_float(NodeProto* n, const std::string& name, double v) {
  AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(AttributeProto::FLOAT);
  a->set_f(static_cast<float>(v));
}
void set_string(NodeProto* n, const std::string& name, const std::string& v) {
  AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(AttributeProto::STRING);
  a->set_s(v);
}

std::string Exporter::fresh(const std::string& base) {
  std::string name = base;
  for (int i = 1; names_->values.count(name); ++i) name = base + "_" + std::to_string(i);
  names_->values.insert(name);
  return name;
}

std::string Exporter::initializer(const Tensor& t, const std::string& base) {
  std::string name = fresh(base);
  ::onnx::TensorProto* p = out_->add_initializer();
  tensor_to_onnx(t, p);
  p->set_name(name);
  return name;
}

NodeProto* Exporter::add(const std::string& op, const std::vector<std::string>& inputs, const std::string& output,
                         const std::string& name) {
  NodeProto* n = out_->add_node();
  n->set_op_type(op);
  std::string unique = name;
  for (int i = 1; !names_->nodes.insert(unique).second; ++i) unique = name + "_" + std::to_string(i);
  n->set_name(unique);
  for (const auto& in : inputs) n->add_input(in);
  n->add_output(output);
  return n;
}

std::optional<Tensor> Exporter::constant(Output o) const {
  const Node& n = g_.node(o);
  if (n.op == "Const") return n.attrs.get_tensor("value");
  if (n.op == "Variable") return variables_.at(n.name);
  return std::nullopt;
}

const std::vector<std::pair<int, int>>& Exporter::readers(Output o) const {
  static const std::vector<std::pair<int, int>> kNone;
  const auto it = readers_.find(o);
  return it == readers_.end() ? kNone : it->second;
}

int Exporter::uses(Output o) const {
  const auto it = signature_uses_.find(o);
  return static_cast<int>(readers(o).size()) + (it == signature_uses_.end() ? 0 : it->second);
}

std::string Exporter::convert(Output o, bool to_nchw) {
  Val& v = vals_.at(o);
  if (v.other.empty()) {
    v.other = fresh(v.name + (to_nchw ? "_nchw" : "_nhwc"));
    NodeProto* t = add("Transpose", {v.name}, v.other, v.other);
    set_ints(t, "perm", to_nchw ? std::vector<int64_t>{0, 3, 1, 2} : std::vector<int64_t>{0, 2, 3, 1});
  }
  return v.other;
}

std::string Exporter::nhwc(Output o) {
  const Val& v = vals_.at(o);
  return v.nchw ? convert(o, false) : v.name;
}

std::string Exporter::nchw(Output o) {
  const Val& v = vals_.at(o);
  HUB_CHECK(g_.spec(o).shape.rank() == 4);
  return v.nchw ? v.name : convert(o, true);
}

namespace {

Tensor cast(const Tensor& t, DType to) { return evaluate("Cast", {t}, Attrs().set("dtype", to)); }

}  // namespace

std::string Exporter::weight(Output o, const std::function<Tensor(const Tensor&)>& transform,
                             const std::function<std::string(const std::string&)>& runtime) {
  if (std::optional<Tensor> t = constant(o)) return initializer(transform(*t), g_.node(o).name);
  // Quantized weights stay quantized, as the QDQ pattern runtimes fuse into
  // integer convolutions: DequantizeLinear of the transformed int8 tensor,
  // its channel axis followed through the transform.
  const Node& d = g_.node(o);
  if (d.op == "DequantizeLinear") {
    const std::optional<Tensor> q = constant(d.inputs[0]), scale = constant(d.inputs[1]), zp = constant(d.inputs[2]);
    if (q && scale && zp) {
      int64_t axis = d.attrs.get_int("axis");
      if (axis < 0) axis += q->rank();
      const Tensor moved = cast(transform(cast(*q, DType::kFloat32)), q->dtype());
      std::optional<int> axis_moved =
          scale->rank() == 0 ? 1 : transformed_axis(q->shape(), static_cast<int>(axis), transform);
      if (!axis_moved) throw_error(Code::kInternal, "the weight transform does not keep the quantization axis whole");
      const int64_t onnx_axis = *axis_moved;
      const std::string y = fresh(d.name);
      NodeProto* p = add("DequantizeLinear",
                         {initializer(moved, g_.node(d.inputs[0]).name), initializer(*scale, g_.node(d.inputs[1]).name),
                          initializer(*zp, g_.node(d.inputs[2]).name)},
                         y, d.name);
      set_int(p, "axis", onnx_axis);
      return y;
    }
  }
  return runtime(nhwc(o));
}

// An unknown dim is named (N for the first, d1, d2, ... for the others) in
// the model's inputs and outputs, and left unnamed inside subgraphs, whose
// unknown dims are no batch.
::onnx::TypeProto type_of(const TensorSpec& s, bool named = true) {
  ::onnx::TypeProto t;
  t.mutable_tensor_type()->set_elem_type(dtype_to_onnx(s.dtype));
  auto* shape = t.mutable_tensor_type()->mutable_shape();
  for (int i = 0; i < s.shape.rank(); ++i) {
    auto* d = shape->add_dim();
    if (s.shape[i] >= 0)
      d->set_dim_value(s.shape[i]);
    else if (named)
      d->set_dim_param(i == 0 ? std::string("N") : std::string("d").append(std::to_string(i)));
  }
  return t;
}

// Calls fn on each node of g that `needed` marks and on every node of the
// subgraphs they hold (nested ones too; their Placeholders are arguments).
void for_each_written(const Graph& g, const std::vector<char>& needed, const std::function<void(const Node&)>& fn) {
  for (int id = 0; id < g.num_nodes(); ++id) {
    if (!needed[id]) continue;
    const Node& n = g.node(id);
    fn(n);
    for (const auto& [name, value] : n.attrs.items()) {
      if (attr_type(value) != AttrType::kGraph) continue;
      const Graph sub = subgraph_graph(*std::get<SubgraphPtr>(value));
      std::vector<char> all(sub.num_nodes(), 1);
      for (const Node& p : sub.nodes())
        if (p.op == "Placeholder") all[p.id] = 0;
      for_each_written(sub, all, fn);
    }
  }
}

// The value names the nodes of g read, those of its subgraphs included.
void collect_reads(const ::onnx::GraphProto& g, std::set<std::string>& used) {
  for (const NodeProto& n : g.node()) {
    used.insert(n.input().begin(), n.input().end());
    for (const AttributeProto& a : n.attribute())
      if (a.has_g()) collect_reads(a.g(), used);
  }
  for (const auto& o : g.output()) used.insert(o.name());
}

std::vector<char> Exporter::plan(const std::vector<Output>& results, const std::set<int>& stop) {
  for (const Node& n : g_.nodes())
    for (size_t i = 0; i < n.inputs.size(); ++i) readers_[n.inputs[i]].emplace_back(n.id, static_cast<int>(i));
  for (Output r : results) ++signature_uses_[r];
  std::vector<char> needed(g_.num_nodes(), 0);
  std::vector<int> stack;
  for (Output r : results) stack.push_back(r.node);
  while (!stack.empty()) {
    int id = stack.back();
    stack.pop_back();
    if (needed[id]) continue;
    needed[id] = 1;
    if (stop.count(id)) continue;
    for (const Output& in : g_.node(id).inputs) stack.push_back(in.node);
  }
  return needed;
}

void Exporter::subgraph(const Subgraph& sub, size_t formal, const std::vector<Output>& outer, ::onnx::GraphProto* out) {
  HUB_CHECK(formal + outer.size() == sub.arguments.size(), "subgraph arguments");
  const Graph g = subgraph_graph(sub);
  Exporter child(*this, g, out);
  out->set_name(fresh("subgraph"));
  std::set<int> stop;
  for (size_t a = 0; a < sub.arguments.size(); ++a) {
    const Output arg = sub.arguments[a];
    stop.insert(arg.node);
    if (a < formal) {
      const std::string name = fresh(g.node(arg.node).name);
      auto* vi = out->add_input();
      vi->set_name(name);
      *vi->mutable_type() = type_of(g.spec(arg), false);
      child.set(arg, name);
    } else {
      const Val& v = val(outer[a - formal]);
      child.set(arg, v.name, v.nchw);
    }
  }
  const std::vector<char> needed = child.plan(sub.results, stop);
  for (int id = 0; id < g.num_nodes(); ++id)
    if (needed[id] && !stop.count(id)) exporters().at(g.node(id).op)(child, g.node(id));
  for (Output r : sub.results) {
    const std::string name = fresh(g.node(r.node).name + "_result");
    child.add("Identity", {child.nhwc(r)}, name, name);
    auto* vi = out->add_output();
    vi->set_name(name);
    *vi->mutable_type() = type_of(g.spec(r), false);
  }
}

::onnx::ModelProto Exporter::run() {
  const std::string where = "converting module " + spec_.source() + " to ONNX";
  if (options_.opset != 0 && (options_.opset < 13 || options_.opset > kMaxOpset))
    throw_error(Code::kInvalidArgument, where + ": --opset " + std::to_string(options_.opset) + " (supported: 13 to " +
                                            std::to_string(kMaxOpset) + ")");
  const SignatureInfo& sig = spec_.signature(options_.signature);
  // Variable values: the stored weights, else the initial values.
  Module m(spec_);
  for (const auto& [name, t] : m.variables().items()) variables_[name] = t;

  ::onnx::ModelProto model;
  model.set_ir_version(7);
  model.set_producer_name("hub");
  model.set_producer_version(HUB_VERSION);
  auto* opset_import = model.add_opset_import();
  opset_import->set_domain("");
  out_ = model.mutable_graph();
  out_->set_name(spec_.metadata().name.empty() ? "hub_module" : spec_.metadata().name);

  // The nodes the signature's outputs need, stopping at its inputs.
  std::set<int> inputs;
  for (const auto& [key, info] : sig.inputs) inputs.insert(g_.tensor(info.tensor_name).node);
  std::vector<Output> results;
  for (const auto& [key, info] : sig.outputs) results.push_back(g_.tensor(info.tensor_name));
  std::vector<char> needed = plan(results, inputs);
  std::vector<char> written = needed;
  for (int id : inputs) written[id] = 0;
  // Every op must have an ONNX form (subgraphs' too): list all that do not, at once.
  std::map<std::string, std::string> missing;
  for_each_written(g_, written, [&](const Node& n) {
    if (!exporters().count(n.op)) missing.emplace(n.op, n.name);
  });
  if (!missing.empty()) {
    std::string list;
    for (const auto& [op_name, node] : missing) list += (list.empty() ? "" : ", ") + op_name + " (node '" + node + "')";
    throw_error(Code::kUnimplemented, where + ": these ops have no ONNX equivalent: " + list);
  }
  // The opset: the lowest that has every op written, or the one asked for if it does.
  auto first_opset = [](const Node& n) {
    if (n.op == "HardSwish") return 14;
    if (n.op == "GridSample" || n.op == "RoiAlign") return 16;
    if ((n.op == "ScatterND" || n.op == "ScatterElements") && n.attrs.get_string("reduction") != "none") return 16;
    return 13;
  };
  int required = 13;
  std::string newest;  // the op (and node) that needs `required`
  for_each_written(g_, written, [&](const Node& n) {
    const int first = first_opset(n);
    if (first > required) {
      required = first;
      newest = n.op + " (node '" + n.name + "')";
    }
  });
  if (options_.opset != 0 && options_.opset < required)
    throw_error(Code::kInvalidArgument, where + ": --opset " + std::to_string(options_.opset) + " lacks " + newest +
                                            ", which ONNX has from opset " + std::to_string(required));
  opset_ = options_.opset != 0 ? options_.opset : required;
  opset_import->set_version(opset_);
  for (const auto& [key, info] : sig.inputs) {
    Output o = g_.tensor(info.tensor_name);
    std::string name = fresh(key);
    auto* vi = out_->add_input();
    vi->set_name(name);
    *vi->mutable_type() = type_of({info.dtype, info.shape});
    set(o, name);
  }
  // The outputs' names are the signature's keys: taken before any node's
  // value name can claim them.
  std::map<std::string, std::string> output_names;
  for (const auto& [key, info] : sig.outputs) output_names[key] = fresh(key);
  for (int id = 0; id < g_.num_nodes(); ++id) {
    if (!needed[id] || inputs.count(id)) continue;
    const Node& n = g_.node(id);
    exporters().at(n.op)(*this, n);
  }
  for (const auto& [key, info] : sig.outputs) {
    Output o = g_.tensor(info.tensor_name);
    const std::string& name = output_names.at(key);
    add("Identity", {nhwc(o)}, name, name);
    auto* vi = out_->add_output();
    vi->set_name(name);
    *vi->mutable_type() = type_of({info.dtype, info.shape});
  }
  // Weights are written where a layer reads them, transformed to ONNX's
  // layout; the variables' untransformed initializers then go unused.
  std::set<std::string> used;
  collect_reads(*out_, used);
  auto* inits = out_->mutable_initializer();
  inits->erase(
      std::remove_if(inits->begin(), inits->end(), [&](const ::onnx::TensorProto& t) { return !used.count(t.name()); }),
      inits->end());
  try {
    ::onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    throw_error(Code::kInternal, where + ": the written model fails ONNX's checker: " + e.what());
  }
  return model;
}

// ---- per-op export ---------------------------------------------------------------

Output in(const Node& n, int i) { return n.inputs[i]; }
Output out0(const Node& n) { return Output{n.id, 0}; }

// Integer input i of n as int64 (ONNX's index type), cast where it is int32.
std::string int64_input(Exporter& e, const Node& n, int i, const std::string& what) {
  const std::string v = e.nhwc(in(n, i));
  if (e.spec(in(n, i)).dtype == DType::kInt64) return v;
  const std::string wide = e.fresh(n.name + "/" + what);
  set_int(e.add("Cast", {v}, wide, wide), "to", ::onnx::TensorProto::INT64);
  return wide;
}

// Element-wise ops keep the layout of their 4-D inputs: NCHW when one of them
// already is (a lower-rank operand is aligned to rank 4 and transposed), else
// hub's own.
NodeProto* elementwise(Exporter& e, const Node& n, const std::string& op_type) {
  const int rank = e.spec(out0(n)).shape.rank();
  bool nchw = false;
  for (const Output& i : n.inputs) nchw = nchw || (rank == 4 && e.spec(i).shape.rank() == 4 && e.is_nchw(i));
  std::vector<std::string> ins;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    Output i = n.inputs[k];
    const int r = e.spec(i).shape.rank();
    if (!nchw) {
      ins.push_back(e.nhwc(i));
    } else if (r == 4) {
      ins.push_back(e.nchw(i));
    } else if (std::optional<Tensor> t = e.constant(i)) {
      // [.., C] broadcasting over NHWC is [C, 1, 1] (rank-aligned) over NCHW.
      std::vector<int64_t> dims(static_cast<size_t>(4 - r), 1);
      for (int64_t d : t->shape().dims()) dims.push_back(d);
      Tensor four = t->reshaped(Shape(dims));
      ins.push_back(e.initializer(evaluate("Transpose", {four}, Attrs().set("perm", std::vector<int64_t>{0, 3, 1, 2})),
                                  n.name + "/operand"));
    } else {
      std::vector<int64_t> dims(static_cast<size_t>(4 - r), 1);
      for (int64_t d : e.spec(i).shape.dims()) dims.push_back(d);
      std::string aligned = e.fresh(n.name + "/aligned");
      e.add("Reshape", {e.nhwc(i), e.ints(dims, n.name + "/aligned_shape")}, aligned, aligned);
      std::string nchw_value = e.fresh(n.name + "/aligned_nchw");
      set_ints(e.add("Transpose", {aligned}, nchw_value, nchw_value), "perm", {0, 3, 1, 2});
      ins.push_back(nchw_value);
    }
  }
  std::string y = e.fresh(n.name);
  NodeProto* node = e.add(op_type, ins, y, n.name);
  e.set(out0(n), y, nchw);
  return node;
}

template <const char* kOnnx>
void export_elementwise(Exporter& e, const Node& n) {
  elementwise(e, n, kOnnx);
}
constexpr char kAdd[] = "Add", kSum[] = "Sum", kSub[] = "Sub", kMul[] = "Mul", kDiv[] = "Div", kMax[] = "Max",
               kMin[] = "Min", kRelu[] = "Relu", kSigmoid[] = "Sigmoid", kTanh[] = "Tanh", kAbs[] = "Abs",
               kNeg[] = "Neg", kSqrt[] = "Sqrt", kExp[] = "Exp", kLog[] = "Log", kReciprocal[] = "Reciprocal",
               kIdentity[] = "Identity", kSign[] = "Sign", kHardSwish[] = "HardSwish", kPow[] = "Pow",
               kEqual[] = "Equal", kGreater[] = "Greater", kLess[] = "Less", kGreaterEqual[] = "GreaterOrEqual",
               kLessEqual[] = "LessOrEqual", kErf[] = "Erf", kFloor[] = "Floor", kCeil[] = "Ceil", kRound[] = "Round",
               kSin[] = "Sin", kCos[] = "Cos", kTan[] = "Tan", kAsin[] = "Asin", kAcos[] = "Acos", kAtan[] = "Atan",
               kSinh[] = "Sinh", kCosh[] = "Cosh", kAsinh[] = "Asinh", kAcosh[] = "Acosh", kAtanh[] = "Atanh",
               kNot[] = "Not", kAnd[] = "And", kOr[] = "Or", kWhere[] = "Where";

// Mod: ONNX's fmod 1 takes the dividend's sign, fmod 0 the divisor's (for
// integers only: ONNX's float Mod is fmod).
void export_mod(Exporter& e, const Node& n) {
  const bool truncate = n.attrs.get_bool("truncate");
  if (truncate || e.spec(in(n, 0)).dtype != DType::kFloat32) {
    set_int(elementwise(e, n, "Mod"), "fmod", truncate ? 1 : 0);
    return;
  }
  // A float Mod with the divisor's sign (ONNX's float Mod is C's fmod): r = fmod(x, y), plus y where r is
  // nonzero and its sign differs from y's (as TensorFlow's FloorMod computes it).
  auto node = [&](const std::string& op, const std::vector<std::string>& inputs, const std::string& what) {
    return e.value(op, inputs, n.name + "/" + what);
  };
  const std::string x = e.nhwc(in(n, 0)), y = e.nhwc(in(n, 1));
  const std::string zero = e.initializer(Tensor::scalar<float>(0), n.name + "/zero");
  const std::string r = e.fresh(n.name + "/fmod");
  set_int(e.add("Mod", {x, y}, r, r), "fmod", 1);
  const std::string fix =
      node("And",
           {node("Xor", {node("Less", {r, zero}, "r_negative"), node("Less", {y, zero}, "y_negative")}, "signs_differ"),
            node("Not", {node("Equal", {r, zero}, "r_zero")}, "r_nonzero")},
           "adjust");
  const std::string out = e.fresh(n.name);
  e.add("Add", {r, node("Where", {fix, y, zero}, "by")}, out, n.name);
  e.set(out0(n), out);
}

// NotEqual: Xor of bools, else Not of Equal.
void export_not_equal(Exporter& e, const Node& n) {
  if (e.spec(in(n, 0)).dtype == DType::kBool) {
    elementwise(e, n, "Xor");
    return;
  }
  elementwise(e, n, "Equal");
  const bool nchw = e.is_nchw(out0(n));
  std::string y = e.fresh(n.name + "/not");
  e.add("Not", {nchw ? e.nchw(out0(n)) : e.nhwc(out0(n))}, y, y);
  e.set(out0(n), y, nchw);
}

// A unary op with attributes: layout kept.
NodeProto* unary(Exporter& e, const Node& n, const std::string& op_type) {
  Output x = in(n, 0);
  const bool nchw = e.spec(x).shape.rank() == 4 && e.is_nchw(x);
  std::string y = e.fresh(n.name);
  NodeProto* p = e.add(op_type, {nchw ? e.nchw(x) : e.nhwc(x)}, y, n.name);
  e.set(out0(n), y, nchw);
  return p;
}

void export_square(Exporter& e, const Node& n) {
  Output x = in(n, 0);
  const bool nchw = e.spec(x).shape.rank() == 4 && e.is_nchw(x);
  std::string v = nchw ? e.nchw(x) : e.nhwc(x), y = e.fresh(n.name);
  e.add("Mul", {v, v}, y, n.name);
  e.set(out0(n), y, nchw);
}

void export_rsqrt(Exporter& e, const Node& n) {
  Output x = in(n, 0);
  const bool nchw = e.spec(x).shape.rank() == 4 && e.is_nchw(x);
  std::string s = e.fresh(n.name + "/sqrt"), y = e.fresh(n.name);
  e.add("Sqrt", {nchw ? e.nchw(x) : e.nhwc(x)}, s, s);
  e.add("Reciprocal", {s}, y, n.name);
  e.set(out0(n), y, nchw);
}

void export_relu6(Exporter& e, const Node& n) {
  Output x = in(n, 0);
  const bool nchw = e.spec(x).shape.rank() == 4 && e.is_nchw(x);
  std::string y = e.fresh(n.name);
  e.add("Clip",
        {nchw ? e.nchw(x) : e.nhwc(x), e.initializer(Tensor::scalar<float>(0), n.name + "/min"),
         e.initializer(Tensor::scalar<float>(6), n.name + "/max")},
        y, n.name);
  e.set(out0(n), y, nchw);
}

void export_clip(Exporter& e, const Node& n) {
  Output x = in(n, 0);
  const bool nchw = e.spec(x).shape.rank() == 4 && e.is_nchw(x);
  std::string y = e.fresh(n.name);
  // An infinite bound is written as an absent input (ONNX Clip's default).
  auto bound = [&](const char* name) -> std::string {
    if (!n.attrs.has(name) || !std::isfinite(n.attrs.get_float(name))) return "";
    return e.initializer(Tensor::scalar<float>(static_cast<float>(n.attrs.get_float(name))), n.name + "/" + name);
  };
  std::vector<std::string> ins{nchw ? e.nchw(x) : e.nhwc(x), bound("min"), bound("max")};
  while (ins.back().empty()) ins.pop_back();
  e.add("Clip", ins, y, n.name);
  e.set(out0(n), y, nchw);
}

void export_elu(Exporter& e, const Node& n) {
  set_float(unary(e, n, "Elu"), "alpha", n.attrs.has("alpha") ? n.attrs.get_float("alpha") : 1.0);
}
void export_leaky_relu(Exporter& e, const Node& n) {
  set_float(unary(e, n, "LeakyRelu"), "alpha", n.attrs.get_float("alpha"));
}
void export_hard_sigmoid(Exporter& e, const Node& n) {
  NodeProto* p = unary(e, n, "HardSigmoid");
  set_float(p, "alpha", n.attrs.get_float("alpha"));
  set_float(p, "beta", n.attrs.get_float("beta"));
}

template <const char* kOnnx>
void export_unary(Exporter& e, const Node& n) {
  unary(e, n, kOnnx);
}

void export_cast(Exporter& e, const Node& n) {
  set_int(unary(e, n, "Cast"), "to", dtype_to_onnx(n.attrs.get_dtype("dtype")));
}

void export_const(Exporter& e, const Node& n) { e.set(out0(n), e.initializer(n.attrs.get_tensor("value"), n.name)); }

void export_variable(Exporter& e, const Node& n) { e.set(out0(n), e.initializer(*e.constant(out0(n)), n.name)); }

// Axis attributes of a softmax over hub's axis: remapped when the input is NCHW.
template <const char* kOnnx>
void export_softmax(Exporter& e, const Node& n) {
  Output x = in(n, 0);
  const int rank = e.spec(x).shape.rank();
  int64_t axis = n.attrs.has("axis") ? n.attrs.get_int("axis") : -1;
  if (axis < 0) axis += rank;
  const bool nchw = rank == 4 && e.is_nchw(x);
  static constexpr int64_t kNhwcToNchw[4] = {0, 2, 3, 1};
  std::string y = e.fresh(n.name);
  set_int(e.add(kOnnx, {nchw ? e.nchw(x) : e.nhwc(x)}, y, n.name), "axis", nchw ? kNhwcToNchw[axis] : axis);
  e.set(out0(n), y, nchw);
}
constexpr char kSoftmax[] = "Softmax", kLogSoftmax[] = "LogSoftmax";

// Whether every use of o is the weight input of a convolution or MatMul
// (which export it through Exporter::weight).
bool only_weight_uses(const Exporter& e, Output o) {
  for (const auto& [c, i] : e.readers(o)) {
    const std::string& op = e.graph().node(c).op;
    if (i != 1 || (op != "Conv2D" && op != "DepthwiseConv2dNative" && op != "MatMul")) return false;
  }
  return true;
}

// QuantizeLinear / DequantizeLinear: per tensor they act element by element,
// so the value keeps its layout; a per-channel axis follows an NCHW value.
// Dequantized constant weights are written where a layer reads them.
void export_quantize(Exporter& e, const Node& n) {
  if (n.op == "DequantizeLinear" && e.constant(in(n, 0)) && only_weight_uses(e, out0(n))) return;
  Output x = in(n, 0);
  const bool nchw = e.spec(x).shape.rank() == 4 && e.is_nchw(x);
  int64_t axis = n.attrs.get_int("axis");
  if (axis < 0) axis += e.spec(x).shape.rank();
  if (nchw) axis = std::vector<int64_t>{0, 2, 3, 1}[static_cast<size_t>(axis)];
  std::string y = e.fresh(n.name);
  NodeProto* p = e.add(n.op, {nchw ? e.nchw(x) : e.nhwc(x), e.nhwc(in(n, 1)), e.nhwc(in(n, 2))}, y, n.name);
  set_int(p, "axis", axis);
  e.set(out0(n), y, nchw);
}

// A BiasAdd of constant biases that is the only reader of a Conv2D,
// DepthwiseConv2dNative or MatMul becomes that layer's bias input (ONNX's
// Conv and Gemm take one): the layer's node, else null.
const Node* bias_layer(const Exporter& e, const Node& bias_add) {
  const Node& layer = e.node(in(bias_add, 0));
  if (layer.op != "Conv2D" && layer.op != "DepthwiseConv2dNative" && layer.op != "MatMul") return nullptr;
  if (layer.op == "MatMul" && layer.attrs.get_bool("transpose_a")) return nullptr;
  if (e.uses(in(bias_add, 0)) != 1 || !e.constant(in(bias_add, 1))) return nullptr;
  return &layer;
}

// The BiasAdd folded into `layer` (see bias_layer), else null.
const Node* folded_bias(const Exporter& e, const Node& layer) {
  for (const auto& [c, i] : e.readers(out0(layer))) {
    const Node& n = e.graph().node(c);
    if (n.op == "BiasAdd" && i == 0 && bias_layer(e, n) == &layer) return &n;
  }
  return nullptr;
}

// The inputs of `layer`'s ONNX node: x and w, then its bias if one is folded
// into it.
// When the layer reads a dequantized activation and int8 weights (the QDQ
// form), the bias is int32 with scale input_scale * weight_scale[c], as
// runtimes want it to fuse the layer into an integer kernel.
std::vector<std::string> layer_inputs(Exporter& e, const Node& layer, const std::string& x_name,
                                      const std::string& w_name) {
  const Node* bias_add = folded_bias(e, layer);
  if (bias_add == nullptr) return {x_name, w_name};
  const Tensor b = *e.constant(in(*bias_add, 1));
  const Node& x = e.node(in(layer, 0));
  const Node& w = e.node(in(layer, 1));
  std::optional<Tensor> sx, sw;
  if (x.op == "DequantizeLinear" && w.op == "DequantizeLinear") {
    sx = e.constant(x.inputs[1]);
    sw = e.constant(w.inputs[1]);
  }
  const int64_t c = b.num_elements();
  if (!sx || !sw || b.dtype() != DType::kFloat32 || sx->num_elements() != 1 ||
      (sw->num_elements() != 1 && sw->num_elements() != c)) {
    return {x_name, w_name, e.initializer(b, bias_add->name)};
  }
  std::vector<float> scale(static_cast<size_t>(c));
  std::vector<int32_t> q(static_cast<size_t>(c));
  const float* bv = b.data<float>();
  const float* swv = sw->data<float>();
  for (int64_t i = 0; i < c; ++i) {
    scale[i] = sx->data<float>()[0] * swv[sw->num_elements() == 1 ? 0 : i];
    const double v = std::nearbyint(static_cast<double>(bv[i]) / scale[i]);
    q[i] = static_cast<int32_t>(std::clamp(v, -2147483647.0, 2147483647.0));
  }
  const std::string y = e.fresh(bias_add->name + "/dequantized");
  NodeProto* d = e.add("DequantizeLinear",
                       {e.initializer(Tensor::from_vector<int32_t>({c}, q), bias_add->name + "/int32"),
                        e.initializer(Tensor::from_vector<float>({c}, scale), bias_add->name + "/scale"),
                        e.initializer(Tensor::from_vector<int32_t>({c}, std::vector<int32_t>(q.size(), 0)),
                                      bias_add->name + "/zero_point")},
                       y, y);
  set_int(d, "axis", 0);
  return {x_name, w_name, y};
}

// 2-D MatMul with transposes: Gemm.
void export_matmul(Exporter& e, const Node& n) {
  // Quantized weights as DequantizeLinear of the int8 initializer (see weight()).
  const bool quantized = e.node(in(n, 1)).op == "DequantizeLinear";
  const std::string b = quantized
                            ? e.weight(
                                  in(n, 1), [](const Tensor& t) { return t; }, [](const std::string& v) { return v; })
                            : e.nhwc(in(n, 1));
  std::string y = e.fresh(n.name);
  NodeProto* p = e.add("Gemm", layer_inputs(e, n, e.nhwc(in(n, 0)), b), y, n.name);
  set_int(p, "transA", n.attrs.get_bool("transpose_a"));
  set_int(p, "transB", n.attrs.get_bool("transpose_b"));
  e.set(out0(n), y);
}

void export_batch_matmul(Exporter& e, const Node& n) {
  std::vector<std::string> ins;
  for (int k = 0; k < 2; ++k) {
    Output x = in(n, k);
    std::string v = e.nhwc(x);
    if (n.attrs.get_bool(k == 0 ? "adj_x" : "adj_y")) {
      const int r = e.spec(x).shape.rank();
      std::vector<int64_t> perm;
      for (int d = 0; d < r - 2; ++d) perm.push_back(d);
      perm.push_back(r - 1);
      perm.push_back(r - 2);
      std::string t = e.fresh(n.name + "/adj");
      set_ints(e.add("Transpose", {v}, t, t), "perm", perm);
      v = t;
    }
    ins.push_back(v);
  }
  std::string y = e.fresh(n.name);
  e.add("MatMul", ins, y, n.name);
  e.set(out0(n), y);
}

// BiasAdd adds along hub's last dim: NCHW values get it as [C, 1, 1]; one
// folded into its layer (bias_layer) is that layer's output.
void export_bias_add(Exporter& e, const Node& n) {
  Output x = in(n, 0);
  const bool nchw = e.spec(x).shape.rank() == 4 && e.is_nchw(x);
  if (bias_layer(e, n)) {
    e.set(out0(n), nchw ? e.nchw(x) : e.nhwc(x), nchw);
    return;
  }
  std::string bias = e.weight(
      in(n, 1),
      [&](const Tensor& t) {
        return nchw ? t.reshaped({t.num_elements(), 1, 1}).clone() : t;
      },
      [&](const std::string& b) {
        if (!nchw) return b;
        std::string r = e.fresh(n.name + "/bias_c11");
        e.add("Reshape", {b, e.ints({-1, 1, 1}, n.name + "/bias_shape")}, r, r);
        return r;
      });
  std::string y = e.fresh(n.name);
  e.add("Add", {nchw ? e.nchw(x) : e.nhwc(x), bias}, y, n.name);
  e.set(out0(n), y, nchw);
}

// Convolution and pooling geometry: TF's SAME is ONNX's SAME_UPPER.
// Strides, dilations and padding of a window of `kernel` (height, width)
// over `x` (NHWC). SAME padding is auto_pad SAME_UPPER, except with
// dilations, which ONNX Runtime refuses with auto_pad: then explicit pads,
// where they are known (a stride of 1, or a known input size).
void window_attrs(NodeProto* p, const Node& n, bool dilations, const std::vector<int64_t>& kernel, const Shape& x) {
  auto pair = [](const std::vector<int64_t>& v) { return v.size() == 4 ? std::vector<int64_t>{v[1], v[2]} : v; };
  const std::vector<int64_t> strides = pair(n.attrs.get_ints("strides"));
  const std::vector<int64_t> dilation =
      dilations && n.attrs.has("dilations") ? pair(n.attrs.get_ints("dilations")) : std::vector<int64_t>{1, 1};
  set_ints(p, "strides", strides);
  if (dilations && n.attrs.has("dilations")) set_ints(p, "dilations", dilation);
  const std::string& padding = n.attrs.get_string("padding");
  if (padding == "SAME") {
    std::vector<int64_t> pads(4, 0);  // [top, left, bottom, right]
    bool explicit_pads = dilation[0] > 1 || dilation[1] > 1;
    for (int d = 0; d < 2 && explicit_pads; ++d) {
      const int64_t in = x[d + 1], s = strides[static_cast<size_t>(d)];
      const int64_t reach = (kernel[static_cast<size_t>(d)] - 1) * dilation[static_cast<size_t>(d)] + 1;
      if (s != 1 && in < 0) explicit_pads = false;
      const int64_t total = s == 1 ? reach - 1 : std::max<int64_t>(((in + s - 1) / s - 1) * s + reach - in, 0);
      pads[static_cast<size_t>(d)] = total / 2;
      pads[static_cast<size_t>(d) + 2] = total - total / 2;
    }
    if (explicit_pads)
      set_ints(p, "pads", pads);
    else
      set_string(p, "auto_pad", "SAME_UPPER");
  } else if (padding == "VALID") {
    set_string(p, "auto_pad", "VALID");
  } else {
    std::vector<int64_t> e = n.attrs.get_ints("explicit_paddings");
    if (e.size() == 8) e = {e[2], e[3], e[4], e[5]};
    set_ints(p, "pads", {e[0], e[2], e[1], e[3]});  // [top, left, bottom, right]
  }
}

void export_conv(Exporter& e, const Node& n) {
  const Shape w = e.spec(in(n, 1)).shape;  // [KH, KW, C/G, O]
  const Shape x = e.spec(in(n, 0)).shape;
  const int64_t groups = x[3] > 0 && w[2] > 0 ? x[3] / w[2] : 1;
  std::string f = e.weight(
      in(n, 1),
      [](const Tensor& t) {
        return evaluate("Transpose", {t}, Attrs().set("perm", std::vector<int64_t>{3, 2, 0, 1}));
      },
      [&](const std::string& v) {
        std::string t = e.fresh(n.name + "/oihw");
        set_ints(e.add("Transpose", {v}, t, t), "perm", {3, 2, 0, 1});
        return t;
      });
  std::string y = e.fresh(n.name);
  NodeProto* p = e.add("Conv", layer_inputs(e, n, e.nchw(in(n, 0)), f), y, n.name);
  set_ints(p, "kernel_shape", {w[0], w[1]});
  set_int(p, "group", groups);
  window_attrs(p, n, true, {w[0], w[1]}, x);
  e.set(out0(n), y, true);
}

// Conv2DTranspose: ConvTranspose with W [C, O/G, KH, KW] (the filter
// [KH, KW, O/G, C] transposed (3, 2, 0, 1)).
void export_conv_transpose(Exporter& e, const Node& n) {
  const Shape w = e.spec(in(n, 1)).shape;
  const std::vector<int64_t> perm{3, 2, 0, 1};
  std::string f = e.weight(
      in(n, 1), [&](const Tensor& t) { return evaluate("Transpose", {t}, Attrs().set("perm", perm)); },
      [&](const std::string& v) {
        std::string t = e.fresh(n.name + "/cohw");
        set_ints(e.add("Transpose", {v}, t, t), "perm", perm);
        return t;
      });
  auto pair = [](const std::vector<int64_t>& v) { return v.size() == 4 ? std::vector<int64_t>{v[1], v[2]} : v; };
  std::vector<int64_t> p = n.attrs.get_ints("explicit_paddings");  // [top, bottom, left, right]
  if (p.size() == 8) p = {p[2], p[3], p[4], p[5]};
  std::string y = e.fresh(n.name);
  NodeProto* node = e.add("ConvTranspose", layer_inputs(e, n, e.nchw(in(n, 0)), f), y, n.name);
  set_ints(node, "kernel_shape", {w[0], w[1]});
  set_ints(node, "strides", pair(n.attrs.get_ints("strides")));
  set_ints(node, "dilations", pair(n.attrs.get_ints("dilations")));
  set_ints(node, "pads", {p[0], p[2], p[1], p[3]});
  set_ints(node, "output_padding", n.attrs.get_ints("output_padding"));
  set_int(node, "group", n.attrs.get_int("groups"));
  e.set(out0(n), y, true);
}

void export_depthwise(Exporter& e, const Node& n) {
  const Shape w = e.spec(in(n, 1)).shape;  // [KH, KW, C, M]
  const int64_t c = w[2], mult = w[3];
  auto to_onnx = [&](const Tensor& t) {
    return evaluate("Transpose", {t}, Attrs().set("perm", std::vector<int64_t>{2, 3, 0, 1}))
        .reshaped({c * mult, 1, w[0], w[1]});
  };
  std::string f = e.weight(in(n, 1), to_onnx, [&](const std::string& v) {
    std::string t = e.fresh(n.name + "/cmhw"), r = e.fresh(n.name + "/oihw");
    set_ints(e.add("Transpose", {v}, t, t), "perm", {2, 3, 0, 1});
    e.add("Reshape", {t, e.ints({c * mult, 1, w[0], w[1]}, n.name + "/oihw_shape")}, r, r);
    return r;
  });
  std::string y = e.fresh(n.name);
  NodeProto* p = e.add("Conv", layer_inputs(e, n, e.nchw(in(n, 0)), f), y, n.name);
  set_ints(p, "kernel_shape", {w[0], w[1]});
  set_int(p, "group", c);
  window_attrs(p, n, true, {w[0], w[1]}, e.spec(in(n, 0)).shape);
  e.set(out0(n), y, true);
}

template <bool kMax>
void export_pool(Exporter& e, const Node& n) {
  std::vector<int64_t> k = n.attrs.get_ints("ksize");
  if (k.size() == 4) k = {k[1], k[2]};
  std::string y = e.fresh(n.name);
  NodeProto* p = e.add(kMax ? "MaxPool" : "AveragePool", {e.nchw(in(n, 0))}, y, n.name);
  set_ints(p, "kernel_shape", k);
  window_attrs(p, n, kMax, k, e.spec(in(n, 0)).shape);
  if (n.attrs.has("ceil_mode") && n.attrs.get_bool("ceil_mode")) set_int(p, "ceil_mode", 1);
  if (!kMax) set_int(p, "count_include_pad", n.attrs.has("count_include_pad") && n.attrs.get_bool("count_include_pad"));
  e.set(out0(n), y, true);
}

void export_batch_norm(Exporter& e, const Node& n) {
  if (n.attrs.get_bool("is_training")) e.fail(n, "batch normalization in training mode has no ONNX inference form");
  Output x = in(n, 0);
  const int rank = e.spec(x).shape.rank();
  if (rank != 4 && rank != 2) e.fail(n, "inputs of rank 2 or 4 only");
  std::vector<std::string> ins{rank == 4 ? e.nchw(x) : e.nhwc(x)};
  for (int k = 1; k <= 4; ++k)
    ins.push_back(e.weight(
        in(n, k), [](const Tensor& t) { return t; }, [](const std::string& v) { return v; }));
  std::string y = e.fresh(n.name);
  set_float(e.add("BatchNormalization", ins, y, n.name), "epsilon", n.attrs.get_float("epsilon"));
  e.set(out0(n), y, rank == 4);
}

void export_lrn(Exporter& e, const Node& n) {
  const int64_t size = 2 * n.attrs.get_int("depth_radius") + 1;
  std::string y = e.fresh(n.name);
  NodeProto* p = e.add("LRN", {e.nchw(in(n, 0))}, y, n.name);
  set_int(p, "size", size);
  set_float(p, "alpha", n.attrs.get_float("alpha") * static_cast<double>(size));
  set_float(p, "beta", n.attrs.get_float("beta"));
  set_float(p, "bias", n.attrs.get_float("bias"));
  e.set(out0(n), y, true);
}

// Reductions over hub axes: on an NCHW value when the remaining dims keep
// hub's order there too (e.g. a global pool), else on the NHWC value.
template <const char* kOnnx>
void export_reduce(Exporter& e, const Node& n, bool axes_as_input) {
  Output x = in(n, 0);
  const int rank = e.spec(x).shape.rank();
  std::vector<int64_t> axes = n.attrs.get_ints("axes");
  if (axes.empty())
    for (int d = 0; d < rank; ++d) axes.push_back(d);
  for (int64_t& a : axes)
    if (a < 0) a += rank;
  const bool keep = n.attrs.get_bool("keep_dims");
  bool nchw = rank == 4 && e.is_nchw(x);
  static constexpr int64_t kNhwcToNchw[4] = {0, 2, 3, 1};
  std::vector<int64_t> onnx_axes = axes;
  if (nchw) {
    for (int64_t& a : onnx_axes) a = kNhwcToNchw[a];
    if (!keep) {
      // Remaining hub dims in NHWC order vs their order in NCHW.
      std::vector<int64_t> hub_rest, nchw_rest;
      for (int d = 0; d < 4; ++d)
        if (std::find(axes.begin(), axes.end(), d) == axes.end()) hub_rest.push_back(d);
      for (int64_t d : {0, 3, 1, 2})
        if (std::find(axes.begin(), axes.end(), d) == axes.end()) nchw_rest.push_back(d);
      if (hub_rest != nchw_rest) {
        nchw = false;
        onnx_axes = axes;
      }
    }
  }
  std::string y = e.fresh(n.name);
  NodeProto* p = axes_as_input
                     ? e.add(kOnnx, {nchw ? e.nchw(x) : e.nhwc(x), e.ints(onnx_axes, n.name + "/axes")}, y, n.name)
                     : e.add(kOnnx, {nchw ? e.nchw(x) : e.nhwc(x)}, y, n.name);
  if (!axes_as_input) set_ints(p, "axes", onnx_axes);
  set_int(p, "keepdims", keep);
  e.set(out0(n), y, nchw && keep);
}
constexpr char kReduceSum[] = "ReduceSum", kReduceMean[] = "ReduceMean", kReduceMax[] = "ReduceMax",
               kReduceMin[] = "ReduceMin", kReduceProd[] = "ReduceProd";
void export_sum(Exporter& e, const Node& n) { export_reduce<kReduceSum>(e, n, true); }
void export_mean(Exporter& e, const Node& n) { export_reduce<kReduceMean>(e, n, false); }
void export_max(Exporter& e, const Node& n) { export_reduce<kReduceMax>(e, n, false); }
void export_min(Exporter& e, const Node& n) { export_reduce<kReduceMin>(e, n, false); }
void export_prod(Exporter& e, const Node& n) { export_reduce<kReduceProd>(e, n, false); }

void export_tile(Exporter& e, const Node& n) {
  const std::string y = e.fresh(n.name);
  e.add("Tile", {e.nhwc(in(n, 0)), e.ints(n.attrs.get_ints("multiples"), n.name + "/repeats")}, y, n.name);
  e.set(out0(n), y);
}

// ListSetItem(list, index, item): the list (its rows reshaped to the item's,
// which an empty list takes) with the item appended, the item scattered to
// row `index`, then the first max(n, index + 1) rows: a replaced row keeps n
// rows, an appended one makes n + 1.
void export_list_set_item(Exporter& e, const Node& n) {
  auto node = [&](const std::string& op, const std::vector<std::string>& inputs, const std::string& what) {
    return e.value(op, inputs, n.name + "/" + what);
  };
  const std::string index = int64_input(e, n, 1, "index");
  const std::string list = e.nhwc(in(n, 0)), item = e.nhwc(in(n, 2));
  const std::string rows = node(
      "Slice", {node("Shape", {list}, "list_shape"), e.ints({0}, n.name + "/first"), e.ints({1}, n.name + "/second")},
      "rows");
  auto joined = [&](const std::vector<std::string>& inputs, const std::string& what) {
    const std::string v = e.fresh(n.name + "/" + what);
    set_int(e.add("Concat", inputs, v, v), "axis", 0);
    return v;
  };
  const std::string fixed =
      node("Reshape", {list, joined({rows, node("Shape", {item}, "item_shape")}, "rows_shape")}, "rows_as_item");
  const std::string row = node("Unsqueeze", {item, e.ints({0}, n.name + "/axis")}, "row");
  const std::string set = node(
      "ScatterND",
      {joined({fixed, row}, "appended"), node("Reshape", {index, e.ints({1, 1}, n.name + "/at_shape")}, "at"), row},
      "set");
  const std::string after = node(
      "Add", {node("Reshape", {index, e.ints({1}, n.name + "/one_shape")}, "index_1d"), e.ints({1}, n.name + "/one")},
      "after");
  const std::string y = e.fresh(n.name);
  e.add("Slice",
        {set, e.ints({0}, n.name + "/start"), node("Max", {rows, after}, "length"), e.ints({0}, n.name + "/axes")}, y,
        n.name);
  e.set(out0(n), y);
}

void export_reshape(Exporter& e, const Node& n) {
  std::string y = e.fresh(n.name);
  e.add("Reshape", {e.nhwc(in(n, 0)), e.ints(n.attrs.get_ints("shape"), n.name + "/shape")}, y, n.name);
  e.set(out0(n), y);
}

// Dim `dim` of node input `input`'s run-time shape (Shape, then Gather): an
// int64 scalar, or a one-element vector.
std::string reference_dim(Exporter& e, const Node& n, int64_t input, int64_t dim, bool scalar) {
  const std::string shape = e.fresh(n.name + "/reference_shape"), y = e.fresh(n.name + "/reference_dim");
  e.add("Shape", {e.nhwc(in(n, static_cast<int>(input)))}, shape, shape);
  const std::string at =
      scalar ? e.initializer(Tensor::scalar<int64_t>(dim), n.name + "/at") : e.ints({dim}, n.name + "/at");
  e.add("Gather", {shape, at}, y, y);
  return y;
}

// A DynamicReshape's or DynamicSlice's target as a run-time int64 vector:
// the attribute's entries, with those its `from` triples name read from the
// reference inputs' shapes.
std::string dims_with_references(Exporter& e, const Node& n, std::vector<int64_t> target) {
  const std::vector<int64_t> from = n.attrs.get_ints("from");
  std::map<int64_t, std::string> named;
  for (size_t k = 0; k + 2 < from.size(); k += 3) named[from[k]] = reference_dim(e, n, from[k + 1], from[k + 2], false);
  std::vector<std::string> parts;
  for (size_t i = 0; i < target.size(); ++i)
    parts.push_back(named.count(static_cast<int64_t>(i)) ? named.at(static_cast<int64_t>(i))
                                                         : e.ints({target[i]}, n.name + "/dim"));
  const std::string dims = e.fresh(n.name + "/dims");
  set_int(e.add("Concat", parts, dims, dims), "axis", 0);
  return dims;
}

void export_dynamic_reshape(Exporter& e, const Node& n) {
  std::vector<int64_t> shape = n.attrs.get_ints("shape");
  const std::vector<int64_t> from = n.attrs.get_ints("from");
  for (size_t k = 0; k + 2 < from.size(); k += 3) shape.at(static_cast<size_t>(from[k])) = -2;  // read at run time
  for (int64_t d : shape)
    if (d == 0) e.fail(n, "a zero-size dim in the target has no ONNX Reshape form here (0 copies a dim there)");
  std::string y = e.fresh(n.name);
  e.add("Reshape", {e.nhwc(in(n, 0)), dims_with_references(e, n, shape)}, y, n.name);
  e.set(out0(n), y);
}

// DynamicSlice: Slice over every dim; ends begin + size (the rest: INT64_MAX)
// or, at the `from` positions, the reference dims (ONNX clamps them as hub does).
// base + the sum of coefficient x dim over (input, dim, coefficient) terms
// of n's reference inputs, as an int64 scalar or one-element vector built at
// run time (Shape, Gather, Mul, Add); a constant without terms.
std::string run_time_sum(Exporter& e, const Node& n, int64_t base, const std::vector<std::array<int64_t, 3>>& terms,
                         bool scalar) {
  auto constant = [&](int64_t v, const std::string& what) {
    return scalar ? e.initializer(Tensor::scalar<int64_t>(v), n.name + "/" + what) : e.ints({v}, n.name + "/" + what);
  };
  std::string sum;
  for (const auto& [input, dim, coefficient] : terms) {
    std::string term = reference_dim(e, n, input, dim, scalar);
    if (coefficient != 1) {
      const std::string scaled = e.fresh(n.name + "/term");
      e.add("Mul", {term, constant(coefficient, "coefficient")}, scaled, scaled);
      term = scaled;
    }
    if (!sum.empty()) {
      const std::string next = e.fresh(n.name + "/sum");
      e.add("Add", {sum, term}, next, next);
      term = next;
    }
    sum = term;
  }
  if (sum.empty() || base == 0) return sum.empty() ? constant(base, "value") : sum;
  const std::string with_base = e.fresh(n.name + "/sum");
  e.add("Add", {sum, constant(base, "base")}, with_base, with_base);
  return with_base;
}

// DynamicSlice's starts: its begin, with the `begin_from` terms added at run
// time where it has them.
std::string slice_starts(Exporter& e, const Node& n) {
  const std::vector<int64_t> begin = n.attrs.get_ints("begin"), terms = n.attrs.get_ints("begin_from");
  if (terms.empty()) return e.ints(begin, n.name + "/starts");
  std::vector<std::string> parts;
  for (size_t d = 0; d < begin.size(); ++d) {
    std::vector<std::array<int64_t, 3>> at;
    for (size_t k = 0; k + 3 < terms.size(); k += 4)
      if (terms[k] == static_cast<int64_t>(d)) at.push_back({terms[k + 1], terms[k + 2], terms[k + 3]});
    parts.push_back(run_time_sum(e, n, begin[d], at, false));
  }
  const std::string starts = e.fresh(n.name + "/starts");
  set_int(e.add("Concat", parts, starts, starts), "axis", 0);
  return starts;
}

void export_dynamic_slice(Exporter& e, const Node& n) {
  const std::vector<int64_t> begin = n.attrs.get_ints("begin"), size = n.attrs.get_ints("size");
  const std::vector<int64_t> terms = n.attrs.get_ints("begin_from");
  for (size_t k = 0; k + 3 < terms.size(); k += 4)
    if (size[static_cast<size_t>(terms[k])] >= 0)
      e.fail(n, "a fixed size after a start computed at run time has no ONNX Slice form");
  std::vector<int64_t> ends, axes;
  for (size_t d = 0; d < begin.size(); ++d) {
    ends.push_back(size[d] < 0 ? std::numeric_limits<int64_t>::max() : begin[d] + size[d]);
    axes.push_back(static_cast<int64_t>(d));
  }
  std::string y = e.fresh(n.name);
  e.add("Slice",
        {e.nhwc(in(n, 0)), slice_starts(e, n), dims_with_references(e, n, ends), e.ints(axes, n.name + "/axes")}, y,
        n.name);
  e.set(out0(n), y);
}

// DynamicRange: Range of its start and limit built at run time, in its dtype.
void export_dynamic_range(Exporter& e, const Node& n) {
  const Attrs& a = n.attrs;
  const DType dtype = a.get_dtype("dtype");
  const auto bound = ops::dynamic_range_terms(a);
  auto typed = [&](std::string v, const std::string& what) {
    if (dtype == DType::kInt64) return v;
    const std::string cast = e.fresh(n.name + "/" + what + "_cast");
    set_int(e.add("Cast", {v}, cast, cast), "to", dtype_to_onnx(dtype));
    return cast;
  };
  const std::string delta = e.initializer(
      evaluate("Cast", {Tensor::scalar<int64_t>(a.get_int("delta"))}, Attrs().set("dtype", dtype)), n.name + "/delta");
  std::string y = e.fresh(n.name);
  e.add("Range",
        {typed(run_time_sum(e, n, a.get_int("start"), bound[0], true), "start"),
         typed(run_time_sum(e, n, a.get_int("limit"), bound[1], true), "limit"), delta},
        y, n.name);
  e.set(out0(n), y);
}

void export_squeeze(Exporter& e, const Node& n) {
  std::vector<int64_t> axes = n.attrs.get_ints("axes");
  if (axes.empty()) {
    const Shape s = e.spec(in(n, 0)).shape;
    for (int d = 0; d < s.rank(); ++d)
      if (s[d] == 1) axes.push_back(d);
  }
  std::string y = e.fresh(n.name);
  e.add("Squeeze", {e.nhwc(in(n, 0)), e.ints(axes, n.name + "/axes")}, y, n.name);
  e.set(out0(n), y);
}

void export_expand_dims(Exporter& e, const Node& n) {
  std::string y = e.fresh(n.name);
  e.add("Unsqueeze", {e.nhwc(in(n, 0)), e.ints({n.attrs.get_int("axis")}, n.name + "/axes")}, y, n.name);
  e.set(out0(n), y);
}

void export_transpose(Exporter& e, const Node& n) {
  std::string y = e.fresh(n.name);
  set_ints(e.add("Transpose", {e.nhwc(in(n, 0))}, y, n.name), "perm", n.attrs.get_ints("perm"));
  e.set(out0(n), y);
}

void export_concat(Exporter& e, const Node& n) {
  const int rank = e.spec(out0(n)).shape.rank();
  int64_t axis = n.attrs.get_int("axis");
  if (axis < 0) axis += rank;
  bool nchw = rank == 4;
  for (const Output& i : n.inputs) nchw = nchw && e.is_nchw(i);
  static constexpr int64_t kNhwcToNchw[4] = {0, 2, 3, 1};
  std::vector<std::string> ins;
  for (const Output& i : n.inputs) ins.push_back(nchw ? e.nchw(i) : e.nhwc(i));
  std::string y = e.fresh(n.name);
  set_int(e.add("Concat", ins, y, n.name), "axis", nchw ? kNhwcToNchw[axis] : axis);
  e.set(out0(n), y, nchw);
}

// Split: ONNX's Split with the part sizes as its `split` input (a -1 size
// resolved against the static dim), or equal parts without it.
void export_split(Exporter& e, const Node& n) {
  const Shape x = e.spec(in(n, 0)).shape;
  int64_t axis = n.attrs.get_int("axis");
  if (axis < 0) axis += x.rank();
  const bool nchw = x.rank() == 4 && e.is_nchw(in(n, 0));
  static constexpr int64_t kNhwcToNchw[4] = {0, 2, 3, 1};
  std::vector<std::string> ins{nchw ? e.nchw(in(n, 0)) : e.nhwc(in(n, 0))};
  std::vector<int64_t> sizes = n.attrs.get_ints("sizes");
  if (!sizes.empty()) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] < 0) sizes[i] = n.outputs[i].shape[static_cast<int>(axis)];
      if (sizes[i] < 0) e.fail(n, "a part of size -1 along a dim known only at run time has no ONNX Split form");
    }
    ins.push_back(e.ints(sizes, n.name + "/split"));
  }
  std::vector<std::string> ys;
  for (size_t i = 0; i < n.outputs.size(); ++i) ys.push_back(e.fresh(n.name + "/" + std::to_string(i)));
  NodeProto* p = e.add("Split", ins, ys[0], n.name);
  for (size_t i = 1; i < ys.size(); ++i) p->add_output(ys[i]);
  set_int(p, "axis", nchw ? kNhwcToNchw[axis] : axis);
  for (size_t i = 0; i < ys.size(); ++i) e.set(Output{n.id, static_cast<int>(i)}, ys[i], nchw);
}

void export_pad(Exporter& e, const Node& n) {
  std::vector<int64_t> p = n.attrs.get_ints("paddings");  // [b0, a0, b1, a1, ...]
  const size_t r = p.size() / 2;
  std::vector<int64_t> pads(2 * r);
  for (size_t d = 0; d < r; ++d) {
    pads[d] = p[2 * d];
    pads[d + r] = p[2 * d + 1];
  }
  const std::string mode = n.attrs.has("mode") ? n.attrs.get_string("mode") : "CONSTANT";
  if (mode == "SYMMETRIC") {
    // No ONNX mode mirrors the edge itself: per padded dim, the first `before` elements reversed, x, the
    // last `after` reversed (Slices with step -1), concatenated.
    std::string x = e.nhwc(in(n, 0));
    for (size_t d = 0; d < r; ++d) {
      const int64_t before = p[2 * d], after = p[2 * d + 1];
      if (before == 0 && after == 0) continue;
      const std::string at = n.name + "/" + std::to_string(d);
      const std::string axis = e.ints({static_cast<int64_t>(d)}, at + "/axis"), back = e.ints({-1}, at + "/step");
      std::vector<std::string> parts;
      auto reversed = [&](int64_t start, int64_t end, const std::string& what) {
        const std::string v = e.fresh(at + "/" + what);
        e.add("Slice", {x, e.ints({start}, v + "/start"), e.ints({end}, v + "/end"), axis, back}, v, v);
        parts.push_back(v);
      };
      if (before > 0) reversed(before - 1, std::numeric_limits<int64_t>::min(), "before");
      parts.push_back(x);
      if (after > 0) reversed(-1, -after - 1, "after");
      const std::string y = e.fresh(d + 1 == r ? n.name : at);
      set_int(e.add("Concat", parts, y, y), "axis", static_cast<int64_t>(d));
      x = y;
    }
    e.set(out0(n), x);
    return;
  }
  std::vector<std::string> ins{e.nhwc(in(n, 0)), e.ints(pads, n.name + "/pads")};
  if (mode == "CONSTANT" && n.attrs.has("constant_value")) {
    Tensor v(e.spec(in(n, 0)).dtype, Shape{});
    v.fill(n.attrs.get_float("constant_value"));
    ins.push_back(e.initializer(v, n.name + "/value"));
  }
  std::string y = e.fresh(n.name);
  set_string(e.add("Pad", ins, y, n.name), "mode",
             mode == "CONSTANT"  ? "constant"
             : mode == "REFLECT" ? "reflect"
                                 : "edge");
  e.set(out0(n), y);
}

void export_slice(Exporter& e, const Node& n) {
  const Shape s = e.spec(in(n, 0)).shape;
  std::vector<int64_t> begin = n.attrs.get_ints("begin"), size = n.attrs.get_ints("size"), end;
  for (size_t d = 0; d < begin.size(); ++d)
    end.push_back(size[d] < 0 ? std::numeric_limits<int64_t>::max() : begin[d] + size[d]);
  std::string y = e.fresh(n.name);
  e.add("Slice", {e.nhwc(in(n, 0)), e.ints(begin, n.name + "/starts"), e.ints(end, n.name + "/ends")}, y, n.name);
  e.set(out0(n), y);
}

// StridedSlice: a Slice (starts, ends, axes, steps) of the dims it narrows,
// as its spec resolves them against the input's shape, then a Reshape where
// dims shrink or are inserted. A dim of unknown size is kept whole (a stride
// of 1 over a masked range); anything else there has no static form.
void export_strided_slice(Exporter& e, const Node& n) {
  const Shape x = e.spec(in(n, 0)).shape;
  const ops::StridedSliceSpec spec = ops::strided_slice_spec(x, n.attrs);
  const bool plain = n.attrs.get_int("ellipsis_mask") == 0 && n.attrs.get_int("new_axis_mask") == 0 &&
                     n.attrs.get_int("shrink_axis_mask") == 0;
  const int64_t full = n.attrs.get_int("begin_mask") & n.attrs.get_int("end_mask");
  std::vector<int64_t> starts, ends, axes, steps, sliced;
  for (int d = 0; d < x.rank(); ++d) {
    if (x[d] < 0) {
      if (!plain || spec.stride[d] != 1 || ((full >> d) & 1) == 0)
        e.fail(n, "slicing dim " + std::to_string(d) + " of unknown size " + x.to_string() + " has no static form");
      sliced.push_back(kUnknownDim);
      continue;
    }
    sliced.push_back(spec.size[d]);
    if (spec.begin[d] == 0 && spec.stride[d] == 1 && spec.size[d] == x[d]) continue;
    const int64_t end = spec.begin[d] + spec.stride[d] * spec.size[d];
    starts.push_back(spec.begin[d]);
    ends.push_back(end < 0 ? std::numeric_limits<int64_t>::min() : end);  // past index 0 going down
    axes.push_back(d);
    steps.push_back(spec.stride[d]);
  }
  std::string y = e.nhwc(in(n, 0));
  if (!axes.empty()) {
    const std::string s = e.fresh(n.name);
    e.add("Slice",
          {y, e.ints(starts, n.name + "/starts"), e.ints(ends, n.name + "/ends"), e.ints(axes, n.name + "/axes"),
           e.ints(steps, n.name + "/steps")},
          s, s);
    y = s;
  }
  if (Shape(sliced) != spec.out) {
    std::vector<int64_t> dims = spec.out.dims();
    if (std::count(dims.begin(), dims.end(), kUnknownDim) > 1)
      e.fail(n, "the result " + spec.out.to_string() + " has more than one dim of unknown size");
    const std::string r = e.fresh(n.name + "/reshaped");
    e.add("Reshape", {y, e.ints(dims, n.name + "/shape")}, r, r);
    y = r;
  }
  e.set(out0(n), y);
}

// ArgMax, ArgMin.
void export_arg_extreme(Exporter& e, const Node& n) {
  std::string y = e.fresh(n.name);
  NodeProto* p = e.add(n.op, {e.nhwc(in(n, 0))}, y, n.name);
  set_int(p, "axis", n.attrs.get_int("axis"));
  set_int(p, "keepdims", 0);
  if (n.attrs.get_bool("select_last")) set_int(p, "select_last_index", 1);
  e.set(out0(n), y);
}

// BroadcastTo: Expand to its shape (entries `from` names read at run time).
void export_broadcast_to(Exporter& e, const Node& n) {
  const std::vector<int64_t> shape = n.attrs.get_ints("shape");
  std::string y = e.fresh(n.name);
  e.add("Expand",
        {e.nhwc(in(n, 0)),
         n.attrs.get_ints("from").empty() ? e.ints(shape, n.name + "/shape") : dims_with_references(e, n, shape)},
        y, n.name);
  e.set(out0(n), y);
}

// BroadcastLike: Expand to Shape(like), after an Unsqueeze of the reduced axes.
void export_broadcast_like(Exporter& e, const Node& n) {
  std::string x = e.nhwc(in(n, 0));
  std::vector<int64_t> axes = n.attrs.get_ints("reduced_axes");
  const int rank = e.spec(in(n, 1)).shape.rank();
  if (!axes.empty()) {
    for (int64_t& a : axes) a = a < 0 ? a + rank : a;
    std::sort(axes.begin(), axes.end());
    const std::string u = e.fresh(n.name + "/unreduced");
    e.add("Unsqueeze", {x, e.ints(axes, n.name + "/axes")}, u, u);
    x = u;
  }
  const std::string shape = e.fresh(n.name + "/like_shape");
  e.add("Shape", {e.nhwc(in(n, 1))}, shape, shape);
  std::string y = e.fresh(n.name);
  e.add("Expand", {x, shape}, y, n.name);
  e.set(out0(n), y);
}

// Gather (TF's GatherV2, indices in range): ONNX's Gather; batch_dims has no ONNX form.
void export_gather(Exporter& e, const Node& n) {
  if (n.attrs.get_int("batch_dims") != 0) e.fail(n, "Gather with batch_dims has no ONNX Gather form");
  std::string y = e.fresh(n.name);
  set_int(e.add("Gather", {e.nhwc(in(n, 0)), e.nhwc(in(n, 1))}, y, n.name), "axis", n.attrs.get_int("axis"));
  e.set(out0(n), y);
}

void export_gather_elements(Exporter& e, const Node& n) {
  std::string y = e.fresh(n.name);
  set_int(e.add("GatherElements", {e.nhwc(in(n, 0)), e.nhwc(in(n, 1))}, y, n.name), "axis", n.attrs.get_int("axis"));
  e.set(out0(n), y);
}

void export_cum_sum(Exporter& e, const Node& n) {
  std::string y = e.fresh(n.name);
  NodeProto* p = e.add(
      "CumSum", {e.nhwc(in(n, 0)), e.initializer(Tensor::scalar<int64_t>(n.attrs.get_int("axis")), n.name + "/axis")},
      y, n.name);
  set_int(p, "exclusive", n.attrs.get_bool("exclusive"));
  set_int(p, "reverse", n.attrs.get_bool("reverse"));
  e.set(out0(n), y);
}

void export_gather_nd(Exporter& e, const Node& n) {
  std::string y = e.fresh(n.name);
  set_int(e.add("GatherND", {e.nhwc(in(n, 0)), int64_input(e, n, 1, "indices")}, y, n.name), "batch_dims",
          n.attrs.get_int("batch_dims"));
  e.set(out0(n), y);
}

// ScatterND, ScatterElements: the same ONNX ops (reduction from opset 16,
// max and min from 18).
void export_scatter(Exporter& e, const Node& n) {
  std::string y = e.fresh(n.name);
  NodeProto* p = e.add(n.op, {e.nhwc(in(n, 0)), int64_input(e, n, 1, "indices"), e.nhwc(in(n, 2))}, y, n.name);
  if (n.attrs.has("axis")) set_int(p, "axis", n.attrs.get_int("axis"));
  const std::string& r = n.attrs.get_string("reduction");
  if (r == "max" || r == "min") e.fail(n, "reduction '" + r + "' is in ONNX from opset 18; hub writes 13 to 17");
  if (r != "none") set_string(p, "reduction", r);
  e.set(out0(n), y);
}

// ZerosLike, OnesLike: ConstantOfShape of the input's Shape (a product
// with 0 would keep NaNs).
void export_fill_like(Exporter& e, const Node& n) {
  const DType dtype = e.spec(in(n, 0)).dtype;
  const std::string shape = e.fresh(n.name + "/shape"), y = e.fresh(n.name);
  e.add("Shape", {e.nhwc(in(n, 0))}, shape, shape);
  Tensor value = evaluate("Cast", {Tensor::from_vector<float>({1}, {n.op == "OnesLike" ? 1.0f : 0.0f})},
                          Attrs().set("dtype", dtype));
  NodeProto* p = e.add("ConstantOfShape", {shape}, y, n.name);
  auto* a = p->add_attribute();
  a->set_name("value");
  a->set_type(::onnx::AttributeProto::TENSOR);
  tensor_to_onnx(value, a->mutable_t());
  e.set(out0(n), y);
}

// RoiAlign: NCHW x (opset 16, for coordinate_transformation_mode).
void export_roi_align(Exporter& e, const Node& n) {
  std::string y = e.fresh(n.name);
  NodeProto* p =
      e.add("RoiAlign", {e.nchw(in(n, 0)), e.nhwc(in(n, 1)), int64_input(e, n, 2, "batch_indices")}, y, n.name);
  const Attrs& a = n.attrs;
  set_string(p, "coordinate_transformation_mode", a.get_bool("half_pixel") ? "half_pixel" : "output_half_pixel");
  set_string(p, "mode", a.get_string("mode"));
  for (const char* name : {"output_height", "output_width", "sampling_ratio"}) set_int(p, name, a.get_int(name));
  set_float(p, "spatial_scale", a.get_float("spatial_scale"));
  e.set(out0(n), y, true);
}

// GridSample: NCHW x, the grid as it is (opset 16).
void export_grid_sample(Exporter& e, const Node& n) {
  std::string y = e.fresh(n.name);
  NodeProto* p = e.add("GridSample", {e.nchw(in(n, 0)), e.nhwc(in(n, 1))}, y, n.name);
  for (const char* name : {"mode", "padding_mode"}) set_string(p, name, n.attrs.get_string(name));
  set_int(p, "align_corners", n.attrs.get_bool("align_corners"));
  e.set(out0(n), y, true);
}

// TopK (and DynamicTopK, its k an input) along the last axis; ONNX's int64
// indices cast to hub's int32.
void export_top_k(Exporter& e, const Node& n) {
  std::string values = e.fresh(n.name + "/values"), indices = e.fresh(n.name + "/indices64");
  std::string k;
  if (n.op == "TopK") {
    k = e.ints({n.attrs.get_int("k")}, n.name + "/k");
  } else {
    k = e.fresh(n.name + "/k");
    e.add("Reshape", {int64_input(e, n, 1, "k64"), e.ints({1}, n.name + "/one")}, k, k);
  }
  NodeProto* p = e.add("TopK", {e.nhwc(in(n, 0)), k}, values, n.name);
  p->add_output(indices);
  set_int(p, "axis", -1);
  std::string cast = e.fresh(n.name + "/indices");
  set_int(e.add("Cast", {indices}, cast, cast), "to", ::onnx::TensorProto::INT32);
  e.set(out0(n), values);
  e.set(Output{n.id, 1}, cast);
}

// ReverseSequence: ONNX's takes int64 lengths and axes 0 and 1 only.
void export_reverse_sequence(Exporter& e, const Node& n) {
  const int rank = e.spec(in(n, 0)).shape.rank();
  auto axis = [&](const char* name) {
    const int64_t a = n.attrs.get_int(name);
    return a < 0 ? a + rank : a;
  };
  const int64_t batch = axis("batch_axis"), time = axis("time_axis");
  if (batch > 1 || time > 1) e.fail(n, "ONNX's ReverseSequence takes batch and time axes 0 and 1 only");
  std::string y = e.fresh(n.name);
  NodeProto* p = e.add("ReverseSequence", {e.nhwc(in(n, 0)), int64_input(e, n, 1, "lengths")}, y, n.name);
  set_int(p, "batch_axis", batch);
  set_int(p, "time_axis", time);
  e.set(out0(n), y);
}

void export_unique(Exporter& e, const Node& n) {
  std::vector<std::string> ys;
  for (int i = 0; i < 4; ++i) ys.push_back(e.fresh(n.name + "/" + std::to_string(i)));
  NodeProto* p = e.add("Unique", {e.nhwc(in(n, 0))}, ys[0], n.name);
  for (int i = 1; i < 4; ++i) p->add_output(ys[static_cast<size_t>(i)]);
  set_int(p, "axis", n.attrs.get_int("axis"));
  set_int(p, "sorted", n.attrs.get_bool("sorted"));
  for (int i = 0; i < 4; ++i) e.set(Output{n.id, i}, ys[static_cast<size_t>(i)]);
}

void export_shape(Exporter& e, const Node& n) {
  std::string y = e.fresh(n.name);
  e.add("Shape", {e.nhwc(in(n, 0))}, y, n.name);
  e.set(out0(n), y);
}

void export_non_zero(Exporter& e, const Node& n) {
  std::string y = e.fresh(n.name);
  e.add("NonZero", {e.nhwc(in(n, 0))}, y, n.name);
  e.set(out0(n), y);
}

// NonMaxSuppression, its limits as initializers (no score_threshold for -inf).
void export_non_max_suppression(Exporter& e, const Node& n) {
  const Attrs& a = n.attrs;
  std::vector<std::string> inputs{
      e.nhwc(in(n, 0)), e.nhwc(in(n, 1)), e.ints({a.get_int("max_per_class")}, n.name + "/max_output_boxes_per_class"),
      e.initializer(Tensor::from_vector<float>({1}, {static_cast<float>(a.get_float("iou_threshold"))}),
                    n.name + "/iou_threshold")};
  const double score = a.get_float("score_threshold");
  if (score != -std::numeric_limits<double>::infinity())
    inputs.push_back(
        e.initializer(Tensor::from_vector<float>({1}, {static_cast<float>(score)}), n.name + "/score_threshold"));
  std::string y = e.fresh(n.name);
  set_int(e.add("NonMaxSuppression", inputs, y, n.name), "center_point_box", a.get_bool("center_point_box"));
  e.set(out0(n), y);
}

// OneHot along a new last axis, values [off, on] as float32.
void export_one_hot(Exporter& e, const Node& n) {
  std::string y = e.fresh(n.name);
  const Tensor values = Tensor::from_vector<float>(
      {2}, {static_cast<float>(n.attrs.get_float("off_value")), static_cast<float>(n.attrs.get_float("on_value"))});
  NodeProto* p = e.add("OneHot",
                       {e.nhwc(in(n, 0)), e.ints({n.attrs.get_int("depth")}, n.name + "/depth"),
                        e.initializer(values, n.name + "/values")},
                       y, n.name);
  set_int(p, "axis", -1);
  e.set(out0(n), y);
}

// Resize with the module's scales where it has them (ONNX's coordinates
// follow the scales, not the output size they round to), else its sizes.
void export_resize(Exporter& e, const Node& n) {
  const std::vector<int64_t> size = n.attrs.get_ints("size");
  const std::vector<double> scales = n.attrs.get_floats("scales");
  const Shape x = e.spec(in(n, 0)).shape;
  std::vector<std::string> inputs{e.nchw(in(n, 0)), ""};
  if (!scales.empty() && !n.attrs.get_ints("from").empty())
    e.fail(n, "a size read from reference tensors with explicit scales has no ONNX Resize form");
  if (!scales.empty()) {
    inputs.push_back(e.initializer(
        Tensor::from_vector<float>({4}, {1.0f, 1.0f, static_cast<float>(scales[0]), static_cast<float>(scales[1])}),
        n.name + "/scales"));
  } else {
    std::string sizes = e.ints({x[0] < 0 ? 1 : x[0], x[3], size[0], size[1]}, n.name + "/sizes");
    const bool runtime_hw = !n.attrs.get_ints("from").empty();
    if (x[0] < 0 || runtime_hw) {
      // Known only at run time: the batch (sizes = Shape(x)[0:2] ++ [OH, OW]),
      // or OH, OW read from the reference inputs' shapes.
      std::string nc = e.ints({x[0], x[3]}, n.name + "/nc");
      if (x[0] < 0) {
        std::string shape = e.fresh(n.name + "/shape");
        nc = e.fresh(n.name + "/nc");
        e.add("Shape", {e.nchw(in(n, 0))}, shape, shape);
        e.add("Slice", {shape, e.ints({0}, n.name + "/s0"), e.ints({2}, n.name + "/s2")}, nc, nc);
      }
      const std::string hw = runtime_hw ? dims_with_references(e, n, size) : e.ints(size, n.name + "/hw");
      sizes = e.fresh(n.name + "/sizes_runtime");
      set_int(e.add("Concat", {nc, hw}, sizes, sizes), "axis", 0);
    }
    inputs.push_back("");
    inputs.push_back(sizes);
  }
  std::string y = e.fresh(n.name);
  NodeProto* p = e.add("Resize", inputs, y, n.name);
  set_string(p, "mode", n.attrs.get_string("mode"));
  set_string(p, "coordinate_transformation_mode", n.attrs.get_string("coordinate_transformation_mode"));
  if (n.attrs.get_string("mode") == "nearest") set_string(p, "nearest_mode", n.attrs.get_string("nearest_mode"));
  if (n.attrs.get_string("mode") == "cubic") {
    set_float(p, "cubic_coeff_a", n.attrs.get_float("cubic_coeff_a"));
    set_int(p, "exclude_outside", n.attrs.get_bool("exclude_outside") ? 1 : 0);
  }
  e.set(out0(n), y, true);
}

void export_prelu(Exporter& e, const Node& n) {
  Output x = in(n, 0);
  const bool nchw = e.spec(x).shape.rank() == 4 && e.is_nchw(x);
  std::string slope = e.weight(
      in(n, 1),
      [&](const Tensor& t) {
        if (!nchw) return t;
        std::vector<int64_t> dims(static_cast<size_t>(4 - t.rank()), 1);
        for (int64_t d : t.shape().dims()) dims.push_back(d);
        return evaluate("Transpose", {t.reshaped(Shape(dims))}, Attrs().set("perm", std::vector<int64_t>{0, 3, 1, 2}));
      },
      [&](const std::string& v) {
        if (nchw) e.fail(n, "a PRelu slope computed at run time on an NCHW value is not supported");
        return v;
      });
  std::string y = e.fresh(n.name);
  e.add("PRelu", {nchw ? e.nchw(x) : e.nhwc(x), slope}, y, n.name);
  e.set(out0(n), y, nchw);
}

// DynamicStridedSlice as Slice: starts and ends as int64, axes and steps as initializers.
void export_dynamic_strided_slice(Exporter& e, const Node& n) {
  const std::string y = e.fresh(n.name);
  e.add("Slice",
        {e.nhwc(in(n, 0)), int64_input(e, n, 1, "starts"), int64_input(e, n, 2, "ends"),
         e.ints(n.attrs.get_ints("axes"), n.name + "_axes"), e.ints(n.attrs.get_ints("steps"), n.name + "_steps")},
        y, n.name);
  e.set(out0(n), y);
}

// If(cond, args...): the branches read the arguments by name.
void export_if(Exporter& e, const Node& n) {
  std::vector<std::string> outputs;
  for (size_t i = 0; i < n.outputs.size(); ++i) outputs.push_back(e.fresh(n.name + "_" + std::to_string(i)));
  NodeProto* p = e.add("If", {e.nhwc(in(n, 0))}, outputs[0], n.name);
  for (size_t i = 1; i < outputs.size(); ++i) p->add_output(outputs[i]);
  const std::vector<Output> args(n.inputs.begin() + 1, n.inputs.end());
  for (const char* branch : {"then_branch", "else_branch"}) {
    AttributeProto* a = p->add_attribute();
    a->set_name(branch);
    a->set_type(AttributeProto::GRAPH);
    e.subgraph(n.attrs.get_graph(branch), 0, args, a->mutable_g());
  }
  for (size_t i = 0; i < outputs.size(); ++i) e.set(Output{n.id, static_cast<int>(i)}, outputs[i]);
}

// Loop(max_trips, cond, carried..., invariant...): the body's inputs are
// (iteration, cond, carried...); it reads the invariant values by name.
void export_loop(Exporter& e, const Node& n) {
  const size_t carried = static_cast<size_t>(n.attrs.get_int("num_carried"));
  std::vector<std::string> inputs;
  for (size_t i = 0; i < 2 + carried; ++i) inputs.push_back(e.nhwc(in(n, static_cast<int>(i))));
  std::vector<std::string> outputs;
  for (size_t i = 0; i < n.outputs.size(); ++i) outputs.push_back(e.fresh(n.name + "_" + std::to_string(i)));
  NodeProto* p = e.add("Loop", inputs, outputs[0], n.name);
  for (size_t i = 1; i < outputs.size(); ++i) p->add_output(outputs[i]);
  AttributeProto* a = p->add_attribute();
  a->set_name("body");
  a->set_type(AttributeProto::GRAPH);
  const std::vector<Output> invariant(n.inputs.begin() + 2 + static_cast<std::ptrdiff_t>(carried), n.inputs.end());
  e.subgraph(n.attrs.get_graph("body"), 2 + carried, invariant, a->mutable_g());
  for (size_t i = 0; i < outputs.size(); ++i) e.set(Output{n.id, static_cast<int>(i)}, outputs[i]);
}

const std::map<std::string, ExportFn>& exporters() {
  static const std::map<std::string, ExportFn> table = {
      {"Const", export_const},
      {"Variable", export_variable},
      {"Identity", export_unary<kIdentity>},
      {"StopGradient", export_unary<kIdentity>},
      {"Add", export_elementwise<kAdd>},
      {"Sub", export_elementwise<kSub>},
      {"Mul", export_elementwise<kMul>},
      {"Div", export_elementwise<kDiv>},
      {"Mod", export_mod},
      {"CumSum", export_cum_sum},
      {"GatherND", export_gather_nd},
      {"ScatterND", export_scatter},
      {"ScatterElements", export_scatter},
      {"GridSample", export_grid_sample},
      {"RoiAlign", export_roi_align},
      {"ZerosLike", export_fill_like},
      {"OnesLike", export_fill_like},
      {"Pow", export_elementwise<kPow>},
      {"Maximum", export_elementwise<kMax>},
      {"Minimum", export_elementwise<kMin>},
      {"AddN", export_elementwise<kSum>},
      {"Equal", export_elementwise<kEqual>},
      {"Greater", export_elementwise<kGreater>},
      {"GreaterEqual", export_elementwise<kGreaterEqual>},
      {"Less", export_elementwise<kLess>},
      {"LessEqual", export_elementwise<kLessEqual>},
      {"NotEqual", export_not_equal},
      {"LogicalAnd", export_elementwise<kAnd>},
      {"LogicalOr", export_elementwise<kOr>},
      {"LogicalNot", export_unary<kNot>},
      {"Select", export_elementwise<kWhere>},
      {"Relu", export_unary<kRelu>},
      {"Relu6", export_relu6},
      {"ClipByValue", export_clip},
      {"Elu", export_elu},
      {"LeakyRelu", export_leaky_relu},
      {"HardSigmoid", export_hard_sigmoid},
      {"HardSwish", export_unary<kHardSwish>},
      {"PRelu", export_prelu},
      {"Sigmoid", export_unary<kSigmoid>},
      {"Tanh", export_unary<kTanh>},
      {"Abs", export_unary<kAbs>},
      {"Neg", export_unary<kNeg>},
      {"Sign", export_unary<kSign>},
      {"Sqrt", export_unary<kSqrt>},
      {"Rsqrt", export_rsqrt},
      {"Square", export_square},
      {"Exp", export_unary<kExp>},
      {"Log", export_unary<kLog>},
      {"Reciprocal", export_unary<kReciprocal>},
      {"Erf", export_unary<kErf>},
      {"Floor", export_unary<kFloor>},
      {"Ceil", export_unary<kCeil>},
      {"Round", export_unary<kRound>},
      {"Sin", export_unary<kSin>},
      {"Cos", export_unary<kCos>},
      {"Tan", export_unary<kTan>},
      {"Asin", export_unary<kAsin>},
      {"Acos", export_unary<kAcos>},
      {"Atan", export_unary<kAtan>},
      {"Sinh", export_unary<kSinh>},
      {"Cosh", export_unary<kCosh>},
      {"Asinh", export_unary<kAsinh>},
      {"Acosh", export_unary<kAcosh>},
      {"Atanh", export_unary<kAtanh>},
      {"Cast", export_cast},
      {"Softmax", export_softmax<kSoftmax>},
      {"LogSoftmax", export_softmax<kLogSoftmax>},
      {"MatMul", export_matmul},
      {"QuantizeLinear", export_quantize},
      {"DequantizeLinear", export_quantize},
      {"BatchMatMul", export_batch_matmul},
      {"BiasAdd", export_bias_add},
      {"Conv2D", export_conv},
      {"DepthwiseConv2dNative", export_depthwise},
      {"MaxPool", export_pool<true>},
      {"AvgPool", export_pool<false>},
      {"FusedBatchNorm", export_batch_norm},
      {"LRN", export_lrn},
      {"Sum", export_sum},
      {"Mean", export_mean},
      {"Max", export_max},
      {"Min", export_min},
      {"Prod", export_prod},
      {"Tile", export_tile},
      {"ListSetItem", export_list_set_item},
      {"Reshape", export_reshape},
      {"DynamicReshape", export_dynamic_reshape},
      {"DynamicSlice", export_dynamic_slice},
      {"DynamicRange", export_dynamic_range},
      {"Squeeze", export_squeeze},
      {"ExpandDims", export_expand_dims},
      {"Transpose", export_transpose},
      {"Concat", export_concat},
      {"Pad", export_pad},
      {"Slice", export_slice},
      {"StridedSlice", export_strided_slice},
      {"Conv2DTranspose", export_conv_transpose},
      {"ArgMax", export_arg_extreme},
      {"ArgMin", export_arg_extreme},
      {"TopK", export_top_k},
      {"DynamicTopK", export_top_k},
      {"Shape", export_shape},
      {"NonZero", export_non_zero},
      {"If", export_if},
      {"DynamicStridedSlice", export_dynamic_strided_slice},
      {"Loop", export_loop},
      {"Unique", export_unique},
      {"ReverseSequence", export_reverse_sequence},
      {"Split", export_split},
      {"NonMaxSuppression", export_non_max_suppression},
      {"Gather", export_gather},
      {"BroadcastLike", export_broadcast_like},
      {"BroadcastTo", export_broadcast_to},
      {"GatherElements", export_gather_elements},
      {"OneHot", export_one_hot},
      {"Resize", export_resize},
  };
  return table;
}

}  // namespace

int export_onnx(const ModuleSpec& spec, const std::string& path, const OnnxExportOptions& options) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(path, ec);
  if (fs::exists(st) && (!options.overwrite || fs::is_directory(st)))
    throw_error(Code::kAlreadyExists, "'" + path + "' already exists; refusing to overwrite it");
  Exporter exporter(spec, options);
  ::onnx::ModelProto model = exporter.run();
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    throw_error(Code::kInternal, "serializing the ONNX model for '" + path + "' failed");
  write_file_atomic(path, bytes);
  return exporter.opset();
}

}  // namespace hub::onnx_interop
