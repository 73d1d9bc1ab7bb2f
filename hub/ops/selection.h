// Selection: ops whose output holds as many entries as the input values
// select, so its size is known only once they ran
// (OpDef::value_dependent_shape: the kernel sizes the output, and a run
// with one is not laid out in a memory arena). Neither is differentiable.
//
//   NonZero(x)                 int64 [rank(x), n]: the coordinates of x's n
//                              nonzero elements (true for bool), column j
//                              the j-th in row-major order (ONNX NonZero; TF's
//                              Where of one input is its transpose). Any
//                              numeric or bool dtype; NaN is nonzero.
//   NonMaxSuppression(boxes, scores; center_point_box = 0, max_per_class = 0,
//                     iou_threshold = 0, score_threshold = -inf)
//                              boxes float32 [B, N, 4], scores float32 [B, C, N]
//                              (ONNX NonMaxSuppression with constant limits).
//                              Per batch b and class c: the boxes scoring above
//                              score_threshold (all of them when it is -inf;
//                              NaN scores never), taken by descending score
//                              (ties: the lower box index first), each kept
//                              unless its IoU with a box already kept for (b, c)
//                              exceeds iou_threshold (in [0, 1]), until
//                              max_per_class are kept (0 keeps none). Boxes are
//                              [y1, x1, y2, x2], any two opposite corners
//                              (center_point_box 0, TF's convention), or
//                              [x_center, y_center, width, height] (1). A box
//                              of zero area overlaps nothing. Output int64
//                              [M, 3]: rows (b, c, box index), by b, then c,
//                              then the order kept.
//   Unique(x; axis = 0, sorted = true)  -> y, indices, inverse, counts
//                              the distinct slices of x along axis (its
//                              elements when x is 1-D; ONNX Unique, whose
//                              importer flattens x when it has no axis), in
//                              ascending lexicographic order (sorted) or in
//                              the order they first occur; indices (int64 [k])
//                              where each first occurs, inverse (int64 [n])
//                              which of y each slice of x is, counts (int64
//                              [k]) how often each occurs. -0 equals 0.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "hub/ops/scope.h"

namespace hub::ops {

Output non_zero(const Scope& s, Output x, const std::string& name = "NonZero");

struct NmsOptions {
  bool center_point_box = false;
  int64_t max_per_class = 0;
  double iou_threshold = 0;
  double score_threshold = -std::numeric_limits<double>::infinity();
};
Output non_max_suppression(const Scope& s, Output boxes, Output scores, const NmsOptions& options,
                           const std::string& name = "NonMaxSuppression");

}  // namespace hub::ops
