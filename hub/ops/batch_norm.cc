// FusedBatchNorm, FusedBatchNormGrad and slim's batch_norm (formulas in
// hub/ops/batch_norm.h).
#include "hub/ops/batch_norm.h"

#include "hub/ops/registry.h"
#include "hub/ops/state.h"

namespace hub {
namespace {

// Checks x (rank 2 or 4, float32) and the per-channel inputs (rank 1,
// float32, C elements), given by index and name. Returns C (maybe unknown).
int64_t check_channels(const InferContext& c, int x, std::initializer_list<std::pair<int, const char*>> per_channel) {
  c.expect_dtype(x, DType::kFloat32);
  int rank = c.shape(x).rank();
  if (rank != 2 && rank != 4) c.fail("x must be [N,H,W,C] or [N,C], got " + c.input(x).to_string());
  int64_t channels = c.shape(x).dim(-1);
  for (auto [i, name] : per_channel) {
    c.expect_dtype(i, DType::kFloat32);
    c.expect_rank(i, 1);
    int64_t d = c.shape(i)[0];
    if (channels != kUnknownDim && d != kUnknownDim && d != channels)
      c.fail(std::string(name) + " " + c.input(i).to_string() + " does not match the " + std::to_string(channels) +
             " channels of x " + c.input(x).to_string());
    if (channels == kUnknownDim) channels = d;
  }
  return channels;
}

std::vector<TensorSpec> fused_batch_norm_shape_fn(const InferContext& c) {
  int64_t channels = check_channels(c, 0, {{1, "scale"}, {2, "offset"}, {3, "mean"}, {4, "variance"}});
  TensorSpec stat{DType::kFloat32, Shape{channels}};
  return {c.input(0), stat, stat, stat};
}

std::vector<TensorSpec> fused_batch_norm_grad_shape_fn(const InferContext& c) {
  c.expect_dtype(0, DType::kFloat32);
  if (!c.shape(0).compatible_with(c.shape(1)))
    c.fail("dy " + c.input(0).to_string() + " does not match x " + c.input(1).to_string());
  int64_t channels = check_channels(c, 1, {{2, "scale"}, {3, "mean"}, {4, "variance"}});
  TensorSpec stat{DType::kFloat32, Shape{channels}};
  return {c.input(1), stat, stat};
}

void check_activation(const InferContext& c) {
  const std::string& act = c.attrs().get_string("activation");
  if (act != "Relu" && act != "Relu6") c.fail("activation must be Relu or Relu6, got '" + act + "'");
}

std::vector<TensorSpec> fused_batch_norm_activation_shape_fn(const InferContext& c) {
  check_activation(c);
  return fused_batch_norm_shape_fn(c);
}

// (dz, features, x, scale, mean, variance): FusedBatchNormGrad's checks on
// (dz, x, scale, mean, variance), and features like x.
std::vector<TensorSpec> fused_batch_norm_activation_grad_shape_fn(const InferContext& c) {
  check_activation(c);
  c.expect_dtype(0, DType::kFloat32);
  c.expect_dtype(1, DType::kFloat32);
  for (int i : {0, 1})
    if (!c.shape(i).compatible_with(c.shape(2)))
      c.fail(std::string(i == 0 ? "dz " : "features ") + c.input(i).to_string() + " does not match x " +
             c.input(2).to_string());
  int64_t channels = check_channels(c, 2, {{3, "scale"}, {4, "mean"}, {5, "variance"}});
  TensorSpec stat{DType::kFloat32, Shape{channels}};
  return {c.input(2), stat, stat};
}

std::vector<Output> fused_batch_norm_grad(const GradContext& c) {
  bool training = c.node.attrs.get_bool("is_training");
  Output mean = training ? c.outputs[1] : c.inputs[3];
  Output variance = training ? c.outputs[2] : c.inputs[4];
  Attrs a;
  a.set("epsilon", c.node.attrs.get("epsilon")).set("is_training", training);
  std::vector<Output> g = c.scope.op_n("FusedBatchNormGrad", {c.grads[0], c.inputs[0], c.inputs[1], mean, variance}, a);
  return {g[0], g[1], g[2], Output{}, Output{}};
}

}  // namespace

HUB_REGISTER_OP(FusedBatchNorm)
    .inputs(5)
    .outputs(4)
    .attr("epsilon", AttrType::kFloat, 0.001)
    .attr("is_training", AttrType::kBool, true)
    .shape_fn(fused_batch_norm_shape_fn)
    .grad(fused_batch_norm_grad)
    .doc("Batch normalization over all but the last dim; batch statistics when training.");

HUB_REGISTER_OP(FusedBatchNormGrad)
    .inputs(5)
    .outputs(3)
    .attr("epsilon", AttrType::kFloat, 0.001)
    .attr("is_training", AttrType::kBool, true)
    .shape_fn(fused_batch_norm_grad_shape_fn)
    .doc("Gradient of FusedBatchNorm: (dy, x, scale, mean, variance) -> (dx, dscale, doffset).")
    .no_gradient("a gradient op; second-order gradients are not supported");

HUB_REGISTER_OP(_FusedBatchNormActivation)
    .inputs(5)
    .outputs(4)
    .attr("epsilon", AttrType::kFloat, 0.001)
    .attr("is_training", AttrType::kBool, true)
    .attr("activation", AttrType::kString, std::string("Relu6"))
    .shape_fn(fused_batch_norm_activation_shape_fn)
    .doc("FusedBatchNorm then Relu / Relu6 on y, in one pass (made by a Session; see batch_norm.h).")
    .no_gradient("made by a Session from an already differentiated graph");

HUB_REGISTER_OP(_FusedBatchNormActivationGrad)
    .inputs(6)
    .outputs(3)
    .attr("epsilon", AttrType::kFloat, 0.001)
    .attr("is_training", AttrType::kBool, true)
    .attr("activation", AttrType::kString, std::string("Relu6"))
    .shape_fn(fused_batch_norm_activation_grad_shape_fn)
    .doc("(dz, features, x, scale, mean, variance) -> FusedBatchNormGrad of the activation's gradient.")
    .no_gradient("a gradient op; second-order gradients are not supported");

namespace ops {

std::vector<Output> fused_batch_norm(const Scope& s, Output x, Output scale, Output offset, Output mean,
                                     Output variance, float epsilon, bool is_training, const std::string& name) {
  return s.op_n("FusedBatchNorm", {x, scale, offset, mean, variance},
                Attrs().set("epsilon", epsilon).set("is_training", is_training), name);
}

Output batch_norm(const Scope& outer, Output x, const BatchNormOptions& o) {
  Scope s = outer.sub("BatchNorm");
  const Shape& shape = outer.graph().spec(x).shape;
  if (shape.rank() != 2 && shape.rank() != 4)
    throw_error(Code::kInvalidArgument, "batch_norm under '" + s.prefix() + "': input '" +
                                            outer.graph().tensor_name(x) + "' must be rank 2 or 4, got " +
                                            shape.to_string());
  int64_t channels = shape.dim(-1);
  if (channels == kUnknownDim)
    throw_error(Code::kInvalidArgument, "batch_norm under '" + s.prefix() + "': input '" +
                                            outer.graph().tensor_name(x) + "' " + shape.to_string() +
                                            " has an unknown channel dimension");
  Shape c{channels};
  auto var = [&](const std::string& name, const char* init, bool trainable) {
    VariableOptions v;
    v.initializer = init;
    v.trainable = trainable;
    return variable(s, name, c, v);
  };
  Output beta = o.center ? var("beta", "zeros", true) : Output{};
  Output gamma = o.scale ? var("gamma", "ones", true) : Output{};
  Output moving_mean = var("moving_mean", "zeros", false);
  Output moving_variance = var("moving_variance", "ones", false);
  if (!beta.valid()) beta = constant(s, Tensor::zeros(DType::kFloat32, c), "beta_default");
  if (!gamma.valid()) {
    Tensor ones(DType::kFloat32, c);
    ones.fill(1.0);
    gamma = constant(s, ones, "gamma_default");
  }
  std::vector<Output> bn = fused_batch_norm(s, x, gamma, beta, moving_mean, moving_variance, o.epsilon, o.is_training);
  if (o.is_training) {
    assign_moving_average(s, moving_mean, bn[1], o.decay, "AssignMovingAvg");
    assign_moving_average(s, moving_variance, bn[3], o.decay, "AssignMovingAvg_1");
  }
  return bn[0];
}

}  // namespace ops
}  // namespace hub
