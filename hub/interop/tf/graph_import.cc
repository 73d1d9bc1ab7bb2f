#include "hub/interop/tf/graph_import.h"

#include <algorithm>
#include <ctime>

#include "hub/backend/backend.h"
#include "hub/core/error.h"
#include "hub/graph/session.h"
#include "hub/interop/fold.h"
#include "hub/interop/linear.h"
#include "hub/interop/tf/bundle.h"
#include "hub/interop/tf/ops.h"
#include "hub/interop/tf/tensor_proto.h"
#include "hub/ops/state.h"

namespace hub::tf {

const proto::NodeDef* FlatGraph::find(const std::string& name) const {
  auto it = by_name.find(name);
  return it == by_name.end() ? nullptr : &nodes[it->second];
}

std::string FlatGraph::resolve(const std::string& tensor) const {
  if (!tensor.empty() && tensor[0] == '^') return tensor;
  std::string t = tensor;
  for (size_t steps = 0; steps <= aliases.size(); ++steps) {
    auto it = aliases.find(t);
    if (it == aliases.end()) return t;
    t = it->second;
  }
  throw_error(Code::kInvalidArgument,
              file + ": function calls return each other's outputs in a cycle at '" + tensor + "'");
}

std::string canonical_tensor(const std::string& name) {
  if (!name.empty() && name[0] == '^') return name;
  return name.find(':') == std::string::npos ? name + ":0" : name;
}

std::optional<std::pair<std::string, int>> parse_tensor(const std::string& name) {
  const size_t colon = name.rfind(':');
  if (colon == std::string::npos) return std::make_pair(name, 0);
  const std::string index = name.substr(colon + 1);
  if (colon == 0 || index.empty() || index.size() > 6 ||
      !std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::make_pair(name.substr(0, colon), std::stoi(index));
}

std::pair<std::string, int> split_tensor(const std::string& name, const std::string& what) {
  std::optional<std::pair<std::string, int>> t = parse_tensor(name);
  if (!t) throw_error(Code::kInvalidArgument, what + ": malformed tensor name '" + name + "'");
  return *t;
}

// ---- Flattening ---------------------------------------------------------------

namespace {

// Output arguments of ops without importer that function bodies name (the
// savers of TensorFlow 2 exports); ops with an importer declare theirs.
const std::map<std::string, std::vector<std::string>>& other_op_outputs() {
  static const std::map<std::string, std::vector<std::string>> m = {
      {"RestoreV2", {"tensors"}},
      {"Restore", {"tensor"}},
      {"RestoreSlice", {"tensor"}},
      {"StringJoin", {"output"}},
      {"ShardedFilename", {"filename"}},
      {"StaticRegexFullMatch", {"output"}},
      {"Select", {"output"}},
      {"SelectV2", {"output"}},
      {"IdentityN", {"output"}},
      {"Fill", {"output"}},
      {"Assign", {"output_ref"}},
      {"MergeV2Checkpoints", {}},
      {"SaveV2", {}},
      {"AssignVariableOp", {}},
      {"NoOp", {}},
  };
  return m;
}

class Flattener {
 public:
  Flattener(const proto::GraphDef& graph, const std::string& file,
            const std::map<std::string, const proto::FunctionDef*>& inherited)
      : graph_(graph), file_(file), functions_(inherited) {
    std::set<std::string> own;
    for (const auto& f : graph.library().function()) {
      if (!own.insert(f.signature().name()).second)
        throw_error(Code::kInvalidArgument,
                    file_ + ": the function library defines '" + f.signature().name() + "' twice");
      functions_[f.signature().name()] = &f;
    }
  }

  FlatGraph run() {
    std::map<std::string, std::string> no_args;
    for (const auto& n : graph_.node()) add_node(n, "", no_args, {}, 0);
    FlatGraph out;
    out.file = file_;
    out.aliases = std::move(aliases_);
    out.broken = std::move(broken_);
    out.functions = functions_;
    for (auto& n : nodes_) {
      for (auto& in : *n.mutable_input()) in = out.resolve(in);
      if (!out.by_name.emplace(n.name(), static_cast<int>(out.nodes.size())).second)
        throw_error(Code::kInvalidArgument, file_ + ": two nodes are named '" + n.name() + "'");
      out.nodes.push_back(std::move(n));
    }
    return out;
  }

 private:
  const proto::FunctionDef* callee(const proto::NodeDef& n) const {
    std::string fname;
    if (n.op() == "PartitionedCall" || n.op() == "StatefulPartitionedCall") {
      auto it = n.attr().find("f");
      if (it == n.attr().end() || !it->second.has_func())
        throw_error(Code::kInvalidArgument, file_ + ": node '" + n.name() + "' (" + n.op() + ") has no function 'f'");
      fname = it->second.func().name();
      auto f = functions_.find(fname);
      if (f == functions_.end())
        throw_error(Code::kInvalidArgument, file_ + ": node '" + n.name() + "' (" + n.op() + ") calls '" + fname +
                                                "', which the function library lacks");
      return f->second;
    }
    auto f = functions_.find(n.op());
    return f == functions_.end() ? nullptr : f->second;
  }

  // Index of output argument `arg`, element k, of a node of op `op`.
  int output_index(const std::string& op, const std::string& arg, int k, const std::string& where) const {
    const std::optional<std::vector<std::string>> args = op_output_args(op, functions_);
    if (!args) return k;  // an op hub does not know: its node fails later if it is needed
    for (size_t i = 0; i < args->size(); ++i)
      if ((*args)[i] == arg) return static_cast<int>(i) + k;
    throw_error(Code::kInvalidArgument, where + ": op " + op + " has no output '" + arg + "'");
  }

  // A reference inside a function body ("arg", "node:out_arg:k",
  // "node:out_arg") as a tensor of the flat graph.
  std::string body_ref(const std::string& ref, const std::string& prefix,
                       const std::map<std::string, std::string>& args,
                       const std::map<std::string, std::string>& body_ops, const std::string& where) const {
    const size_t c1 = ref.find(':');
    if (c1 == std::string::npos) {
      auto a = args.find(ref);
      if (a == args.end())
        throw_error(Code::kInvalidArgument, where + ": '" + ref + "' names no argument of the function");
      return a->second;
    }
    const std::string src = ref.substr(0, c1);
    const size_t c2 = ref.find(':', c1 + 1);
    const std::string arg = ref.substr(c1 + 1, c2 == std::string::npos ? std::string::npos : c2 - c1 - 1);
    const int k = c2 == std::string::npos ? 0 : split_tensor("x:" + ref.substr(c2 + 1), where).second;
    auto op = body_ops.find(src);
    if (op == body_ops.end())
      throw_error(Code::kInvalidArgument, where + ": '" + ref + "' names no node of the function");
    return prefix + src + ":" + std::to_string(output_index(op->second, arg, k, where));
  }

  // Adds `n` (a graph node, or a function body node under `prefix` whose
  // argument names map to tensors by `args`), inlining calls. A call of the
  // graph itself that cannot be inlined stays as it is, its reason recorded:
  // it is an error only if the outputs need it.
  void add_node(const proto::NodeDef& n, const std::string& prefix, const std::map<std::string, std::string>& args,
                const std::map<std::string, std::string>& body_ops, int depth) {
    proto::NodeDef node = n;
    node.set_name(prefix + n.name());
    const std::string where = file_ + ": node '" + node.name() + "' (" + n.op() + ")";
    if (!prefix.empty()) {
      for (auto& in : *node.mutable_input())
        in = !in.empty() && in[0] == '^' ? "^" + prefix + in.substr(1) : body_ref(in, prefix, args, body_ops, where);
      // Attribute placeholders take the values the call instantiates them with.
      for (auto& [key, value] : *node.mutable_attr()) {
        if (value.value_case() != proto::AttrValue::kPlaceholder) continue;
        auto a = attr_values_.find(value.placeholder());
        if (a != attr_values_.end()) value = a->second;
      }
    } else {
      for (auto& in : *node.mutable_input()) in = canonical_tensor(in);
    }
    const proto::FunctionDef* f = nullptr;
    try {
      f = callee(node);
      if (f && depth >= kMaxCallDepth)
        throw_error(Code::kInvalidArgument,
                    where + ": function calls nest deeper than " + std::to_string(kMaxCallDepth));
      if (f) {
        const size_t nodes_before = nodes_.size();
        const auto aliases_before = aliases_;
        try {
          inline_call(node, *f, depth, where);
          return;
        } catch (const Error&) {
          nodes_.resize(nodes_before);
          aliases_ = aliases_before;
          throw;
        }
      }
    } catch (const Error& e) {
      // Inside a body the whole top-level call fails; limits hold regardless.
      if (depth > 0 || e.code() == Code::kResourceExhausted) throw;
      broken_.emplace(node.name(), e);
    }
    if (static_cast<int64_t>(nodes_.size()) >= kMaxFlatNodes)
      throw_error(Code::kResourceExhausted,
                  file_ + ": more than " + std::to_string(kMaxFlatNodes) + " nodes after inlining functions");
    nodes_.push_back(std::move(node));
  }

  void inline_call(const proto::NodeDef& call, const proto::FunctionDef& f, int depth, const std::string& where) {
    const std::string prefix = call.name() + "/";
    std::map<std::string, std::string> args;
    int k = 0;
    for (const auto& a : f.signature().input_arg()) {
      if (!a.number_attr().empty() || !a.type_list_attr().empty())
        throw_error(Code::kUnimplemented, where + ": function '" + f.signature().name() + "' takes a list argument '" +
                                              a.name() + "', which is not supported");
      while (k < call.input_size() && !call.input(k).empty() && call.input(k)[0] == '^') ++k;
      if (k >= call.input_size())
        throw_error(Code::kInvalidArgument, where + ": too few inputs for function '" + f.signature().name() + "'");
      args[a.name()] = call.input(k++);
    }
    // The call's attributes (and the called function's) fill placeholders.
    std::map<std::string, proto::AttrValue> saved = attr_values_;
    for (const auto& [key, value] : f.attr()) attr_values_[key] = value;
    if (call.op() == "PartitionedCall" || call.op() == "StatefulPartitionedCall") {
      for (const auto& [key, value] : call.attr().at("f").func().attr()) attr_values_[key] = value;
    } else {
      for (const auto& [key, value] : call.attr()) attr_values_[key] = value;
    }
    std::map<std::string, std::string> body_ops;
    for (const auto& n : f.node_def()) body_ops[n.name()] = n.op();
    try {
      for (const auto& n : f.node_def()) add_node(n, prefix, args, body_ops, depth + 1);
    } catch (...) {
      attr_values_ = std::move(saved);
      throw;
    }
    attr_values_ = std::move(saved);
    // The call's outputs are the returned tensors.
    for (int i = 0; i < f.signature().output_arg_size(); ++i) {
      const auto& a = f.signature().output_arg(i);
      auto r = f.ret().find(a.name());
      if (r == f.ret().end())
        throw_error(Code::kInvalidArgument,
                    where + ": function '" + f.signature().name() + "' returns no '" + a.name() + "'");
      aliases_[call.name() + ":" + std::to_string(i)] = body_ref(r->second, prefix, args, body_ops, where);
    }
  }

  const proto::GraphDef& graph_;
  std::string file_;
  std::map<std::string, const proto::FunctionDef*> functions_;
  std::vector<proto::NodeDef> nodes_;
  std::map<std::string, std::string> aliases_;
  std::map<std::string, Error> broken_;
  std::map<std::string, proto::AttrValue> attr_values_;
};

}  // namespace

std::optional<std::vector<std::string>> op_output_args(
    const std::string& op, const std::map<std::string, const proto::FunctionDef*>& functions) {
  if (auto f = functions.find(op); f != functions.end()) {
    std::vector<std::string> args;
    for (const auto& a : f->second->signature().output_arg()) args.push_back(a.name());
    return args;
  }
  if (auto imp = op_importers().find(op); imp != op_importers().end()) return imp->second.outputs;
  if (auto other = other_op_outputs().find(op); other != other_op_outputs().end()) return other->second;
  return std::nullopt;
}

FlatGraph flatten_graph(const proto::GraphDef& graph, const std::string& file,
                        const std::map<std::string, const proto::FunctionDef*>& inherited) {
  FlatGraph flat = Flattener(graph, file, inherited).run();
  rewrite_tf1_while_loops(flat);
  return flat;
}

// ---- Import ---------------------------------------------------------------------

namespace {

class Importer;

// A partially known int value (TfValue::dims), computed at run time from the
// shapes of the tensors its dims are of.
Output dims_tensor(const Scope& s, const TfValue& v) {
  std::vector<interop::Linear<DimKey>> elements;
  for (const DimValue& d : *v.dims) elements.push_back(d.linear());
  return interop::run_time_tensor(s, elements, v.dims_scalar, v.dims_dtype);
}

// The context of one node: builds into `graph_`, reading inputs from `values_`.
class Context final : public OpContext {
 public:
  Context(Importer& imp, const proto::NodeDef& node, const OpImporter& mapper, Graph& graph,
          std::vector<TfValue> inputs, bool folding);

  int num_inputs() const override { return static_cast<int>(inputs_.size()); }
  const TfValue& value(int i) const override;
  Shape shape(int i) const override;
  DType dtype(int i) const override;
  Output input(int i) override;
  Output weight(int i, bool trainable) override;
  Output variable(const std::string& node) override;
  Scope scope() const override;
  Output add(const std::string& hub_op, std::vector<Output> inputs, const Attrs& attrs) override;
  std::vector<Output> add_n(const std::string& hub_op, std::vector<Output> inputs, const Attrs& attrs) override;
  bool folding() const override { return folding_; }
  void set_output(int i, Output value) override { outputs_[i].out = value; }
  void set_constant(int i, const Tensor& value) override { outputs_[i].constant = value; }
  void set_dims(int i, std::vector<DimValue> dims, DType dtype, bool scalar) override {
    outputs_[i].dims = std::move(dims);
    outputs_[i].dims_dtype = dtype;
    outputs_[i].dims_scalar = scalar;
  }
  void set_variable(int i, const std::string& variable) override { outputs_[i].variable = variable; }
  void set_unavailable(int i, const std::string& why) override { outputs_[i].unavailable = why; }
  void set_dead(int i) override { outputs_[i].dead = true; }
  void forward(int out, int in) override { outputs_[out] = value(in); }

  SubgraphPtr import_function_graph(const proto::GraphDef& graph, const std::vector<std::string>& feeds,
                                    const std::vector<std::string>& fetches) override;
  const proto::NodeDef& variable_node(const std::string& name) const override;
  const proto::FunctionDef* function(const std::string& name) const override;

  std::map<int, TfValue>& outputs() { return outputs_; }

 private:
  Importer& imp_;
  Graph& graph_;
  std::vector<TfValue> inputs_;
  bool folding_;
  std::map<int, TfValue> outputs_;
};

class Importer {
 public:
  Importer(const FlatGraph& g, const GraphImportOptions& o) : g_(g), o_(o) {}

  ImportedGraph run();

  const std::string& file() const { return g_.file; }
  bool weights_as_variables() const { return o_.weights_as_variables; }
  // A unique hub name for a helper node, never one a TensorFlow node has.
  std::string helper_name(const std::string& base) const {
    std::string name = base;
    for (int k = 1; out_.graph.find(name) || g_.by_name.count(name); ++k) name = base + "_" + std::to_string(k);
    return name;
  }
  std::string main_name(const std::string& tf_name) const {
    return out_.graph.find(tf_name) ? helper_name(tf_name) : tf_name;
  }
  // The hub Variable for the variable node `name` (VariableV2 or
  // VarHandleOp), created on first use with its value checked against the
  // node's dtype and shape.
  Output variable(const std::string& name, const std::string& where);
  Output weight_variable(const std::string& const_node, const Tensor& value, bool trainable);
  // Context::import_function_graph, for the node at `where`.
  SubgraphPtr import_function_graph(const proto::GraphDef& graph, const std::vector<std::string>& feeds,
                                    const std::vector<std::string>& fetches, const std::string& where);
  const FlatGraph& flat() const { return g_; }

 private:
  void import_node(const proto::NodeDef& node);
  // Evaluates a node of constant inputs at import; false (nothing done) where
  // its output would outgrow the bound (hub/interop/fold.h): it is then
  // mapped to run in the graph instead.
  bool fold(const proto::NodeDef& node, const OpImporter& mapper, std::vector<TfValue> inputs);
  std::vector<const proto::NodeDef*> needed_nodes();
  // Whether a control input from node `name` marks a TensorFlow 1 cond
  // branch (an Identity of a Switch output: cond/switch_t, cond/switch_f),
  // which makes the node dead when that branch is not taken.
  bool follows_branch(const std::string& name) const;
  // Whether tensor `in` ("node:k", or "^node") is dead (TfValue::dead).
  bool dead(const std::string& in) const;
  Output fetch(const std::string& tensor);
  bool feeds_statistics(const std::string& variable) const;

  const FlatGraph& g_;
  const GraphImportOptions& o_;
  ImportedGraph out_;
  std::map<std::string, TfValue> values_;      // canonical tensor name -> value
  std::map<std::string, Output> variables_;    // variable name -> Variable node
  std::map<std::string, Output> weight_vars_;  // Const node -> Variable node
  std::set<std::string> fed_;
  std::set<std::string> dead_nodes_;  // nodes on a branch not taken (TfValue::dead)
};

Context::Context(Importer& imp, const proto::NodeDef& node, const OpImporter& mapper, Graph& graph,
                 std::vector<TfValue> inputs, bool folding)
    : OpContext(node, mapper.attrs, imp.file()),
      imp_(imp),
      graph_(graph),
      inputs_(std::move(inputs)),
      folding_(folding) {}

const TfValue& Context::value(int i) const {
  if (i < 0 || i >= num_inputs())
    fail("needs input " + std::to_string(i) + ", the node has " + std::to_string(num_inputs()));
  const TfValue& v = inputs_[i];
  if (!v.unavailable.empty())
    unsupported("input " + std::to_string(i) + " ('" + node().input(i) + "'): " + v.unavailable);
  return v;
}

Shape Context::shape(int i) const {
  const TfValue& v = value(i);
  if (v.constant) return v.constant->shape();
  if (v.dims) return v.dims_scalar ? Shape{} : Shape{static_cast<int64_t>(v.dims->size())};
  if (v.out.valid()) return graph_.spec(v.out).shape;
  fail("input " + std::to_string(i) + " ('" + node().input(i) + "') is a resource handle, not a tensor");
}

DType Context::dtype(int i) const {
  const TfValue& v = value(i);
  if (v.constant) return v.constant->dtype();
  if (v.dims) return v.dims_dtype;
  if (v.out.valid()) return graph_.spec(v.out).dtype;
  fail("input " + std::to_string(i) + " ('" + node().input(i) + "') is a resource handle, not a tensor");
}

Output Context::input(int i) {
  const TfValue& v = value(i);
  if (v.out.valid()) return v.out;
  if (v.constant) {
    Output c = ops::constant(
        Scope(graph_), *v.constant,
        folding_ ? "in" + std::to_string(i)
                 : imp_.helper_name(v.const_node.empty() ? name() + "/input" + std::to_string(i) : v.const_node));
    inputs_[i].out = c;  // later uses of this input in the same node share it
    return c;
  }
  if (v.dims) {
    // Computed at run time from the dims' tensors' shapes (a count for a run-time TopK's k).
    const Output t = dims_tensor(Scope(graph_).sub(imp_.helper_name(name() + "/input" + std::to_string(i))), v);
    inputs_[i].out = t;
    return t;
  }
  fail("input " + std::to_string(i) + " ('" + node().input(i) + "') is a resource handle, not a tensor");
}

Output Context::weight(int i, bool trainable) {
  const TfValue& v = value(i);
  if (folding_ || !imp_.weights_as_variables() || !v.constant || v.const_node.empty() ||
      v.constant->dtype() != DType::kFloat32)
    return input(i);
  return imp_.weight_variable(v.const_node, *v.constant, trainable);
}

Output Context::variable(const std::string& node) { return imp_.variable(node, where()); }

SubgraphPtr Context::import_function_graph(const proto::GraphDef& graph, const std::vector<std::string>& feeds,
                                           const std::vector<std::string>& fetches) {
  return imp_.import_function_graph(graph, feeds, fetches, where());
}

const proto::NodeDef& Context::variable_node(const std::string& name) const {
  const proto::NodeDef* n = imp_.flat().find(name);
  HUB_CHECK(n != nullptr, "variable node " + name);
  return *n;
}

const proto::FunctionDef* Context::function(const std::string& name) const {
  auto it = imp_.flat().functions.find(name);
  return it == imp_.flat().functions.end() ? nullptr : it->second;
}

Scope Context::scope() const {
  if (folding_) return Scope(graph_).sub("fold");
  return Scope(graph_).sub(imp_.helper_name(name()));
}

Output Context::add(const std::string& hub_op, std::vector<Output> inputs, const Attrs& attrs) {
  return add_n(hub_op, std::move(inputs), attrs)[0];
}

std::vector<Output> Context::add_n(const std::string& hub_op, std::vector<Output> inputs, const Attrs& attrs) {
  const std::string n = folding_ ? graph_.unique_name("op") : imp_.main_name(name());
  try {
    Output first = graph_.add_node(hub_op, n, std::move(inputs), attrs);
    std::vector<Output> outs;
    for (int k = 0; k < static_cast<int>(graph_.node(first).outputs.size()); ++k) outs.push_back({first.node, k});
    return outs;
  } catch (const Error& e) {
    throw e.with_context(where());
  }
}

// ---- Importer ----------------------------------------------------------------------

bool Importer::feeds_statistics(const std::string& variable) const {
  // A variable read (through Identity/ReadVariableOp nodes) as input 3 or 4
  // of a FusedBatchNorm is a moving statistic.
  std::set<std::string> reads{variable};
  for (size_t before = 0; before != reads.size();) {
    before = reads.size();
    for (const auto& n : g_.nodes)
      if ((n.op() == "Identity" || n.op() == "ReadVariableOp") && n.input_size() > 0 &&
          reads.count(split_tensor(n.input(0), g_.file).first))
        reads.insert(n.name());
  }
  for (const auto& n : g_.nodes) {
    if (n.op().rfind("FusedBatchNorm", 0) != 0) continue;
    for (int k = 3; k < 5 && k < n.input_size(); ++k)
      if (reads.count(split_tensor(n.input(k), g_.file).first)) return true;
  }
  return false;
}

Output Importer::variable(const std::string& name, const std::string& where) {
  auto it = variables_.find(name);
  if (it != variables_.end()) return it->second;
  const proto::NodeDef* node = g_.find(name);
  HUB_CHECK(node != nullptr, "variable node " + name);
  auto dt = node->attr().find("dtype");
  if (dt == node->attr().end()) throw_error(Code::kInvalidArgument, where + ": variable '" + name + "' has no dtype");
  std::optional<DType> dtype = dtype_from_tf(dt->second.type());
  if (!dtype)
    throw_error(Code::kInvalidArgument, where + ": variable '" + name + "' has dtype " +
                                            tf_dtype_name(dt->second.type()) + ", which is not supported");
  if (!o_.variable_value)
    throw_error(Code::kNotFound, where + ": variable '" + name + "' has no value (the model has no variables)");
  std::optional<Tensor> value;
  try {
    value = o_.variable_value(name);
  } catch (const Error& e) {
    throw e.with_context(where);
  }
  if (value->dtype() != *dtype)
    throw_error(Code::kInvalidArgument, where + ": variable '" + name + "' is " + std::string(dtype_name(*dtype)) +
                                            " in the graph but its value is " + value->spec_string());
  if (auto sh = node->attr().find("shape"); sh != node->attr().end() && !sh->second.shape().unknown_rank()) {
    Shape declared = shape_from_proto(sh->second.shape(), where);
    bool ok = declared.rank() == value->rank();
    for (int d = 0; ok && d < declared.rank(); ++d) ok = declared[d] < 0 || declared[d] == value->dim(d);
    if (!ok)
      throw_error(Code::kInvalidArgument, where + ": variable '" + name + "' has shape " + declared.to_string() +
                                              " in the graph but its value is " + value->spec_string());
  }
  ops::VariableOptions vo;
  vo.dtype = *dtype;
  vo.trainable = o_.trainable ? o_.trainable->count(name) > 0 : (*dtype == DType::kFloat32 && !feeds_statistics(name));
  Output v = ops::variable(Scope(out_.graph), name, value->shape(), vo);
  out_.weights[name] = *value;
  variables_[name] = v;
  return v;
}

Output Importer::weight_variable(const std::string& const_node, const Tensor& value, bool trainable) {
  auto it = weight_vars_.find(const_node);
  if (it != weight_vars_.end()) return it->second;
  ops::VariableOptions vo;
  vo.trainable = trainable;
  Output v = ops::variable(Scope(out_.graph), main_name(const_node), value.shape(), vo);
  out_.weights[out_.graph.node(v).name] = value;
  weight_vars_[const_node] = v;
  return v;
}

SubgraphPtr Importer::import_function_graph(const proto::GraphDef& graph, const std::vector<std::string>& feeds,
                                            const std::vector<std::string>& fetches, const std::string& where) {
  if (o_.depth >= kMaxCallDepth)
    throw_error(Code::kInvalidArgument, where + ": control flow nests deeper than " + std::to_string(kMaxCallDepth));
  if (++*o_.subgraph_imports > interop::kMaxSubgraphImports)
    throw_error(Code::kResourceExhausted, where + ": importing its functions takes more than " +
                                              std::to_string(interop::kMaxSubgraphImports) +
                                              " function graph imports (nested loops whose carried shapes relax)");
  GraphImportOptions o = o_;
  o.feeds.clear();
  for (const std::string& f : feeds) o.feeds.push_back(Feed{f, std::nullopt, std::nullopt});
  o.fetches = fetches;
  o.trainable = std::set<std::string>{};  // the module's variables are the main graph's (below)
  o.weights_as_variables = false;
  o.depth = o_.depth + 1;
  ImportedGraph sub;
  try {
    sub = import_graph(flatten_graph(graph, g_.file, g_.functions), o);
  } catch (const Error& e) {
    throw e.with_context(where);
  }
  // A variable read inside is the module's: declared in the main graph too.
  for (const auto& [name, value] : sub.weights) variable(name, where);
  return make_subgraph(sub.graph, sub.feeds, sub.fetches);
}

bool Importer::follows_branch(const std::string& name) const {
  const proto::NodeDef* n = g_.find(name);
  if (!n || n->op() != "Identity" || n->input_size() < 1 || n->input(0).empty() || n->input(0)[0] == '^') return false;
  const proto::NodeDef* src = g_.find(split_tensor(n->input(0), g_.file).first);
  return src && src->op() == "Switch";
}

bool Importer::dead(const std::string& in) const {
  if (in[0] == '^') return dead_nodes_.count(in.substr(1)) > 0;
  if (dead_nodes_.count(split_tensor(in, g_.file).first)) return true;
  auto v = values_.find(in);
  return v != values_.end() && v->second.dead;
}

std::vector<const proto::NodeDef*> Importer::needed_nodes() {
  // Iterative depth-first search from the fetches over data inputs; fed
  // tensors end the search. 1 = on the stack, 2 = done.
  std::map<std::string, int> state;
  std::vector<const proto::NodeDef*> order;
  struct Frame {
    const proto::NodeDef* node;
    int next_input;
  };
  for (const std::string& f : o_.fetches) {
    const std::string fetch = g_.resolve(canonical_tensor(f));
    if (fed_.count(fetch)) continue;
    const std::string root = split_tensor(fetch, g_.file).first;
    const proto::NodeDef* r = g_.find(root);
    if (!r) throw_error(Code::kInvalidArgument, g_.file + ": output '" + fetch + "' names no node of the graph");
    if (state[root] == 2) continue;
    std::vector<Frame> stack{{r, 0}};
    state[root] = 1;
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (f.next_input == f.node->input_size()) {
        state[f.node->name()] = 2;
        order.push_back(f.node);
        stack.pop_back();
        continue;
      }
      const std::string& in = f.node->input(f.next_input++);
      if (in.empty() || fed_.count(in) || (in[0] == '^' && !follows_branch(in.substr(1)))) continue;
      const std::string src = in[0] == '^' ? in.substr(1) : split_tensor(in, g_.file).first;
      const proto::NodeDef* s = g_.find(src);
      if (!s)
        throw_error(Code::kInvalidArgument, g_.file + ": node '" + f.node->name() + "' (" + f.node->op() +
                                                "): input '" + in + "' names no node of the graph");
      int& st = state[src];
      if (st == 2) continue;
      if (st == 1) {
        std::string cycle = src;
        bool on = false;
        for (const Frame& fr : stack) {
          if (fr.node->name() == src) on = true;
          if (on && fr.node->name() != src) cycle += " -> " + fr.node->name();
        }
        throw_error(Code::kInvalidArgument, g_.file + ": the graph has a cycle: " + cycle + " -> " + src);
      }
      st = 1;
      stack.push_back({s, 0});
    }
  }
  return order;
}

bool Importer::fold(const proto::NodeDef& node, const OpImporter& mapper, std::vector<TfValue> inputs) {
  Graph scratch;
  int64_t in_elements = 0;
  for (const TfValue& v : inputs)
    if (v.constant) in_elements += v.constant->num_elements();
  Context ctx(*this, node, mapper, scratch, std::move(inputs), /*folding=*/true);
  mapper.map(ctx);
  std::vector<Output> fetches;
  std::vector<int> which;
  for (auto& [i, v] : ctx.outputs()) {
    if (v.out.valid()) {
      // A few bytes of Tile or Fill must not compute terabytes at import (hub/interop/fold.h).
      if (!interop::fold_allowed(scratch.spec(v.out).shape, in_elements)) return false;
      fetches.push_back(v.out);
      which.push_back(i);
    }
  }
  std::vector<Tensor> results;
  if (!fetches.empty()) {
    Session session(scratch, nullptr, {&reference_backend()});
    try {
      results = session.run({}, fetches);
    } catch (const Error& e) {
      throw e.with_context(ctx.where() + ": folding a constant");
    }
  }
  for (size_t k = 0; k < which.size(); ++k) {
    TfValue v;
    v.constant = results[k];
    ctx.outputs()[which[k]] = std::move(v);
  }
  for (auto& [i, v] : ctx.outputs()) values_[node.name() + ":" + std::to_string(i)] = std::move(v);
  return true;
}

void Importer::import_node(const proto::NodeDef& node) {
  const std::string where = g_.file + ": node '" + node.name() + "' (" + node.op() + ")";
  // A node reading a dead tensor (or after a dead branch marker) is dead, its
  // op never mapped; a Merge is dead only when all its inputs are.
  if (node.op() != "Merge" ? std::any_of(node.input().begin(), node.input().end(),
                                         [&](const std::string& in) { return !in.empty() && dead(in); })
                           : std::all_of(node.input().begin(), node.input().end(), [&](const std::string& in) {
                               return in.empty() || in[0] == '^' || dead(in);
                             })) {
    dead_nodes_.insert(node.name());
    return;
  }
  if (auto b = g_.broken.find(node.name()); b != g_.broken.end())
    throw_error(b->second.code(), b->second.message() + " (the outputs need this call)");
  const auto& importers = op_importers();
  auto it = importers.find(node.op());
  if (it == importers.end())
    throw_error(Code::kUnimplemented,
                where + ": op " + node.op() + " is not supported (docs/import.md lists the supported ops)");
  const OpImporter& mapper = it->second;
  for (const auto& [key, value] : node.attr()) {
    if (!key.empty() && key[0] == '_') continue;  // internal: _output_shapes, _class, ...
    if (!mapper.attrs.count(key))
      throw_error(Code::kUnimplemented, where + ": attribute '" + key + "' is not supported");
  }
  std::vector<TfValue> inputs;
  bool all_constant = mapper.foldable;
  for (const std::string& in : node.input()) {
    if (in.empty() || in[0] == '^') continue;
    if (dead(in)) {  // a Merge's input from the branch not taken
      inputs.emplace_back().dead = true;
      all_constant = false;
      continue;
    }
    auto v = values_.find(in);
    if (v == values_.end()) {
      // An output index the producing node does not have.
      throw_error(Code::kInvalidArgument, where + ": input '" + in + "' names no output of its node");
    }
    all_constant = all_constant && v->second.constant.has_value();
    inputs.push_back(v->second);
  }
  if (node.op() == "Const" && o_.const_values && o_.const_values->count(node.name())) {
    TfValue v;
    v.constant = o_.const_values->at(node.name());
    v.const_node = node.name();
    values_[node.name() + ":0"] = std::move(v);
    return;
  }
  if (all_constant && !inputs.empty() && fold(node, mapper, inputs)) return;
  Context ctx(*this, node, mapper, out_.graph, std::move(inputs), /*folding=*/false);
  mapper.map(ctx);
  for (auto& [i, v] : ctx.outputs()) {
    if (node.op() == "Const") v.const_node = node.name();
    values_[node.name() + ":" + std::to_string(i)] = std::move(v);
  }
}

Output Importer::fetch(const std::string& tensor) {
  if (dead(tensor))
    throw_error(Code::kInvalidArgument,
                g_.file + ": output '" + tensor + "' is on a branch of a cond its (known) predicate does not take");
  auto it = values_.find(tensor);
  if (it == values_.end())
    throw_error(Code::kInvalidArgument, g_.file + ": output '" + tensor + "' names no output of its node");
  TfValue& v = it->second;
  if (!v.unavailable.empty())
    throw_error(Code::kUnimplemented, g_.file + ": output '" + tensor + "': " + v.unavailable);
  if (v.out.valid()) return v.out;
  if (v.constant) {
    v.out = ops::constant(Scope(out_.graph), *v.constant, helper_name(split_tensor(tensor, g_.file).first));
    return v.out;
  }
  if (v.dims) {  // an output computed from shapes (tf.shape(x)[0], a TensorArray's size)
    v.out = dims_tensor(Scope(out_.graph).sub(helper_name(split_tensor(tensor, g_.file).first)), v);
    return v.out;
  }
  throw_error(Code::kUnimplemented, g_.file + ": output '" + tensor + "' is not a tensor hub can compute at run time");
}

ImportedGraph Importer::run() {
  for (const Feed& feed : o_.feeds) {
    const std::string tensor = g_.resolve(canonical_tensor(feed.tensor));
    const auto [node_name, index] = split_tensor(tensor, g_.file);
    const proto::NodeDef* n = g_.find(node_name);
    if (!n) throw_error(Code::kInvalidArgument, g_.file + ": input '" + feed.tensor + "' names no node of the graph");
    const std::string where = g_.file + ": input '" + feed.tensor + "'";
    std::optional<DType> dtype = feed.dtype;
    std::optional<Shape> shape = feed.shape;
    if (n->op() == "Placeholder" || n->op() == "PlaceholderWithDefault") {
      if (!dtype) {
        auto a = n->attr().find("dtype");
        if (a == n->attr().end()) throw_error(Code::kInvalidArgument, where + ": the placeholder has no dtype");
        dtype = dtype_from_tf(a->second.type());
        if (!dtype)
          throw_error(Code::kInvalidArgument,
                      where + ": dtype " + tf_dtype_name(a->second.type()) + " is not supported");
      }
      if (!shape) {
        auto a = n->attr().find("shape");
        if (a != n->attr().end() && !a->second.shape().unknown_rank())
          shape = shape_from_proto(a->second.shape(), where);
      }
    }
    if (!dtype || !shape)
      throw_error(Code::kInvalidArgument, where +
                                              ": the dtype and a shape of known rank are needed "
                                              "(the signature and the node give none)");
    Output p = ops::placeholder(Scope(out_.graph), *dtype, *shape,
                                main_name(index == 0 ? node_name : node_name + "_" + std::to_string(index)));
    TfValue v;
    v.out = p;
    values_[tensor] = v;
    fed_.insert(tensor);
    out_.feeds.push_back(p);
  }
  for (const proto::NodeDef* n : needed_nodes()) import_node(*n);
  for (const std::string& t : o_.fetches) out_.fetches.push_back(fetch(g_.resolve(canonical_tensor(t))));
  return std::move(out_);
}

}  // namespace

std::map<std::string, AttachedValue> provenance(const std::string& format, const std::string& sha256,
                                                const std::string& producer) {
  std::map<std::string, AttachedValue> a;
  a["source_format"] = format;
  a["source_sha256"] = sha256;
  if (!producer.empty()) a["source_producer"] = producer;
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  a["imported_at"] = std::string(buf);
  return a;
}

ImportedGraph import_graph(const FlatGraph& graph, const GraphImportOptions& options) {
  std::set<std::string> fed;
  for (const Feed& f : options.feeds) fed.insert(graph.resolve(canonical_tensor(f.tensor)));
  if (const std::optional<FlatGraph> rewritten = rewrite_tf1_conds(graph, fed))
    return Importer(*rewritten, options).run();
  return Importer(graph, options).run();
}

}  // namespace hub::tf
