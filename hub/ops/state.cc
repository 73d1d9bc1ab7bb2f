// Placeholder, Const, Variable: graph inputs with no gradient of their own
// (autodiff stops at them). AssignMovingAverage: v -= (v - x)*(1-decay), TF's
// form, exact where v == x.
#include "hub/ops/state.h"

#include "hub/ops/registry.h"

namespace hub {

HUB_REGISTER_OP(Placeholder)
    .inputs(0)
    .attr("dtype", AttrType::kDType)
    .attr("shape", AttrType::kShape)
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      return {{c.attrs().get_dtype("dtype"), c.attrs().get_shape("shape")}};
    })
    .doc("A tensor fed at run time.")
    .no_gradient("a graph input: gradients stop here");

HUB_REGISTER_OP(Const)
    .inputs(0)
    .attr("value", AttrType::kTensor)
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      const Tensor& v = c.attrs().get_tensor("value");
      if (!v.defined()) c.fail("value is undefined");
      return {{v.dtype(), v.shape()}};
    })
    .doc("A constant tensor stored in the graph.")
    .no_gradient("a constant");

HUB_REGISTER_OP(Variable)
    .inputs(0)
    .attr("dtype", AttrType::kDType, DType::kFloat32)
    .attr("shape", AttrType::kShape)
    .attr("trainable", AttrType::kBool, true)
    .attr("initializer", AttrType::kString, std::string("zeros"))
    .attr("init_params", AttrType::kFloats, std::vector<double>{})
    .attr("init_mode", AttrType::kString, std::string("fan_in"))
    .attr("init_distribution", AttrType::kString, std::string("truncated_normal"))
    .attr("seed", AttrType::kInt, int64_t{0})
    .stateful()
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      const Shape& s = c.attrs().get_shape("shape");
      if (!s.is_fully_defined()) c.fail("variable shape " + s.to_string() + " must be fully defined");
      return {{c.attrs().get_dtype("dtype"), s}};
    })
    .doc("A named, persistent tensor held in the VariableStore.")
    .no_gradient("a graph input: gradients stop here");

HUB_REGISTER_OP(AssignMovingAverage)
    .inputs(2)
    .attr("decay", AttrType::kFloat)
    .stateful()
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      c.expect_dtype(0, DType::kFloat32);
      c.expect_dtype(1, DType::kFloat32);
      if (!c.shape(0).compatible_with(c.shape(1)))
        c.fail("value " + c.input(1).to_string() + " does not match variable " + c.input(0).to_string());
      return {c.input(0)};
    })
    .doc("variable -= (variable - value)*(1-decay) (TF's assign_moving_average); input 0 must be a Variable.")
    .no_gradient("a state update run for its side effect");

namespace ops {

Output placeholder(const Scope& s, DType dtype, const Shape& shape, const std::string& name) {
  return s.op("Placeholder", {}, Attrs().set("dtype", dtype).set("shape", shape), name);
}

Output constant(const Scope& s, const Tensor& value, const std::string& name) {
  return s.op("Const", {}, Attrs().set("value", value), name);
}

Output scalar(const Scope& s, float value, const std::string& name) {
  return constant(s, Tensor::scalar<float>(value), name);
}

Output variable(const Scope& s, const std::string& name, const Shape& shape, const VariableOptions& o) {
  Attrs a;
  a.set("dtype", o.dtype)
      .set("shape", shape)
      .set("trainable", o.trainable)
      .set("initializer", o.initializer)
      .set("init_params", o.init_params)
      .set("init_mode", o.init_mode)
      .set("init_distribution", o.init_distribution)
      .set("seed", o.seed);
  std::string full = s.prefix().empty() ? name : s.prefix() + "/" + name;
  return s.graph().add_node("Variable", full, {}, a);
}

Output assign_moving_average(const Scope& s, Output variable, Output value, float decay, const std::string& name) {
  if (s.graph().node(variable).op != "Variable")
    throw_error(Code::kInvalidArgument,
                "assign_moving_average: '" + s.graph().node(variable).name + "' is not a Variable");
  Output out = s.op("AssignMovingAverage", {variable, value}, Attrs().set("decay", decay), name);
  s.graph().add_to_collection(kUpdateOps, s.graph().node(out).name);
  return out;
}

}  // namespace ops
}  // namespace hub
