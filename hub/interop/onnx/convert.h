// Internals of the ONNX importer shared by importer.cc (the driver) and the
// op mappers (import_*.cc). Not installed.
//
// A mapper translates one ONNX node into hub ops through a NodeContext: it
// reads inputs in the layout it needs (native(): ONNX's order; nhwc(): a 4-D
// input as NHWC), constant inputs as tensors (constant()), static shapes
// (shape()), and sets each output with its layout. The same mapper builds
// the imported graph and, when every input is constant, folds the node at
// import (the context then builds a scratch graph evaluated with the
// reference kernels).
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hub/interop/fold.h"
#include "hub/interop/linear.h"
#include "hub/ops/scope.h"
#include "hub/ops/subgraph.h"
#include "hub/tensor/tensor.h"

namespace hub::onnx_interop {

// Thrown by a mapper when a value cannot exist at run time (e.g. the Shape of
// a tensor with dynamic dimensions): the node's outputs become unavailable,
// and the error surfaces only if something needs them (a Reshape reading its
// output shape from shape inference does not).
struct Deferred {
  std::string reason;
};

// One element of a shape computed at import: a known value, or dimension
// `dim` of ONNX value `tensor` (known only at run time, e.g. the batch).
// A run-time dim: (ONNX value name, dim index).
using DimKey = std::pair<std::string, int>;

struct SymDim {
  int64_t value = 0;
  std::string tensor;  // empty: `value` is known (unless derived)
  int dim = 0;
  // Computed by arithmetic from run-time dims (a transformer's batch x
  // heads): known only at run time, and not a dim of one tensor.
  bool derived = false;
  // A derived value that is linear in run-time dims: value + the sum of
  // coefficient x dim over the terms (GPT-2's key_length - query_length;
  // hub/interop/linear.h); empty for other arithmetic.
  std::vector<std::pair<DimKey, int64_t>> terms;
  static SymDim constant(int64_t v) { return SymDim{v, "", 0, false, {}}; }
  static SymDim dim_of(std::string tensor, int dim) { return SymDim{0, std::move(tensor), dim, false, {}}; }
  static SymDim computed(int64_t v = 0, std::vector<std::pair<DimKey, int64_t>> terms = {}) {
    return SymDim{v, "", 0, true, std::move(terms)};
  }
  bool known() const { return tensor.empty() && !derived; }
  // As value + terms, when it is linear in run-time dims (known and dim ones too).
  std::optional<interop::Linear<DimKey>> linear() const {
    if (known()) return interop::Linear<DimKey>{value, {}};
    if (!derived) return interop::Linear<DimKey>{0, {{{tensor, dim}, 1}}};
    if (terms.empty()) return std::nullopt;
    return interop::Linear<DimKey>{value, terms};
  }
  bool operator==(const SymDim& o) const {
    return value == o.value && tensor == o.tensor && dim == o.dim && derived == o.derived && terms == o.terms;
  }
};
using SymShape = std::vector<SymDim>;

// Where one node is being built.
class NodeContext {
 public:
  virtual ~NodeContext() = default;
  const ::onnx::NodeProto& node() const { return node_; }
  const std::string& op() const { return node_.op_type(); }
  const Scope& scope() const { return scope_; }

  // Inputs: ONNX's positional inputs; an empty name is an absent optional one.
  int num_inputs() const { return node_.input_size(); }
  bool has_input(int i) const { return i < node_.input_size() && !node_.input(i).empty(); }
  // Static logical (ONNX-order) shape and dtype of input i (-1: unknown dim).
  virtual Shape shape(int i) const = 0;
  virtual DType dtype(int i) const = 0;
  // Its value when known at import time, in ONNX order.
  virtual std::optional<Tensor> constant(int i) const = 0;
  // The input as a hub tensor in ONNX's order / (4-D only) as NHWC.
  virtual Output native(int i) = 0;
  virtual Output nhwc(int i) = 0;
  // Whether input i is stored NHWC right now (a layout-preserving op keeps it).
  virtual bool is_nhwc(int i) const = 0;
  // A constant input as a weight: a module variable (trainable unless
  // `trainable` is false) holding transform(value), or a graph constant when
  // folding. The input must be constant (else fail()).
  virtual Output weight(int i, const std::function<Tensor(const Tensor&)>& transform, bool trainable = true) = 0;
  // weight() when input i is constant, else `runtime` applied to the input
  // (the same transform built from graph ops: weights fed at run time).
  Output weight_or(int i, const std::function<Tensor(const Tensor&)>& transform,
                   const std::function<Output(Output)>& runtime, bool trainable = true);
  // A constant built here (e.g. a scale factor).
  virtual Output constant_output(const Tensor& value, const std::string& name) = 0;

  // Static logical shape of output i from shape inference (-1 unknown dims;
  // an empty optional when inference gave no shape).
  virtual std::optional<Shape> output_shape(int i) const = 0;
  // Sets output i; `nhwc` says the tensor is the NHWC form of a 4-D value.
  virtual void set_output(int i, Output value, bool nhwc = false) = 0;
  // Sets output i to a value known at import (ONNX order), e.g. a Shape of a
  // static tensor: later nodes fold through it.
  virtual void set_constant(int i, const Tensor& value) = 0;
  // A 1-D int64 input computed from shapes with some elements known only at
  // run time (Shape of a tensor with a dynamic batch, and what Gather,
  // Unsqueeze, Concat, ... make of it); its constant form when fully known.
  virtual std::optional<SymShape> symbolic(int i) const = 0;
  virtual void set_symbolic(int i, SymShape value) = 0;
  // Where a run-time dim lives: the hub tensor of the ONNX value it is a dim
  // of (as stored, NHWC or not) and the dim's index there.
  virtual std::pair<Output, int> dim_source(const SymDim& d) = 0;

