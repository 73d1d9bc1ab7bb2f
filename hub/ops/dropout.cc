#include "hub/ops/dropout.h"

#include "hub/ops/elementwise.h"
#include "hub/ops/registry.h"
#include "hub/ops/state.h"

namespace hub {

HUB_REGISTER_OP(Dropout)
    .inputs(1)
    .outputs(2)
    .attr("rate", AttrType::kFloat)
    .attr("seed", AttrType::kInt, int64_t{0})
    .stateful()
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      c.expect_dtype(0, DType::kFloat32);
      double rate = c.attrs().get_float("rate");
      if (!(rate >= 0.0 && rate < 1.0)) c.fail("rate " + std::to_string(rate) + " must lie in [0, 1)");
      return {c.input(0), c.input(0)};
    })
    .grad([](const GradContext& c) -> std::vector<Output> {
      if (!c.grads[0].valid()) return {Output{}};
      const Scope& s = c.scope;
      float scale = static_cast<float>(1.0 / (1.0 - c.node.attrs.get_float("rate")));
      return {ops::mul(s, ops::mul(s, c.grads[0], c.outputs[1]), ops::scalar(s, scale))};
    })
    .doc("(y, mask): y = x * mask / (1 - rate), mask ~ Bernoulli(1 - rate).");

namespace ops {

DropoutResult dropout_with_mask(const Scope& s, Output x, float rate, int64_t seed, const std::string& name) {
  auto outs = s.op_n("Dropout", {x}, Attrs().set("rate", rate).set("seed", seed), name);
  return {outs[0], outs[1]};
}

Output dropout(const Scope& s, Output x, float rate, bool is_training, int64_t seed, const std::string& name) {
  if (!(rate >= 0.0f && rate < 1.0f))
    throw_error(Code::kInvalidArgument,
                "dropout '" + s.name(name) + "': rate " + std::to_string(rate) + " must lie in [0, 1)");
  if (!is_training) return x;
  return dropout_with_mask(s, x, rate, seed, name).y;
}

}  // namespace ops
}  // namespace hub
