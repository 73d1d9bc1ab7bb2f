// Graph inputs and state: placeholders, constants, variables and the
// moving-average update used by batch normalization and slim's update_ops.
#pragma once

#include <string>
#include <vector>

#include "hub/ops/scope.h"

namespace hub::ops {

// A value fed at run time. Unknown dims (kUnknownDim) accept any size.
Output placeholder(const Scope& s, DType dtype, const Shape& shape, const std::string& name = "Placeholder");
Output constant(const Scope& s, const Tensor& value, const std::string& name = "Const");
Output scalar(const Scope& s, float value, const std::string& name = "Const");

struct VariableOptions {
  std::string initializer = "zeros";  // see hub/graph/variables.h initial_value()
  std::vector<double> init_params;
  std::string init_mode = "fan_in";
  std::string init_distribution = "truncated_normal";
  bool trainable = true;
  int64_t seed = 0;
  DType dtype = DType::kFloat32;
};
// A variable named s.prefix()/name, whose value lives in the VariableStore.
Output variable(const Scope& s, const std::string& name, const Shape& shape, const VariableOptions& options = {});

// Side effect: variable -= (variable - value) * (1 - decay). Output: the
// variable's new value. Run it as a target (it is listed in kUpdateOps).
Output assign_moving_average(const Scope& s, Output variable, Output value, float decay,
                             const std::string& name = "AssignMovingAvg");

}  // namespace hub::ops
