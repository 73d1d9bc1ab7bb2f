// The one mapping between TensorFlow ops and hub ops, shared by every
// TensorFlow format (SavedModel, TF Hub modules, TF.js graph models) in both
// directions. Internal to hub/interop/tf; not installed.
//
// Import: an OpImporter per TensorFlow op type translates one NodeDef into
// hub nodes through an OpContext (graph_import.cc drives it). TensorFlow is
// NHWC like hub, so most ops map one to one; the mapper reads attributes
// (defaults applied when a writer stripped them), inputs (constant ones as
// tensors), and sets each output. When every input of a foldable op is known
// at import, the same mapper builds a scratch graph that is evaluated with
// the reference kernels: the node becomes a constant.
//
// Export: an OpExporter per hub op writes the TensorFlow NodeDefs of one hub
// node through an ExportContext (saved_model_export.cc drives it).
//
// Families: ops_array.cc (sources, variables, shapes, slicing, joining),
// ops_math.cc (element-wise, reductions, matrix products), ops_nn.cc
// (convolution, pooling, normalization, activations, resizing), ops_select.cc
// (Where, NonMaxSuppression: output sizes that follow from the values),
// ops_control.cc (If and While: functions imported as subgraphs).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hub/interop/linear.h"
#include "hub/interop/tf/proto/graph.pb.h"
#include "hub/ops/scope.h"
#include "hub/ops/subgraph.h"
#include "hub/tensor/tensor.h"

namespace hub::tf {

// A run-time dim: (hub tensor, dim index).
using DimKey = std::pair<Output, int>;

// One element of a partially known int vector (a Shape of a tensor with
// unknown dims, and what is computed from it): a known value, dimension
// `dim` of tensor `of` in the hub graph, unknown until run time, or value +
// the sum of coefficient x dim over `terms` (sums, differences and constant
// multiples of such dims: tf.shape(k)[1] - tf.shape(q)[1];
// hub/interop/linear.h).
struct DimValue {
  int64_t value = 0;
  Output of;  // valid: one run-time dim
  int dim = -1;
  std::vector<std::pair<DimKey, int64_t>> terms;  // non-empty: linear in run-time dims
  static DimValue constant(int64_t v) { return {v, {}, -1, {}}; }
  static DimValue dim_of(Output of, int dim) { return {0, of, dim, {}}; }
  bool known() const { return !of.valid() && terms.empty(); }
  bool is_dim() const { return of.valid(); }
  // As value + terms (a known value has none, a dim one).
  interop::Linear<DimKey> linear() const {
    if (is_dim()) return {0, {{{of, dim}, 1}}};
    return {value, terms};
  }
};

// A TensorFlow tensor during import.
struct TfValue {
  std::optional<Tensor> constant;  // known at import
  Output out;                      // materialised in the hub graph
  // A partially known int32/int64 value: a vector, or a scalar (one
  // element, dims_scalar), e.g. Shape(x) with x's batch size unknown.
  std::optional<std::vector<DimValue>> dims;
  bool dims_scalar = false;
  DType dims_dtype = DType::kInt32;
  std::string variable;     // a resource handle (VarHandleOp): the variable's name
  std::string const_node;   // the Const node a constant came from ("" if computed)
  std::string unavailable;  // why the value cannot be used ("" if it can)
  // On the branch a TensorFlow 1 Switch of a known predicate does not take:
  // the nodes it reaches are dead too, and a Merge takes its live input.
  bool dead = false;
};

class OpContext {
 public:
  virtual ~OpContext() = default;

  const proto::NodeDef& node() const { return node_; }
  const std::string& name() const { return node_.name(); }
  const std::string& op() const { return node_.op(); }

