// The optimizer update ops (formulas in hub/ops/optimizer.h).
#include "hub/ops/optimizer.h"

#include "hub/core/error.h"
#include "hub/ops/registry.h"

namespace hub {
namespace {

struct UpdateOp {
  const char* name;
  int slots;
};
constexpr UpdateOp kUpdateOps[] = {
    {"ApplyGradientDescent", 0}, {"ApplyMomentum", 1}, {"ApplyRMSProp", 2}, {"ApplyAdam", 2},
    {"ApplyAdagrad", 1},         {"ApplyAdadelta", 2}, {"ApplyFtrl", 2}};

std::vector<TensorSpec> update_shape(const InferContext& c) {
  for (int i = 0; i < c.num_inputs(); ++i) {
    c.expect_dtype(i, DType::kFloat32);
    if (!c.shape(i).compatible_with(c.shape(0)))
      c.fail("input " + std::to_string(i) + " is " + c.input(i).to_string() + " but the variable is " +
             c.input(0).to_string());
  }
  return {c.input(0)};
}

// The registration every update op shares: (w, g, slots...) -> w.
OpDefBuilder update_op(const std::string& name, const std::string& doc) {
  return OpDefBuilder(name)
      .inputs(2 + ops::update_slots(name))
      .attr("lr", AttrType::kFloat)
      .stateful()
      .shape_fn(update_shape)
      .doc(doc)
      .no_gradient("an optimizer's state update, run outside the graph");
}

}  // namespace

namespace ops {

int update_slots(const std::string& op) {
  for (const UpdateOp& u : kUpdateOps)
    if (op == u.name) return u.slots;
  throw_error(Code::kNotFound, "unknown optimizer update op '" + op + "'");
}

}  // namespace ops

static const OpRegistrar kApplyGradientDescent = update_op("ApplyGradientDescent", "w -= lr*g.");
static const OpRegistrar kApplyMomentum =
    update_op("ApplyMomentum", "Momentum (slot a): a = momentum*a + g; w -= lr*a (Nesterov: lr*g + lr*momentum*a).")
        .attr("momentum", AttrType::kFloat)
        .attr("use_nesterov", AttrType::kBool, false);
static const OpRegistrar kApplyRMSProp =
    update_op("ApplyRMSProp", "RMSProp (slots ms, mom), as tf.train.RMSPropOptimizer.")
        .attr("decay", AttrType::kFloat)
        .attr("momentum", AttrType::kFloat)
        .attr("epsilon", AttrType::kFloat);
static const OpRegistrar kApplyAdam =
    update_op("ApplyAdam", "Adam (slots m, v) with the bias-corrected rate lr = lr_t.")
        .attr("beta1", AttrType::kFloat)
        .attr("beta2", AttrType::kFloat)
        .attr("epsilon", AttrType::kFloat);
static const OpRegistrar kApplyAdagrad =
    update_op("ApplyAdagrad", "Adagrad (slot acc): acc += g^2; w -= lr*g/sqrt(acc).");
static const OpRegistrar kApplyAdadelta = update_op("ApplyAdadelta", "Adadelta (slots acc, acc_u), as TF.")
                                              .attr("rho", AttrType::kFloat)
                                              .attr("epsilon", AttrType::kFloat);
static const OpRegistrar kApplyFtrl = update_op("ApplyFtrl", "FTRL-proximal (slots n, z), as tf.train.FtrlOptimizer.")
                                          .attr("lr_power", AttrType::kFloat)
                                          .attr("l1", AttrType::kFloat)
                                          .attr("l2", AttrType::kFloat);

}  // namespace hub
