// The op registry: one entry per op name, registered by one statement in the
// op's own file (hub/ops/<op>.cc):
//
//   HUB_REGISTER_OP(Relu)
//       .inputs(1).outputs(1)
//       .shape_fn(same_shape_as_input0)
//       .grad(relu_grad);
//
// and kernels per backend, named by the backend (hub/backend), in
// hub/ops/cpu/<op>.cc (reference), hub/ops/onednn/<op>.cc or
// hub/ops/cuda/<op>.cu:
//
//   HUB_REGISTER_KERNEL(Relu, reference, relu_kernel);
//   HUB_REGISTER_KERNEL(Relu, onednn, guarded<relu>, supports_relu);
//
// Building a node validates (attributes against the schema, input dtypes and
// shapes through the shape function), so kernels only compute. Which kernel
// runs a node is decided in one place: hub::place() in hub/backend/backend.h.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hub/ops/attr.h"
#include "hub/ops/node.h"
#include "hub/tensor/allocator.h"
#include "hub/tensor/tensor.h"

namespace hub {

class Scope;
class SubgraphRunner;
class SubgraphDifferentiator;
class VariableStore;

// ---- shape inference --------------------------------------------------------
class InferContext {
 public:
  InferContext(const std::string& node_name, const std::string& op, const std::vector<TensorSpec>& inputs,
               const Attrs& attrs)
      : node_name_(node_name), op_(op), inputs_(inputs), attrs_(attrs) {}
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  const TensorSpec& input(int i) const { return inputs_[i]; }
  const Shape& shape(int i) const { return inputs_[i].shape; }
  DType dtype(int i) const { return inputs_[i].dtype; }
  const Attrs& attrs() const { return attrs_; }
  // Throws InvalidArgument "node 'NAME' (OP): message".
  [[noreturn]] void fail(const std::string& message) const;
  void expect_rank(int i, int rank) const;
  void expect_dtype(int i, DType dtype) const;
  // All inputs share input 0's dtype.
  void expect_same_dtypes() const;

 private:
  const std::string& node_name_;
  const std::string& op_;
  const std::vector<TensorSpec>& inputs_;
  const Attrs& attrs_;
};
using ShapeFn = std::function<std::vector<TensorSpec>(const InferContext&)>;

// ---- kernels -------------------------------------------------------------------
// Filled by the executor for one node execution. Outputs are allocated lazily,
// with the shapes inferred for this run, from the allocator of the device of
// the backend that runs the node (inputs are already on that device).
class KernelContext {
 public:
  KernelContext(const Node& node, std::vector<const Tensor*> inputs, const std::vector<TensorSpec>& output_specs,
                Allocator& alloc, VariableStore* variables, uint64_t seed)
      : node_(node),
        inputs_(std::move(inputs)),
        output_specs_(output_specs),
        outputs_(output_specs.size()),
        alloc_(alloc),
        variables_(variables),
        seed_(seed) {}
  KernelContext(const KernelContext&) = delete;
  KernelContext& operator=(const KernelContext&) = delete;
  const Node& node() const { return node_; }
  const Attrs& attrs() const;
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  const Tensor& input(int i) const { return *inputs_[i]; }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  const TensorSpec& output_spec(int i) const { return output_specs_[i]; }
  // Allocates output i (shape from shape inference) on first use.
  Tensor& output(int i);
  // Allocates output i with `shape`, which must agree with the inferred
  // shape's known dims: for ops whose output shape depends on their input
  // values (OpDef::value_dependent_shape), which infer some dims unknown.
  Tensor& output(int i, const Shape& shape);
  // Makes output i alias an existing tensor (must match the inferred spec).
  void set_output(int i, Tensor t);
  Tensor temp(DType dtype, const Shape& shape) { return alloc_.allocate_tensor(dtype, shape); }
  // Where outputs and temporaries come from (for kernels composed of others).
  Allocator& allocator() const { return alloc_; }
  // Per-node state a kernel may keep between runs (e.g. its resolved oneDNN
  // primitive and prepared weights). A Session keeps one slot per node and
  // clears it whenever the node's input shapes change, so a kernel may assume
  // the state it finds was made for the same node, attributes and input specs.
  // Without a session slot it is local to this context (a fresh state per call).
  std::shared_ptr<void>& state() { return *state_; }
  void set_state_slot(std::shared_ptr<void>* slot) { state_ = slot ? slot : &local_state_; }
  // Variable storage; throws FailedPrecondition if the run has none.
  VariableStore& variables() const;
  bool has_variables() const { return variables_ != nullptr; }
  // Runs a subgraph (control flow: hub/ops/subgraph.h); throws
  // FailedPrecondition when the caller (a Session does) set no runner.
  SubgraphRunner& subgraphs() const;
  void set_subgraph_runner(SubgraphRunner* runner) { subgraphs_ = runner; }
  // Deterministic per (seed, node, run): the seed random kernels start from.
  uint64_t seed() const { return seed_; }
  std::vector<Tensor>& outputs() { return outputs_; }

