// Shape manipulation: Reshape, ReshapeLike, Squeeze, ExpandDims, Transpose,
// Pad, Slice, Concat (TensorFlow semantics). All work on every dtype; only
// float32 inputs receive gradients.
//
//   Reshape(x; shape)          y = x viewed as `shape` (one -1 is inferred);
//                              no copy.                  dx = ReshapeLike(g, x)
//   ReshapeLike(x, like)       y = x viewed with like's run-time shape; no copy.
//                                                        dx = ReshapeLike(g, x)
//   Squeeze(x; axes)           drops the listed size-1 dims (all size-1 dims
//                              when axes is empty); no copy.  dx = ReshapeLike(g, x)
//   ExpandDims(x; axis)        inserts a size-1 dim at axis (in [-r-1, r]);
//                              no copy.                  dx = ReshapeLike(g, x)
//   Transpose(x; perm)         y.shape[i] = x.shape[perm[i]],
//                              y[i_0..i_n] = x[j] with j[perm[k]] = i_k.
//                                                        dx = Transpose(g, inverse(perm))
//   Pad(x; paddings)           paddings = [before_0, after_0, before_1, ...],
//                              y.shape[i] = before_i + x.shape[i] + after_i,
//                              zeros around x.            dx = Slice(g, before, x.shape)
//   Slice(x; begin, size)      y = x[begin_i : begin_i + size_i] per dim, size_i
//                              = -1 meaning "to the end". dx = Pad(g, begin, rest)
//   Concat(x_0..x_k; axis)     joins along axis (negative counts from the end);
//                              other dims must agree.     dx_i = Slice(g) of x_i's part
//
// Gradient limits (graph-time shapes): Pad's gradient needs x's dim known where
// something is padded after it; Slice's needs x's dim known unless the slice
// takes the whole dim; Concat's needs the inputs' sizes along axis known (except
// the last input's). Building such a gradient otherwise throws InvalidArgument.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hub/ops/scope.h"

namespace hub::ops {

Output reshape(const Scope& s, Output x, const std::vector<int64_t>& shape,
               const std::string& name = "Reshape");
Output reshape_like(const Scope& s, Output x, Output like, const std::string& name = "ReshapeLike");
Output squeeze(const Scope& s, Output x, const std::vector<int64_t>& axes = {},
               const std::string& name = "Squeeze");
Output expand_dims(const Scope& s, Output x, int64_t axis, const std::string& name = "ExpandDims");
Output transpose(const Scope& s, Output x, const std::vector<int64_t>& perm,
                 const std::string& name = "Transpose");
Output pad(const Scope& s, Output x, const std::vector<int64_t>& paddings, const std::string& name = "Pad");
Output slice(const Scope& s, Output x, const std::vector<int64_t>& begin, const std::vector<int64_t>& size,
             const std::string& name = "Slice");
Output concat(const Scope& s, const std::vector<Output>& xs, int64_t axis, const std::string& name = "Concat");

}  // namespace hub::ops
