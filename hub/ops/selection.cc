#include "hub/ops/selection.h"

#include <cmath>

#include "hub/ops/registry.h"

namespace hub {
HUB_REGISTER_OP(NonZero)
    .inputs(1)
    .value_dependent_shape()
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      const Shape& x = c.shape(0);
      // Known only at run time, unless x is known to be empty.
      const int64_t n = x.is_fully_defined() && x.num_elements() == 0 ? 0 : kUnknownDim;
      return {{DType::kInt64, Shape{static_cast<int64_t>(x.rank()), n}}};
    })
    .no_gradient("its output is integer coordinates")
    .doc("int64 [rank, n]: the coordinates of x's n nonzero elements in row-major order (ONNX NonZero).");

HUB_REGISTER_OP(NonMaxSuppression)
    .inputs(2)
    .attr("center_point_box", AttrType::kBool, false)
    .attr("max_per_class", AttrType::kInt, int64_t{0})
    .attr("iou_threshold", AttrType::kFloat, 0.0)
    .attr("score_threshold", AttrType::kFloat, -std::numeric_limits<double>::infinity())
    .value_dependent_shape()
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      c.expect_dtype(0, DType::kFloat32);
      c.expect_dtype(1, DType::kFloat32);
      c.expect_rank(0, 3);
      c.expect_rank(1, 3);
      const Shape &boxes = c.shape(0), &scores = c.shape(1);
      auto differ = [](int64_t a, int64_t b) { return a >= 0 && b >= 0 && a != b; };
      if (differ(boxes[2], 4)) c.fail("boxes must be [batch, boxes, 4], got " + c.input(0).to_string());
      if (differ(boxes[0], scores[0]) || differ(boxes[1], scores[2]))
        c.fail("scores " + c.input(1).to_string() + " must be [batch, classes, boxes] for boxes " +
               c.input(0).to_string());
      if (c.attrs().get_int("max_per_class") < 0) c.fail("max_per_class is negative");
      const double iou = c.attrs().get_float("iou_threshold");
      if (!(iou >= 0 && iou <= 1)) c.fail("iou_threshold " + std::to_string(iou) + " is outside [0, 1]");
      if (std::isnan(c.attrs().get_float("score_threshold"))) c.fail("score_threshold is NaN");
      return {{DType::kInt64, Shape{kUnknownDim, 3}}};
    })
    .no_gradient("its output is integer indices")
    .doc(
        "int64 [M, 3]: (batch, class, box) of the boxes greedy non-maximum suppression keeps per batch and class "
        "(ONNX NonMaxSuppression).");

HUB_REGISTER_OP(Unique)
    .inputs(1)
    .outputs(4)
    .attr("axis", AttrType::kInt, int64_t{0})
    .attr("sorted", AttrType::kBool, true)
    .value_dependent_shape()
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      Shape y = c.shape(0);
      if (y.rank() == 0) c.fail("x must have at least one dim, got " + c.input(0).to_string());
      int axis = static_cast<int>(c.attrs().get_int("axis"));
      if (axis < -y.rank() || axis >= y.rank())
        c.fail("axis " + std::to_string(axis) + " out of range for " + c.input(0).to_string());
      if (axis < 0) axis += y.rank();
      const int64_t n = y[axis];
      y.set_dim(axis, n == 0 ? 0 : kUnknownDim);
      const Shape k{y[axis]};
      return {{c.dtype(0), y}, {DType::kInt64, k}, {DType::kInt64, Shape{n}}, {DType::kInt64, k}};
    })
    .no_gradient("its outputs are a selection and integer positions")
    .doc(
        "The distinct slices of x along axis (sorted, or as they first occur), with where each first occurs, "
        "which one each slice is, and how often each occurs (ONNX Unique).");

namespace ops {

Output non_zero(const Scope& s, Output x, const std::string& name) { return s.op("NonZero", {x}, {}, name); }

Output non_max_suppression(const Scope& s, Output boxes, Output scores, const NmsOptions& options,
                           const std::string& name) {
  return s.op("NonMaxSuppression", {boxes, scores},
              Attrs()
                  .set("center_point_box", options.center_point_box)
                  .set("max_per_class", options.max_per_class)
                  .set("iou_threshold", options.iou_threshold)
                  .set("score_threshold", options.score_threshold),
              name);
}

}  // namespace ops
}  // namespace hub