  // Attributes: the node's value, else the op's TensorFlow default (declared
  // with the mapper). A missing attribute without a default fails.
  const proto::AttrValue& attr(const std::string& name) const;
  int64_t attr_int(const std::string& name) const;
  float attr_float(const std::string& name) const;
  bool attr_bool(const std::string& name) const;
  std::string attr_string(const std::string& name) const;
  std::vector<int64_t> attr_ints(const std::string& name) const;
  std::vector<std::string> attr_strings(const std::string& name) const;
  // A `type` attribute as a hub dtype; fails naming TensorFlow's dtype when
  // hub has no such dtype.
  DType attr_dtype(const std::string& name) const;
  // Fails unless attribute `name` is one of `allowed` (strings).
  std::string attr_choice(const std::string& name, const std::vector<std::string>& allowed) const;

  // Data inputs (control inputs are dropped before a mapper runs).
  virtual int num_inputs() const = 0;
  virtual const TfValue& value(int i) const = 0;
  std::optional<Tensor> constant(int i) const { return value(i).constant; }
  // A constant int32/int64 input as int64 values (fails when not constant).
  std::vector<int64_t> constant_ints(int i, const std::string& what) const;
  // Static shape and dtype of input i.
  virtual Shape shape(int i) const = 0;
  virtual DType dtype(int i) const = 0;
  // The input in the graph being built (a constant becomes a Const node).
  virtual Output input(int i) = 0;
  // A float constant input as a module variable named after its Const node
  // (created once; trainable as asked) when importing a frozen graph
  // (GraphImportOptions::weights_as_variables), so weights live in
  // variables.safetensors; otherwise input(i).
  virtual Output weight(int i, bool trainable = true) = 0;
  // The module variable of the variable node `node` (VariableV2, or the
  // VarHandleOp behind a ReadVariableOp's handle).
  virtual Output variable(const std::string& node) = 0;

  // Control flow: `graph` (nodes calling functions of the model's library,
  // or of its own, fed through the Placeholders `feeds`) imported as a hub
  // subgraph returning `fetches` ("node:k"). Variables it reads (VarHandleOp
  // nodes copied from variable_node()) are the module's.
  virtual SubgraphPtr import_function_graph(const proto::GraphDef& graph, const std::vector<std::string>& feeds,
                                            const std::vector<std::string>& fetches) = 0;
  // The VarHandleOp (or VariableV2) node of a variable a handle names.
  virtual const proto::NodeDef& variable_node(const std::string& name) const = 0;
  // The library function `name`, or null.
  virtual const proto::FunctionDef* function(const std::string& name) const = 0;
  // Where helper nodes go: a scope named after this node.
  virtual Scope scope() const = 0;
  // Adds the node's main hub op under the node's own name (made unique).
  virtual Output add(const std::string& hub_op, std::vector<Output> inputs, const Attrs& attrs = {}) = 0;
  virtual std::vector<Output> add_n(const std::string& hub_op, std::vector<Output> inputs, const Attrs& attrs = {}) = 0;
  // Whether the node is being folded (all inputs constant).
  virtual bool folding() const = 0;

  virtual void set_output(int i, Output value) = 0;
  virtual void set_constant(int i, const Tensor& value) = 0;
  virtual void set_dims(int i, std::vector<DimValue> dims, DType dtype, bool scalar = false) = 0;
  virtual void set_variable(int i, const std::string& variable) = 0;
  virtual void set_unavailable(int i, const std::string& why) = 0;
  // Output i is on a branch not taken (TfValue::dead).
  virtual void set_dead(int i) = 0;
  // Output `out` is input `in` as it is (a constant stays one, a variable
  // handle stays one).
  virtual void forward(int out, int in) = 0;

  // "<file>: node '<name>' (<op>): message": InvalidArgument / Unimplemented.
  [[noreturn]] void fail(const std::string& message) const;
  [[noreturn]] void unsupported(const std::string& message) const;
  [[noreturn]] void fail_attr(const std::string& attr, const std::string& why) const;
  std::string where() const;

 protected:
  OpContext(const proto::NodeDef& node, const std::map<std::string, proto::AttrValue>& defaults, std::string file)
      : node_(node), defaults_(defaults), file_(std::move(file)) {}

