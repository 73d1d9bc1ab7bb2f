#include <Eigen/Core>

#include "hub/ops/node.h"
#include "hub/ops/registry.h"
#include "hub/ops/variables.h"

namespace hub {
namespace {

// Sessions feed placeholders and never run them; a direct run is a bug.
void placeholder_kernel(KernelContext& c) {
  throw_error(Code::kFailedPrecondition, "placeholder '" + c.node().name + "' must be fed");
}

void const_kernel(KernelContext& c) { c.set_output(0, c.attrs().get_tensor("value")); }

void variable_kernel(KernelContext& c) {
  const Tensor& v = c.variables().at(c.node().name);
  if (v.dtype() != c.output_spec(0).dtype || v.shape() != c.output_spec(0).shape)
    throw_error(Code::kInvalidArgument, "variable '" + c.node().name + "' holds " + v.spec_string() +
                                            " but the graph declares " + c.output_spec(0).to_string());
  c.set_output(0, v);
}

void assign_moving_average_kernel(KernelContext& c) {
  // Input 0 is the variable's tensor, shared with the store: update in place.
  Tensor var = c.input(0);
  const Tensor& x = c.input(1);
  float decay = static_cast<float>(c.attrs().get_float("decay"));
  Eigen::Map<Eigen::ArrayXf> v(var.data<float>(), var.num_elements());
  Eigen::Map<const Eigen::ArrayXf> xv(x.data<float>(), x.num_elements());
  v -= (v - xv) * (1.0f - decay);
  c.set_output(0, var);
}

}  // namespace

HUB_REGISTER_KERNEL(Placeholder, reference, placeholder_kernel);
HUB_REGISTER_KERNEL(Const, reference, const_kernel);
HUB_REGISTER_KERNEL(Variable, reference, variable_kernel);
HUB_REGISTER_KERNEL(AssignMovingAverage, reference, assign_moving_average_kernel);

}  // namespace hub
