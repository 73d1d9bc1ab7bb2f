#include "hub/interop/linear.h"

#include "hub/ops/array.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/math.h"
#include "hub/ops/state.h"

namespace hub::interop {
namespace {

// One element as an int64 [1].
Output run_time_value(const Scope& s, const Linear<std::pair<Output, int>>& value) {
  auto constant = [&](int64_t v) { return ops::constant(s, Tensor::from_vector<int64_t>({1}, {v}), "value"); };
  Output sum;
  for (const auto& [dim, coefficient] : value.terms) {
    Output term = ops::slice(s, s.op("Shape", {dim.first}, {}, "shape"), {dim.second}, {1}, "dim");
    if (coefficient != 1) term = ops::mul(s, term, constant(coefficient), "term");
    sum = sum.valid() ? ops::add(s, sum, term, "sum") : term;
  }
  if (!sum.valid()) return constant(value.value);
  return value.value == 0 ? sum : ops::add(s, sum, constant(value.value), "sum");
}

}  // namespace

Output run_time_tensor(const Scope& s, const std::vector<Linear<std::pair<Output, int>>>& elements, bool scalar,
                       DType dtype) {
  std::vector<Output> parts;
  for (const auto& e : elements) parts.push_back(run_time_value(s, e));
  Output t = parts.empty()       ? ops::constant(s, Tensor(DType::kInt64, Shape{0}), "empty")
             : parts.size() == 1 ? parts[0]
                                 : ops::concat(s, parts, 0, "value");
  if (scalar) t = ops::reshape(s, t, {}, "scalar");
  return dtype == DType::kInt64 ? t : ops::cast(s, t, dtype, "cast");
}

Output run_time_dim(const Scope& s, Output x, int dim, int64_t offset) {
  return run_time_tensor(s, {Linear<std::pair<Output, int>>{offset, {{{x, dim}, 1}}}}, true, DType::kInt64);
}

}  // namespace hub::interop
