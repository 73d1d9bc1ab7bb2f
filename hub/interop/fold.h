// Constants the importers compute at import are bounded, so that a few
// bytes of model cannot make gigabytes there: a node whose inputs are all
// known is folded only while its output holds at most kMaxFoldedElements or
// is no larger than what went in (a dequantized or transposed weight keeps
// its size); a larger one (a Tile or Fill of constants) stays in the graph
// and runs when the module does. The ops that only make constants
// (ConstantOfShape, Range, EyeLike, Trilu's mask) are refused beyond the
// bound. Shared by the ONNX and TensorFlow importers. Internal to
// hub/interop; not installed.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include "hub/tensor/shape.h"

namespace hub::interop {

inline constexpr int64_t kMaxFoldedElements = int64_t{1} << 24;

// The most subgraphs (control flow's branches and bodies) one import builds:
// a loop body is imported again while its carried shapes relax, and nested
// loops multiply that, so a few kilobytes of nested loops could otherwise
// take exponential time.
inline constexpr int kMaxSubgraphImports = 1 << 12;

// The element count of `shape`, saturating at INT64_MAX (unknown dims count 0).
inline int64_t saturated_elements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape.dims())
    n = d > 0 && n > std::numeric_limits<int64_t>::max() / d ? std::numeric_limits<int64_t>::max()
                                                             : n * std::max<int64_t>(d, 0);
  return n;
}

// Whether a constant of `shape` computed from `input_elements` input
// elements may be folded.
inline bool fold_allowed(const Shape& shape, int64_t input_elements) {
  const int64_t n = saturated_elements(shape);
  return n <= kMaxFoldedElements || n <= input_elements;
}

}  // namespace hub::interop