  // Control flow: the graphs of attributes `attrs` (If's two branches,
  // Loop's and Scan's bodies) as hub subgraphs. Subgraph k takes first the
  // arguments `frames[k]` declares (specs in ONNX order), then one argument
  // per value it reads from the graphs around it, the same list for all of
  // them: `captured`, the tensors the control-flow node passes (constants are
  // copied in instead). Its ONNX inputs are those arguments, or what
  // frames[k].inputs builds from them in the subgraph (Scan's element of each
  // sequence); its results its ONNX outputs, or what frames[k].results builds
  // from them (in ONNX order, native layout).
  struct SubgraphFrame {
    std::vector<TensorSpec> arguments;
    std::function<std::vector<Output>(const Scope&, const std::vector<Output>& arguments)> inputs;
    std::function<std::vector<Output>(const Scope&, const std::vector<Output>& outputs)> results;
  };
  struct Subgraphs {
    std::vector<SubgraphPtr> graphs;
    std::vector<Output> captured;
  };
  virtual Subgraphs subgraphs(const std::vector<std::string>& attrs, const std::vector<SubgraphFrame>& frames) = 0;

  // Attributes (the mapper's declared ones; others are refused before it runs).
  bool has_attr(const std::string& name) const;
  int64_t attr_int(const std::string& name, int64_t dflt) const;
  float attr_float(const std::string& name, float dflt) const;
  std::string attr_string(const std::string& name, const std::string& dflt) const;
  std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> dflt = {}) const;
  std::vector<float> attr_floats(const std::string& name, std::vector<float> dflt = {}) const;
  std::vector<std::string> attr_strings(const std::string& name) const;  // empty when absent
  const ::onnx::TensorProto* attr_tensor(const std::string& name) const;

  // "ONNX model 'path': node 'name' (Op): message" as InvalidArgument.
  [[noreturn]] void fail(const std::string& message) const;
  // fail() naming an attribute and its value.
  [[noreturn]] void fail_attr(const std::string& attr, const std::string& value, const std::string& why) const;

  // Helpers shared by mappers.
  // fail() unless a constant of `shape` folded at import holds at most
  // kMaxFoldedElements (a few bytes of model must not make gigabytes).
  void check_folded_size(const Shape& shape, const std::string& what) const;
  // A constant input as int64 values (int32/int64 tensors); fail() otherwise.
  std::vector<int64_t> constant_ints(int i, const std::string& what) const;
  // Rank of input i (fail() when unknown).
  int rank(int i) const;

 protected:
  NodeContext(const ::onnx::NodeProto& node, Scope scope, std::string model_path)
      : node_(node), scope_(std::move(scope)), model_path_(std::move(model_path)) {}
  const ::onnx::AttributeProto* attr(const std::string& name) const;

 private:
  const ::onnx::NodeProto& node_;
  Scope scope_;
  std::string model_path_;
};

struct OpMapper {
  void (*map)(NodeContext&);
  std::set<std::string> attributes;  // the attributes it understands
  bool foldable = true;              // may be evaluated at import when its inputs are constant
};

// The op mappers by ONNX op type (opset 17 semantics): the tensor and
// element-wise family (import_tensor_ops.cc), the neural-network family
// (import_nn_ops.cc) and control flow (import_control_flow.cc).
const std::map<std::string, OpMapper>& op_mappers();
void add_tensor_mappers(std::map<std::string, OpMapper>& mappers);
void add_nn_mappers(std::map<std::string, OpMapper>& mappers);
void add_control_flow_mappers(std::map<std::string, OpMapper>& mappers);

// Runs one hub op on constant tensors with the reference kernels (weight
// transforms at import: transposes, reshapes, arithmetic).
Tensor evaluate(const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs = {});
// The axis of transform(t) that axis `axis` of a tensor of shape `shape`
// became, found by transforming a tensor holding each element's index along
// it (exact in float for any real size); nullopt where the transform does not
// keep that axis whole (a weight layout change moving a quantization axis).
std::optional<int> transformed_axis(const Shape& shape, int axis,
                                    const std::function<Tensor(const Tensor&)>& transform);
// A logical ONNX tensor of rank <= 4 broadcast-aligned to rank 4 (leading
// 1s) and laid out NHWC, so it broadcasts against NHWC values.
Tensor to_nhwc_operand(const Tensor& t);

// Position of ONNX (NCHW) axis `axis` of a 4-D tensor stored NHWC.
int64_t nhwc_axis(int64_t nchw_axis);

// The most elements of a constant the importer computes itself (Range,
// ConstantOfShape, EyeLike, Trilu's mask, a fold that outgrows its inputs):
// 2^24 (hub/interop/fold.h).
using interop::kMaxFoldedElements;
// Normalises a possibly negative axis for rank r; fails via ctx when out of range.
int64_t normalize_axis(const NodeContext& ctx, int64_t axis, int rank, const std::string& attr);

}  // namespace hub::onnx_interop
