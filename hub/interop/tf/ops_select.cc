// TensorFlow <-> hub: the selection ops, whose output size follows from the
// values (hub/ops/selection.h): Where of one input, and NonMaxSuppression
// (V1 to V5) as hub's over one batch and one class.
#include <limits>

#include "hub/core/error.h"
#include "hub/interop/tf/ops.h"
#include "hub/ops/array.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/math.h"
#include "hub/ops/reduction.h"
#include "hub/ops/selection.h"
#include "hub/ops/state.h"

namespace hub::tf {

namespace {

constexpr int kDtFloat = 1;
constexpr int kDtInt32 = 3;
constexpr int kDtInt64 = 9;
constexpr int kDtBool = 10;

// Where(condition): the [n, rank] int64 coordinates of its true (nonzero) elements.
void map_where(OpContext& c) {
  c.set_output(0, ops::transpose(c.scope(), ops::non_zero(c.scope(), c.input(0), "NonZero"), {1, 0}, c.name()));
}

// Unique, UniqueV2 (a constant axis), UniqueWithCounts: in the order the
// values first occur; the positions (and counts) in out_idx's type.
void map_unique(OpContext& c) {
  int64_t axis = 0;
  if (c.op() == "UniqueV2") {
    const std::vector<int64_t> a = c.constant_ints(1, "axis");
    if (a.size() != 1) c.fail("axis must hold one value, got " + std::to_string(a.size()));
    axis = a[0];
  } else if (c.shape(0).rank() != 1) {
    c.fail("x must be 1-D, got " + c.shape(0).to_string());
  }
  std::vector<Output> outs = c.add_n("Unique", {c.input(0)}, Attrs().set("axis", axis).set("sorted", false));
  const DType index = c.attr_dtype("out_idx");
  auto typed = [&](Output o, const std::string& name) {
    return index == DType::kInt64 ? o : ops::cast(c.scope(), o, index, name);
  };
  c.set_output(0, outs[0]);
  c.set_output(1, typed(outs[2], "idx"));
  if (c.op() == "UniqueWithCounts") c.set_output(2, typed(outs[3], "count"));
}

// The value of scalar input i (int32/int64, or float32).
double scalar_input(const OpContext& c, int i, const std::string& what) {
  std::optional<Tensor> t = c.constant(i);
  if (!t) c.unsupported(what + " computed at run time (hub needs it constant)");
  if (t->num_elements() != 1) c.fail(what + " must be a scalar, got " + t->spec_string());
  switch (t->dtype()) {
    case DType::kFloat32:
      return t->data<float>()[0];
    case DType::kInt32:
      return t->data<int32_t>()[0];
    case DType::kInt64:
      return static_cast<double>(t->data<int64_t>()[0]);
    default:
      c.fail(what + " must be int32, int64 or float32, got " + t->spec_string());
  }
}

// NonMaxSuppression V1 to V5: one image's boxes [N, 4] (corners) and scores
// [N]; outputs the kept indices (int32), V5 their scores, V4/V5 how many
// (with pad_to_max_output_size, the indices and scores padded with zeros to
// max_output_size).
void map_non_max_suppression(OpContext& c) {
  const std::string& op = c.op();
  const int version = op == "NonMaxSuppression" ? 1 : op.back() - '0';
  if (c.attr_dtype("T") != DType::kFloat32) c.fail_attr("T", "only float32 is supported");
  const Shape boxes = c.shape(0), scores = c.shape(1);
  if (boxes.rank() != 2 || (boxes[1] >= 0 && boxes[1] != 4) || scores.rank() != 1)
    c.fail("boxes must be [N, 4] and scores [N], got " + boxes.to_string() + " and " + scores.to_string());
  ops::NmsOptions o;
  const double max = scalar_input(c, 2, "max_output_size");
  if (max < 0) c.fail("max_output_size is negative");
  o.max_per_class = static_cast<int64_t>(max);
  o.iou_threshold = version == 1 ? c.attr_float("iou_threshold") : scalar_input(c, 3, "iou_threshold");
  if (!(o.iou_threshold >= 0 && o.iou_threshold <= 1))
    c.fail("iou_threshold " + std::to_string(o.iou_threshold) + " is outside [0, 1]");
  if (version >= 3) o.score_threshold = scalar_input(c, 4, "score_threshold");
  if (version == 5 && scalar_input(c, 5, "soft_nms_sigma") != 0)
    c.unsupported("soft non-maximum suppression (soft_nms_sigma > 0)");
  const bool pad = version >= 4 && c.attr_bool("pad_to_max_output_size");
  const Scope s = c.scope();
  Output kept = ops::non_max_suppression(s, ops::expand_dims(s, c.input(0), 0, "boxes"),
                                         ops::reshape(s, c.input(1), {1, 1, -1}, "scores"), o, "NonMaxSuppression");
  Output index =
      ops::cast(s, ops::reshape(s, ops::slice(s, kept, {0, 2}, {-1, 1}, "box"), {-1}, "flat"), DType::kInt32, "index");
  Output valid = ops::sum(s, ops::ones_like(s, index, "ones"), {0}, false, "valid");
  // Padded with zeros to max_output_size: [kept..., 0, ...] cut to that length.
  auto padded = [&](Output v, const std::string& name) {
    if (!pad) return v;
    Output zeros = ops::constant(s, Tensor::zeros(s.graph().spec(v).dtype, Shape{o.max_per_class}), name + "/zeros");
    return ops::slice(s, ops::concat(s, {v, zeros}, 0, name + "/joined"), {0}, {o.max_per_class}, name);
  };
  c.set_output(0, padded(index, "selected_indices"));
  if (version == 4) c.set_output(1, valid);
  if (version == 5) {
    c.set_output(1, padded(ops::gather(s, c.input(1), index, 0, 0, "selected_scores"), "scores_padded"));
    c.set_output(2, valid);
  }
}

// NonZero: TensorFlow's Where, transposed to ONNX's [rank, n].
void export_non_zero(ExportContext& c) {
  auto& w = c.add("where", "Where", {c.input(0)});
  set_type(w, "T", c.input_spec(0).dtype);
  auto& n = c.add("", "Transpose", {w.name(), c.constant("perm", Tensor::from_vector<int32_t>({2}, {1, 0}))});
  set_type(n, "T", DType::kInt64);
  set_type(n, "Tperm", DType::kInt32);
  c.set_output(0, n.name());
}

// NonMaxSuppression over one batch and one class (static) as
// NonMaxSuppressionV3 of the [N, 4] boxes (center-point boxes turned into
// corners by a product with a constant matrix) and the [N] scores; its int32
// indices widened and padded to ONNX's rows [0, 0, index].
void export_non_max_suppression(ExportContext& c) {
  const Attrs& a = c.node().attrs;
  const Shape boxes = c.input_spec(0).shape, scores = c.input_spec(1).shape;
  if (boxes[0] != 1 || scores[1] != 1)
    c.fail("TensorFlow's NonMaxSuppression takes one batch and one class; this has boxes " + boxes.to_string() +
           " and scores " + scores.to_string());
  const Tensor flat = Tensor::from_vector<int32_t>({2}, {-1, 4});
  auto& b = c.add("boxes", "Reshape", {c.input(0), c.constant("boxes/shape", flat)});
  set_type(b, "T", DType::kFloat32);
  set_type(b, "Tshape", DType::kInt32);
  std::string corners = b.name();
  if (a.get_bool("center_point_box")) {
    // [xc, yc, w, h] -> [yc - h/2, xc - w/2, yc + h/2, xc + w/2].
    const Tensor m = Tensor::from_vector<float>({4, 4}, {0, 1, 0, 1,         //
                                                         1, 0, 1, 0,         //
                                                         0, -0.5f, 0, 0.5f,  //
                                                         -0.5f, 0, 0.5f, 0});
    auto& mm = c.add("corners", "MatMul", {corners, c.constant("corners/matrix", m)});
    set_type(mm, "T", DType::kFloat32);
    (*mm.mutable_attr())["transpose_a"].set_b(false);
    (*mm.mutable_attr())["transpose_b"].set_b(false);
    corners = mm.name();
  }
  auto& sc =
      c.add("scores", "Reshape", {c.input(1), c.constant("scores/shape", Tensor::from_vector<int32_t>({1}, {-1}))});
  set_type(sc, "T", DType::kFloat32);
  set_type(sc, "Tshape", DType::kInt32);
  const int64_t max = std::min<int64_t>(a.get_int("max_per_class"), std::numeric_limits<int32_t>::max());
  auto f32 = [&](const std::string& name, double v) {
    return c.constant(name, Tensor::scalar<float>(static_cast<float>(v)));
  };
  double score = a.get_float("score_threshold");
  if (score == -std::numeric_limits<double>::infinity()) score = -std::numeric_limits<float>::max();
  auto& nms = c.add("nms", "NonMaxSuppressionV3",
                    {corners, sc.name(), c.constant("max", Tensor::scalar<int32_t>(static_cast<int32_t>(max))),
                     f32("iou", a.get_float("iou_threshold")), f32("score", score)});
  set_type(nms, "T", DType::kFloat32);
  set_type(nms, "T_threshold", DType::kFloat32);
  auto& wide = c.add("wide", "Cast", {nms.name()});
  set_type(wide, "SrcT", DType::kInt32);
  set_type(wide, "DstT", DType::kInt64);
  (*wide.mutable_attr())["Truncate"].set_b(false);
  auto& column = c.add("column", "ExpandDims", {wide.name(), c.constant("column/axis", Tensor::scalar<int32_t>(1))});
  set_type(column, "T", DType::kInt64);
  set_type(column, "Tdim", DType::kInt32);
  auto& rows =
      c.add("", "Pad", {column.name(), c.constant("paddings", Tensor::from_vector<int32_t>({2, 2}, {0, 0, 2, 0}))});
  set_type(rows, "T", DType::kInt64);
  set_type(rows, "Tpaddings", DType::kInt32);
  c.set_output(0, rows.name());
}

}  // namespace

void add_select_importers(std::map<std::string, OpImporter>& m) {
  m["Where"] = {map_where, {{"T", attr_type(kDtBool)}}, {"index"}};
  m["Unique"] = {map_unique, {{"T", attr_required()}, {"out_idx", attr_type(kDtInt32)}}, {"y", "idx"}};
  m["UniqueV2"] = {map_unique,
                   {{"T", attr_required()}, {"Taxis", attr_type(kDtInt64)}, {"out_idx", attr_type(kDtInt32)}},
                   {"y", "idx"}};
  m["UniqueWithCounts"] = {
      map_unique, {{"T", attr_required()}, {"out_idx", attr_type(kDtInt32)}}, {"y", "idx", "count"}};
  const auto nms_attrs = [&](int version) {
    std::map<std::string, proto::AttrValue> a = {{"T", attr_type(kDtFloat)}};
    if (version == 1) a["iou_threshold"] = attr_f(0.5f);
    if (version >= 3) a["T_threshold"] = attr_type(kDtFloat);
    if (version >= 4) a["pad_to_max_output_size"] = attr_b(false);
    return a;
  };
  m["NonMaxSuppression"] = {map_non_max_suppression, nms_attrs(1), {"selected_indices"}};
  m["NonMaxSuppressionV2"] = {map_non_max_suppression, nms_attrs(2), {"selected_indices"}};
  m["NonMaxSuppressionV3"] = {map_non_max_suppression, nms_attrs(3), {"selected_indices"}};
  m["NonMaxSuppressionV4"] = {map_non_max_suppression, nms_attrs(4), {"selected_indices", "valid_outputs"}};
  m["NonMaxSuppressionV5"] = {
      map_non_max_suppression, nms_attrs(5), {"selected_indices", "selected_scores", "valid_outputs"}};
}

void add_select_exporters(std::map<std::string, OpExporter>& m) {
  m["NonZero"] = export_non_zero;
  m["NonMaxSuppression"] = export_non_max_suppression;
}

}  // namespace hub::tf
