#include "hub/ops/math.h"

namespace hub {

HUB_REGISTER_OP(Neg)
    .inputs(1)
    .shape_fn(same_as_input0)
    .grad([](const GradContext& c) { return std::vector<Output>{ops::neg(c.scope, c.grads[0])}; })
    .doc("y = -x.");

namespace ops {
Output neg(const Scope& s, Output x, const std::string& name) { return s.op("Neg", {x}, {}, name); }
}  // namespace ops
}  // namespace hub
