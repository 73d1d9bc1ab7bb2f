// Reductions.
//
// Sum, Mean, Max, Min, Prod(x; axes = [] (all), keep_dims = false): reduce x
// over `axes` (negative counts from the end; duplicates allowed). Output shape:
// x's with reduced dims removed, or set to 1 with keep_dims. dtypes float32,
// int32, int64 (Mean of integers divides with truncation, as TF). Empty
// reductions: Sum = 0, Mean = NaN (float), Max = lowest value of the dtype,
// Min = highest, Prod = 1. (ONNX ReduceSum/Mean/Max/Min/Prod with keepdims,
// GlobalAveragePool/GlobalMaxPool = Mean/Max over the spatial axes with
// keep_dims; TF Sum/Mean/Max/Min/Prod with constant reduction indices.)
//   Sum:   dx = broadcast(g)                       (g re-expanded over axes)
//   Mean:  dx = broadcast(g) / N,                  N = elements reduced per output
//   Max:   dx = broadcast(g) * [x == max] / count, count = ties per output (TF)
//   Min:   as Max with the minimum
//   Prod:  dx = ProdGrad(g, x): dx_i = g * prod_{j != i} x_j over i's group
//          (products of the elements before and after i, so zeros are exact:
//          TF computes it with exclusive cumulative products the same way)
//
// ArgMax(x; axis): int64 index of the largest value along `axis` (first one on
// ties); output drops that axis. x: float32, int32 or int64; the axis must not
// be empty. Not differentiable. ArgMin(x; axis): the same for the smallest.
//
// TopK(x; k, sorted = true) -> (values, indices): the k largest entries of each
// row along the last axis, largest first; ties go to the lower index first.
// values: x's dtype, [..., k]; indices: int32, [..., k]. Needs k <= last dim.
// (sorted = false is accepted; the result is still sorted.)
//   d x = TopKGrad(g_values, indices, x): g_values scattered to the chosen
//   positions of each row, zero elsewhere; indices get no gradient.
//
// L2Loss(x) = sum(x^2) / 2, a float32 scalar.  dx = g * x.
#pragma once

#include <string>
#include <vector>

#include "hub/ops/scope.h"

namespace hub::ops {

Output sum(const Scope& s, Output x, const std::vector<int64_t>& axes = {}, bool keep_dims = false,
           const std::string& name = "Sum");
Output mean(const Scope& s, Output x, const std::vector<int64_t>& axes = {}, bool keep_dims = false,
            const std::string& name = "Mean");
Output max(const Scope& s, Output x, const std::vector<int64_t>& axes = {}, bool keep_dims = false,
           const std::string& name = "Max");
Output min(const Scope& s, Output x, const std::vector<int64_t>& axes = {}, bool keep_dims = false,
           const std::string& name = "Min");
Output prod(const Scope& s, Output x, const std::vector<int64_t>& axes = {}, bool keep_dims = false,
            const std::string& name = "Prod");
// The running sum along axis; `exclusive` leaves each element out of its
// own sum, `reverse` sums from the end.
Output cum_sum(const Scope& s, Output x, int64_t axis, bool exclusive = false, bool reverse = false,
               const std::string& name = "CumSum");
Output arg_max(const Scope& s, Output x, int64_t axis, const std::string& name = "ArgMax");
Output arg_min(const Scope& s, Output x, int64_t axis, const std::string& name = "ArgMin");
struct TopKResult {
  Output values;
  Output indices;
};
TopKResult top_k(const Scope& s, Output x, int64_t k, bool sorted = true, const std::string& name = "TopK");
Output l2_loss(const Scope& s, Output x, const std::string& name = "L2Loss");

}  // namespace hub::ops