 private:
  const proto::NodeDef& node_;
  const std::map<std::string, proto::AttrValue>& defaults_;
  std::string file_;
};

// A TensorFlow attribute's default, for declaring importers.
proto::AttrValue attr_s(const std::string& v);
proto::AttrValue attr_i(int64_t v);
proto::AttrValue attr_f(float v);
proto::AttrValue attr_b(bool v);
proto::AttrValue attr_ints(const std::vector<int64_t>& v);
proto::AttrValue attr_type(int tf_dtype);
proto::AttrValue attr_list();  // an empty list
// Required (no default): a value that is not set.
proto::AttrValue attr_required();

struct OpImporter {
  void (*map)(OpContext&) = nullptr;
  // Every attribute the op has, with TensorFlow's default (attr_required()
  // for none). A node attribute not listed here (other than the internal
  // "_..." ones) is refused.
  std::map<std::string, proto::AttrValue> attrs;
  // Its output arguments, as function bodies name them ("node:arg:k"); only
  // the last may be a list.
  std::vector<std::string> outputs = {"output"};
  // May be evaluated at import when all its inputs are constant.
  bool foldable = true;
};

// Add, AddV2, Sub, Mul of int values computed from shapes with run-time
// elements (tf.shape(k)[1] - tf.shape(q)[1]): sums, differences and constant
// multiples stay partially known (linear DimValues). False when the node is
// not such arithmetic (the normal mapping applies).
bool map_dim_arithmetic(OpContext& c);

// Output 0 is input 0 as it is (Identity, a PlaceholderWithDefault left at
// its default, a TensorList made from or stacked into a tensor).
void map_forward(OpContext& c);

// Importers by TensorFlow op type.
const std::map<std::string, OpImporter>& op_importers();
void add_array_importers(std::map<std::string, OpImporter>& m);
void add_math_importers(std::map<std::string, OpImporter>& m);
void add_nn_importers(std::map<std::string, OpImporter>& m);
void add_select_importers(std::map<std::string, OpImporter>& m);
void add_control_flow_importers(std::map<std::string, OpImporter>& m);

// ---- Export -----------------------------------------------------------------

// A TensorFlow node name for a hub name: characters TensorFlow does not
// allow ([A-Za-z0-9.][A-Za-z0-9_./-]*) become '_'.
std::string tf_node_name(const std::string& name);

class ExportContext {
 public:
  virtual ~ExportContext() = default;
  virtual const Node& node() const = 0;
  virtual const TensorSpec& input_spec(int i) const = 0;
  // The TensorFlow tensor ("name" or "name:k") carrying hub input i.
  virtual std::string input(int i) const = 0;
  // Adds a NodeDef (op, inputs) named `name` (relative names are put under
  // the hub node's name; "" is the hub node's own name) and returns it for
  // its attributes.
  virtual proto::NodeDef& add(const std::string& name, const std::string& op, std::vector<std::string> inputs) = 0;
  // Adds a Const node holding `value`; returns its tensor name.
  virtual std::string constant(const std::string& name, const Tensor& value) = 0;
  // Hub output k is TensorFlow tensor `tensor`.
  virtual void set_output(int k, const std::string& tensor) = 0;
  // InvalidArgument "hub node '<name>' (<op>): message".
  [[noreturn]] void fail(const std::string& message) const;
};

using OpExporter = void (*)(ExportContext&);
// Exporters by hub op name.
const std::map<std::string, OpExporter>& op_exporters();
void add_array_exporters(std::map<std::string, OpExporter>& m);
void add_math_exporters(std::map<std::string, OpExporter>& m);
void add_nn_exporters(std::map<std::string, OpExporter>& m);
void add_select_exporters(std::map<std::string, OpExporter>& m);

// A target of `target`'s entries as a run-time int32 vector, those the node's
// `from` triples (position, input, dim) name read from its reference inputs'
// shapes (DynamicReshape, DynamicSlice, Resize).
std::string dims_with_references(ExportContext& c, const std::vector<int64_t>& target);

// Attribute setters for exporters.
void set_type(proto::NodeDef& n, const std::string& attr, DType dtype);
void set_ints(proto::NodeDef& n, const std::string& attr, const std::vector<int64_t>& v);

}  // namespace hub::tf