 private:
  const Node& node_;
  std::vector<const Tensor*> inputs_;
  const std::vector<TensorSpec>& output_specs_;
  std::vector<Tensor> outputs_;
  Allocator& alloc_;
  VariableStore* variables_;
  SubgraphRunner* subgraphs_ = nullptr;
  uint64_t seed_;
  std::shared_ptr<void> local_state_;
  std::shared_ptr<void>* state_ = &local_state_;
};
using KernelFn = void (*)(KernelContext&);
// Whether a backend's kernel can run this node (dtype, attributes, shapes).
using SupportsFn = bool (*)(const Node&, const std::vector<TensorSpec>& inputs);

// ---- gradients -----------------------------------------------------------------
struct GradContext {
  const Scope& scope;                  // where gradient nodes go
  const Node& node;                    // the forward node
  const std::vector<Output>& inputs;   // its inputs
  const std::vector<Output>& outputs;  // its outputs
  const std::vector<Output>& grads;    // d loss / d output_i (invalid if none flows)
  // Differentiates the node's subgraphs (ops holding them: If).
  const SubgraphDifferentiator* subgraphs = nullptr;
};
// Returns d loss / d input_i for each input (an invalid Output for none).
using GradFn = std::function<std::vector<Output>(const GradContext&)>;

// ---- op definitions ----------------------------------------------------------
struct AttrSpec {
  std::string name;
  AttrType type;
  std::optional<AttrValue> default_value;  // required when empty
};

struct OpDef {
  std::string name;
  int min_inputs = 0;
  int max_inputs = 0;   // -1: variadic
  int num_outputs = 1;  // -1: as many as the shape function returns (set by attributes, e.g. Split)
  std::vector<AttrSpec> attrs;
  ShapeFn shape_fn;
  GradFn grad;              // empty: not differentiable, and then:
  std::string no_gradient;  // why the op has no gradient (every op states one or the other)
  bool stateful = false;    // reads/writes variables or draws random numbers
  // Some output dims follow from the input values (NonZero's count), so shape
  // inference leaves them unknown and the kernel sizes the output
  // (KernelContext::output(i, shape)). Runs with such a node are not laid
  // out in a memory arena: equal feed shapes no longer mean equal shapes.
  bool value_dependent_shape = false;
  // (input, output) pairs: the session's memory plan may place the output in
  // the input's buffer when this node is the input's last use; the kernel
  // must then be correct with both aliasing (reading the input before it
  // writes over it).
  std::vector<std::pair<int, int>> in_place;
  std::string doc;  // one line for docs/ops.md and `hub ops`
};

class OpDefBuilder {
 public:
  explicit OpDefBuilder(std::string name) { def_.name = std::move(name); }
  OpDefBuilder& inputs(int n) {
    def_.min_inputs = def_.max_inputs = n;
    return *this;
  }
  OpDefBuilder& inputs(int min, int max) {
    def_.min_inputs = min;
    def_.max_inputs = max;
    return *this;
  }
  OpDefBuilder& outputs(int n) {
    def_.num_outputs = n;
    return *this;
  }
  // The number of outputs follows from the node's attributes (the shape
  // function returns one spec per output, at least one).
  OpDefBuilder& variadic_outputs() {
    def_.num_outputs = -1;
    return *this;
  }
  OpDefBuilder& attr(std::string name, AttrType type) {
    def_.attrs.push_back({std::move(name), type, std::nullopt});
    return *this;
  }
  OpDefBuilder& attr(std::string name, AttrType type, AttrValue default_value) {
    def_.attrs.push_back({std::move(name), type, std::move(default_value)});
    return *this;
  }
  OpDefBuilder& shape_fn(ShapeFn fn) {
    def_.shape_fn = std::move(fn);
    return *this;
  }
  OpDefBuilder& grad(GradFn fn) {
    def_.grad = std::move(fn);
    return *this;
  }
  // Declares the op not differentiable, saying why (shown by `hub ops`).
  OpDefBuilder& no_gradient(std::string reason) {
    def_.no_gradient = std::move(reason);
    return *this;
  }
  OpDefBuilder& stateful() {
    def_.stateful = true;
    return *this;
  }
  OpDefBuilder& value_dependent_shape() {
    def_.value_dependent_shape = true;
    return *this;
  }
  OpDefBuilder& in_place(int input, int output) {
    def_.in_place.emplace_back(input, output);
    return *this;
  }
  OpDefBuilder& doc(std::string text) {
    def_.doc = std::move(text);
    return *this;
  }
  const OpDef& def() const { return def_; }

