#include "hub/ops/registry.h"

#include "hub/ops/variables.h"

namespace hub {

void InferContext::fail(const std::string& message) const {
  throw_error(Code::kInvalidArgument, "node '" + node_name_ + "' (" + op_ + "): " + message);
}

void InferContext::expect_rank(int i, int rank) const {
  if (shape(i).rank() != rank)
    fail("input " + std::to_string(i) + " must have rank " + std::to_string(rank) + ", got " + input(i).to_string());
}

void InferContext::expect_dtype(int i, DType dtype) const {
  if (this->dtype(i) != dtype)
    fail("input " + std::to_string(i) + " must be " + std::string(dtype_name(dtype)) + ", got " + input(i).to_string());
}

void InferContext::expect_same_dtypes() const {
  for (int i = 1; i < num_inputs(); ++i)
    if (dtype(i) != dtype(0))
      fail("input " + std::to_string(i) + " is " + input(i).to_string() + " but input 0 is " + input(0).to_string());
}

const Attrs& KernelContext::attrs() const { return node_.attrs; }

Tensor& KernelContext::output(int i) {
  Tensor& t = outputs_.at(i);
  if (!t.defined()) t = alloc_.allocate_tensor(output_specs_[i].dtype, output_specs_[i].shape);
  return t;
}

Tensor& KernelContext::output(int i, const Shape& shape) {
  const TensorSpec& spec = output_specs_.at(i);
  HUB_CHECK(shape.is_fully_defined() && shape.compatible_with(spec.shape),
            "node " + node_.name + " output " + std::to_string(i) + ": " + shape.to_string() + " vs inferred " +
                spec.to_string());
  Tensor& t = outputs_[i];
  HUB_CHECK(!t.defined(), "node " + node_.name + " output " + std::to_string(i) + " allocated twice");
  t = alloc_.allocate_tensor(spec.dtype, shape);
  return t;
}

void KernelContext::set_output(int i, Tensor t) {
  const TensorSpec& spec = output_specs_.at(i);
  HUB_CHECK(t.dtype() == spec.dtype && t.shape().compatible_with(spec.shape) && t.shape().is_fully_defined(),
            "node " + node_.name + " output " + std::to_string(i) + ": " + t.spec_string() + " vs inferred " +
                spec.to_string());
  outputs_[i] = std::move(t);
}

VariableStore& KernelContext::variables() const {
  if (!variables_)
    throw_error(Code::kFailedPrecondition, "node '" + node_.name + "' needs variables but the run has none");
  return *variables_;
}

SubgraphRunner& KernelContext::subgraphs() const {
  if (!subgraphs_)
    throw_error(Code::kFailedPrecondition,
                "node '" + node_.name + "' (" + node_.op + ") runs a subgraph, which " + "needs a session");
  return *subgraphs_;
}

OpRegistry& OpRegistry::global() {
  static OpRegistry* registry = new OpRegistry;
  return *registry;
}

void OpRegistry::add(const OpDef& def) {
  HUB_CHECK(!ops_.count(def.name), "op " + def.name + " registered twice");
  HUB_CHECK(def.shape_fn != nullptr, "op " + def.name + " has no shape function");
  HUB_CHECK(static_cast<bool>(def.grad) != !def.no_gradient.empty(),
            "op " + def.name + " must declare exactly one of .grad(fn) and .no_gradient(reason)");
  ops_[def.name] = def;
}

void OpRegistry::add_kernel(const std::string& op, const std::string& backend, KernelDef kernel) {
  auto key = std::make_pair(op, backend);
  HUB_CHECK(!kernels_.count(key), "kernel " + op + "/" + backend + " registered twice");
  kernels_[key] = kernel;
}

const OpDef& OpRegistry::find(const std::string& op) const {
  auto it = ops_.find(op);
  if (it == ops_.end()) throw_error(Code::kNotFound, "unknown op '" + op + "'");
  return it->second;
}

void OpRegistry::set_activation_blocks(const std::string& backend, ActivationBlocksFn fn) {
  activation_blocks_[backend] = fn;
}

std::vector<int64_t> OpRegistry::activation_blocks(const std::string& backend) const {
  auto it = activation_blocks_.find(backend);
  return it == activation_blocks_.end() ? std::vector<int64_t>{0} : it->second();
}

const KernelDef* OpRegistry::kernel(const std::string& op, const std::string& backend) const {
  auto it = kernels_.find({op, backend});
  return it == kernels_.end() ? nullptr : &it->second;
}

std::vector<std::string> OpRegistry::op_names() const {
  std::vector<std::string> names;
  for (auto& [name, def] : ops_) names.push_back(name);
  return names;
}

Attrs complete_attrs(const OpDef& def, const std::string& node_name, const Attrs& attrs) {
  auto where = [&] { return "node '" + node_name + "' (" + def.name + ")"; };  // for errors only
  for (auto& [name, value] : attrs.items()) {
    const AttrSpec* spec = nullptr;
    for (const AttrSpec& s : def.attrs)
      if (s.name == name) spec = &s;
    if (!spec) throw_error(Code::kInvalidArgument, where() + ": unknown attribute '" + name + "'");
    if (attr_type(value) != spec->type)
      throw_error(Code::kInvalidArgument, where() + ": attribute '" + name + "' must be " +
                                              std::string(attr_type_name(spec->type)) + ", got " +
                                              std::string(attr_type_name(attr_type(value))));
  }
  Attrs out = attrs;
  for (const AttrSpec& s : def.attrs) {
    if (out.has(s.name)) continue;
    if (!s.default_value)
      throw_error(Code::kInvalidArgument, where() + ": missing required attribute '" + s.name + "'");
    out.set(s.name, *s.default_value);
  }
  return out;
}

std::vector<TensorSpec> same_as_input0(const InferContext& c) { return {c.input(0)}; }

}  // namespace hub