 private:
  OpDef def_;
};

struct KernelDef {
  KernelFn fn = nullptr;
  SupportsFn supports = nullptr;  // null: supports everything the op accepts
};

class OpRegistry {
 public:
  static OpRegistry& global();
  void add(const OpDef& def);
  // Registers `op`'s kernel for the backend named `backend` (hub/backend).
  void add_kernel(const std::string& op, const std::string& backend, KernelDef kernel);
  // Throws NotFound "unknown op 'NAME'".
  const OpDef& find(const std::string& op) const;
  bool contains(const std::string& op) const { return ops_.count(op) != 0; }
  // The kernel `backend` registered for `op`, or null.
  const KernelDef* kernel(const std::string& op, const std::string& backend) const;
  std::vector<std::string> op_names() const;

  // The activation layouts a backend's convolution kernels run well, its
  // preferred one first: 0 for NHWC, else the channel block b of oneDNN's
  // nChw{b}c (hub/ops/fused.h). Registered by the backend's kernel files;
  // {0} for a backend that did not. The inference optimiser lays out edges
  // in the first unless told another (OptimizeOptions::block); inference
  // modules time each per set of input shapes and keep the fastest.
  using ActivationBlocksFn = std::vector<int64_t> (*)();
  void set_activation_blocks(const std::string& backend, ActivationBlocksFn fn);
  std::vector<int64_t> activation_blocks(const std::string& backend) const;

 private:
  std::map<std::string, OpDef> ops_;
  std::map<std::string, ActivationBlocksFn> activation_blocks_;
  std::map<std::pair<std::string, std::string>, KernelDef> kernels_;
};

// Validates attrs against the op's schema and fills defaults; throws
// InvalidArgument naming the node, the op and the attribute.
Attrs complete_attrs(const OpDef& def, const std::string& node_name, const Attrs& attrs);

struct OpRegistrar {
  OpRegistrar(const OpDefBuilder& builder) { OpRegistry::global().add(builder.def()); }
};
struct KernelRegistrar {
  KernelRegistrar(const char* op, const char* backend, KernelFn fn, SupportsFn supports = nullptr) {
    OpRegistry::global().add_kernel(op, backend, {fn, supports});
  }
};

// Shape functions shared by many ops.
std::vector<TensorSpec> same_as_input0(const InferContext& c);

}  // namespace hub

#define HUB_CONCAT_INNER(a, b) a##b
#define HUB_CONCAT(a, b) HUB_CONCAT_INNER(a, b)
#define HUB_REGISTER_OP(name) \
  static ::hub::OpRegistrar HUB_CONCAT(hub_op_registrar_, __COUNTER__) = ::hub::OpDefBuilder(#name)
#define HUB_REGISTER_KERNEL(name, backend, ...) \
  static ::hub::KernelRegistrar HUB_CONCAT(hub_kernel_registrar_, __COUNTER__)(#name, #backend, __VA_ARGS__)
