// Resize and ResizeGrad (formulas in hub/ops/resize.h).
#include "hub/ops/resize.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "hub/core/error.h"
#include "hub/ops/array.h"
#include "hub/ops/registry.h"

namespace hub {
namespace ops {

namespace {

template <class E>
struct Named {
  const char* name;
  E value;
};
constexpr Named<ResampleMode> kModes[] = {
    {"nearest", ResampleMode::kNearest}, {"linear", ResampleMode::kLinear}, {"cubic", ResampleMode::kCubic}};
constexpr Named<CoordinateMode> kCoordinateModes[] = {{"half_pixel", CoordinateMode::kHalfPixel},
                                                      {"pytorch_half_pixel", CoordinateMode::kPytorchHalfPixel},
                                                      {"align_corners", CoordinateMode::kAlignCorners},
                                                      {"asymmetric", CoordinateMode::kAsymmetric},
                                                      {"tf_half_pixel_for_nn", CoordinateMode::kTfHalfPixelForNn}};
constexpr Named<NearestMode> kNearestModes[] = {{"round_prefer_floor", NearestMode::kRoundPreferFloor},
                                                {"round_prefer_ceil", NearestMode::kRoundPreferCeil},
                                                {"floor", NearestMode::kFloor},
                                                {"ceil", NearestMode::kCeil}};

template <class E, size_t N>
std::optional<E> lookup(const Named<E> (&table)[N], const std::string& text) {
  for (const Named<E>& n : table)
    if (text == n.name) return n.value;
  return std::nullopt;
}

template <class E, size_t N>
std::string choices(const Named<E> (&table)[N]) {
  std::string out;
  for (const Named<E>& n : table) out += (out.empty() ? "\"" : ", \"") + std::string(n.name) + "\"";
  return out;
}

struct Parsed {
  int64_t oh = 0, ow = 0;
  ResampleMode mode{};
  CoordinateMode coordinates{};
  NearestMode nearest{};
  CubicOptions cubic;
  std::vector<double> scales;
};

// "" or what is wrong with the attributes, naming the attribute and value.
std::string parse(const Attrs& attrs, Parsed* p) {
  const std::vector<int64_t>& size = attrs.get_ints("size");
  if (size.size() != 2 || size[0] < 0 || size[1] < 0)
    return "attribute size must be [OH, OW] with OH, OW >= 1 (0: known at run time), got " + attr_to_string(size);
  p->oh = size[0];
  p->ow = size[1];
  auto string_attr = [&](const char* name, auto& table, auto* out) -> std::string {
    const std::string& text = attrs.get_string(name);
    auto value = lookup(table, text);
    if (!value)
      return std::string("attribute ") + name + " must be one of " + choices(table) + ", got \"" + text + "\"";
    *out = *value;
    return "";
  };
  std::string error = string_attr("mode", kModes, &p->mode);
  if (error.empty()) error = string_attr("coordinate_transformation_mode", kCoordinateModes, &p->coordinates);
  if (error.empty()) error = string_attr("nearest_mode", kNearestModes, &p->nearest);
  if (!error.empty()) return error;
  p->cubic.a = attrs.get_float("cubic_coeff_a");
  p->cubic.exclude_outside = attrs.get_bool("exclude_outside");
  if (!std::isfinite(p->cubic.a)) return "attribute cubic_coeff_a must be finite, got " + attr_to_string(p->cubic.a);
  p->scales = attrs.get_floats("scales");
  if (!p->scales.empty() && (p->scales.size() != 2 || !(p->scales[0] > 0) || !(p->scales[1] > 0) ||
                             !std::isfinite(p->scales[0]) || !std::isfinite(p->scales[1])))
    return "attribute scales must be empty or [sh, sw] with positive finite entries, got " + attr_to_string(p->scales);
  return "";
}

}  // namespace

ResamplePlan resize_plan(const Attrs& attrs, int64_t in_h, int64_t in_w, int64_t out_h, int64_t out_w) {
  Parsed p;
  std::string error = parse(attrs, &p);
  HUB_CHECK(error.empty(), error);
  const double sh = p.scales.empty() ? static_cast<double>(out_h) / static_cast<double>(in_h) : p.scales[0];
  const double sw = p.scales.empty() ? static_cast<double>(out_w) / static_cast<double>(in_w) : p.scales[1];
  return {resample_axis(in_h, out_h, sh, p.mode, p.coordinates, p.nearest, p.cubic),
          resample_axis(in_w, out_w, sw, p.mode, p.coordinates, p.nearest, p.cubic)};
}

Attrs ResizeOptions::to_attrs() const {
  return Attrs()
      .set("size", size)
      .set("mode", mode)
      .set("coordinate_transformation_mode", coordinate_transformation_mode)
      .set("nearest_mode", nearest_mode)
      .set("cubic_coeff_a", cubic_coeff_a)
      .set("exclude_outside", exclude_outside)
      .set("scales", scales);
}

Output resize(const Scope& s, Output x, const ResizeOptions& o, const std::string& name) {
  return s.op("Resize", {x}, o.to_attrs(), name);
}

}  // namespace ops

namespace {

ops::Parsed checked(const InferContext& c) {
  ops::Parsed p;
  std::string error = ops::parse(c.attrs(), &p);
  if (!error.empty()) c.fail(error);
  return p;
}

// The output's [OH, OW] for input x: the size attribute's entries, and
// where they are 0, the dims `from` names (references, inputs 1 on) or else
// floor(H * sh), floor(W * sw) with the scales (unknown until x's are known).
std::pair<int64_t, int64_t> output_size(const InferContext& c, const ops::Parsed& p) {
  const Shape& x = c.shape(0);
  std::vector<char> named;
  const std::vector<std::optional<int64_t>> refs = ops::reference_dims(c, 2, &named);
  int64_t out[2] = {p.oh, p.ow};
  for (int i = 0; i < 2; ++i) {
    if (named[static_cast<size_t>(i)]) {
      if (out[i] != 0) c.fail("size entry " + std::to_string(i) + " is both fixed and read from a reference");
      out[i] = refs[static_cast<size_t>(i)].value_or(kUnknownDim);
      if (out[i] == 0) c.fail("the reference's dim for size entry " + std::to_string(i) + " is 0");
    } else if (out[i] == 0) {
      if (p.scales.empty()) c.fail("size entry " + std::to_string(i) + " is 0 without scales or a reference");
      const int64_t in = x[i + 1];
      if (in < 0) {
        out[i] = kUnknownDim;
        continue;
      }
      const double o = std::floor(static_cast<double>(in) * p.scales[static_cast<size_t>(i)]);
      if (!(o >= 1 && o <= static_cast<double>(int64_t{1} << 31)))
        c.fail("scale " + std::to_string(p.scales[static_cast<size_t>(i)]) + " of size " + std::to_string(in) +
               " gives no output size from 1 to 2^31");
      out[i] = static_cast<int64_t>(o);
    }
  }
  return {out[0], out[1]};
}

std::vector<TensorSpec> resize_shape_fn(const InferContext& c) {
  c.expect_rank(0, 4);
  c.expect_dtype(0, DType::kFloat32);
  ops::Parsed p = checked(c);
  const Shape& x = c.shape(0);
  if (x[1] == 0 || x[2] == 0) c.fail("cannot resize an empty image " + c.input(0).to_string());
  const auto [oh, ow] = output_size(c, p);
  return {{DType::kFloat32, Shape{x[0], oh, ow, x[3]}}};
}

// ResizeGrad(x_like, grad): grad must have Resize(x_like)'s shape where the
// size attribute fixes it (a run-time size is grad's own).
std::vector<TensorSpec> resize_grad_shape_fn(const InferContext& c) {
  for (int i = 0; i < 2; ++i) {
    c.expect_rank(i, 4);
    c.expect_dtype(i, DType::kFloat32);
  }
  ops::Parsed p = checked(c);
  const Shape& x = c.shape(0);
  if (x[1] == 0 || x[2] == 0) c.fail("cannot resize an empty image " + c.input(0).to_string());
  const Shape out{x[0], p.oh > 0 ? p.oh : kUnknownDim, p.ow > 0 ? p.ow : kUnknownDim, x[3]};
  if (!c.shape(1).compatible_with(out))
    c.fail("grad " + c.input(1).to_string() + " does not match the resized shape " + out.to_string() + " of " +
           c.input(0).to_string());
  return {c.input(0)};
}

OpDefBuilder resize_op(const char* name, int min_inputs, int max_inputs, ShapeFn shape_fn) {
  OpDefBuilder b(name);
  b.inputs(min_inputs, max_inputs)
      .attr("size", AttrType::kInts)
      .attr("mode", AttrType::kString, std::string("nearest"))
      .attr("coordinate_transformation_mode", AttrType::kString, std::string("half_pixel"))
      .attr("nearest_mode", AttrType::kString, std::string("round_prefer_floor"))
      .attr("cubic_coeff_a", AttrType::kFloat, -0.75)
      .attr("exclude_outside", AttrType::kBool, false)
      .attr("scales", AttrType::kFloats, std::vector<double>{})
      .attr("from", AttrType::kInts, std::vector<int64_t>{})
      .shape_fn(std::move(shape_fn));
  return b;
}

const OpRegistrar resize_registration =
    resize_op("Resize", 1, -1, resize_shape_fn)
        .grad([](const GradContext& c) {
          // (The reference inputs are read for their shapes only.)
          std::vector<Output> grads(c.inputs.size());
          grads[0] = c.scope.op("ResizeGrad", {c.inputs[0], c.grads[0]}, c.node.attrs);
          return grads;
        })
        .doc(
            "Resize NHWC images to size [OH,OW]: nearest, (bi)linear or (bi)cubic with ONNX's coordinate "
            "transformation and nearest modes, cubic_coeff_a and exclude_outside.");

const OpRegistrar resize_grad_registration =
    resize_op("ResizeGrad", 2, 2, resize_grad_shape_fn)
        .grad([](const GradContext& c) {
          // Linear in grad: Resize of gg to grad's size (its run-time size read from grad itself).
          Attrs a = c.node.attrs;
          std::vector<int64_t> from;
          for (int64_t i : {0, 1})
            if (a.get_ints("size")[static_cast<size_t>(i)] == 0) from.insert(from.end(), {i, 1, i + 1});
          a.set("from", from);
          return std::vector<Output>{Output{}, c.scope.op("Resize", {c.grads[0], c.inputs[1]}, a)};
        })
        .doc(
            "Gradient of Resize: grad added back to the pixels each output read, by their "
            "weights.");

// GridSample: x [N, H, W, C] sampled at grid [N, OH, OW, 2] (x, y in [-1, 1]).
template <bool kGrad>
std::vector<TensorSpec> grid_sample_shape_fn(const InferContext& c) {
  const int x = kGrad ? 1 : 0, grid = x + 1;
  for (int i = 0; i < c.num_inputs(); ++i) {
    c.expect_rank(i, 4);
    c.expect_dtype(i, DType::kFloat32);
  }
  const Shape &xs = c.shape(x), &gs = c.shape(grid);
  if (gs[3] != 2 && gs[3] >= 0) c.fail("grid " + c.input(grid).to_string() + " must end in 2 (x, y)");
  if (xs[0] >= 0 && gs[0] >= 0 && xs[0] != gs[0])
    c.fail("grid " + c.input(grid).to_string() + " and x " + c.input(x).to_string() + " differ in batch");
  for (const char* attr : {"mode", "padding_mode"}) {
    const std::string& v = c.attrs().get_string(attr);
    const bool ok = attr == std::string("mode") ? (v == "bilinear" || v == "nearest" || v == "bicubic")
                                                : (v == "zeros" || v == "border" || v == "reflection");
    if (!ok)
      c.fail("attribute " + std::string(attr) + " '" + v + "' is not one of " +
             (attr == std::string("mode") ? "bilinear, nearest, bicubic" : "zeros, border, reflection"));
  }
  const Shape out{gs[0] >= 0 ? gs[0] : xs[0], gs[1], gs[2], xs[3]};
  if (!kGrad) return {{DType::kFloat32, out}};
  if (!c.shape(0).compatible_with(out))
    c.fail("gradient " + c.input(0).to_string() + " does not have the sampled shape " + out.to_string());
  return {c.input(x), c.input(grid)};
}

OpDefBuilder grid_sample_op(const char* name, int inputs) {
  OpDefBuilder b(name);
  b.inputs(inputs)
      .attr("mode", AttrType::kString, std::string("bilinear"))
      .attr("padding_mode", AttrType::kString, std::string("zeros"))
      .attr("align_corners", AttrType::kBool, false);
  return b;
}

const OpRegistrar grid_sample_registration =
    grid_sample_op("GridSample", 2)
        .shape_fn(grid_sample_shape_fn<false>)
        .grad([](const GradContext& c) {
          if (c.node.attrs.get_string("mode") == "bicubic")
            throw_error(Code::kUnimplemented, "node '" + c.node.name + "' (GridSample): no gradient for mode bicubic");
          auto g = c.scope.op_n("GridSampleGrad", {c.grads[0], c.inputs[0], c.inputs[1]}, c.node.attrs);
          return std::vector<Output>{g[0], g[1]};
        })
        .doc(
            "Samples NHWC x at grid [N,OH,OW,2] of (x, y) in [-1, 1] (ONNX GridSample, PyTorch grid_sample): "
            "bilinear, nearest (halves to even) or bicubic (A = -0.75); padding zeros, border or reflection; "
            "align_corners maps -1 and 1 to the corner pixels' centres instead of their outer edges.");

const OpRegistrar grid_sample_grad_registration =
    grid_sample_op("GridSampleGrad", 3)
        .outputs(2)
        .shape_fn(grid_sample_shape_fn<true>)
        .no_gradient("a gradient op; second-order gradients are not supported")
        .doc(
            "(g, x, grid) -> (dx, dgrid) of bilinear or nearest GridSample; dgrid is 0 for nearest and where "
            "border padding clips.");

// RoiAlign: x [N, H, W, C] pooled over rois [R, 4] (x1, y1, x2, y2) of
// images batch_indices [R] into [R, OH, OW, C].
std::vector<TensorSpec> roi_align_shape_fn(const InferContext& c) {
  c.expect_rank(0, 4);
  c.expect_dtype(0, DType::kFloat32);
  c.expect_rank(1, 2);
  c.expect_dtype(1, DType::kFloat32);
  c.expect_rank(2, 1);
  if (c.dtype(2) != DType::kInt32 && c.dtype(2) != DType::kInt64)
    c.fail("batch_indices must be int32 or int64, got " + c.input(2).to_string());
  const Shape &rois = c.shape(1), &indices = c.shape(2);
  if ((rois[1] >= 0 && rois[1] != 4) || (rois[0] >= 0 && indices[0] >= 0 && rois[0] != indices[0]))
    c.fail("rois " + c.input(1).to_string() + " must be [R, 4] and batch_indices " + c.input(2).to_string() + " [R]");
  const Attrs& a = c.attrs();
  const int64_t oh = a.get_int("output_height"), ow = a.get_int("output_width");
  if (oh < 1 || ow < 1)
    c.fail("output_height and output_width must be positive, got " + std::to_string(oh) + ", " + std::to_string(ow));
  if (a.get_int("sampling_ratio") < 0) c.fail("sampling_ratio must be 0 (adaptive) or positive");
  const std::string& mode = a.get_string("mode");
  if (mode != "avg" && mode != "max") c.fail("mode must be avg or max, got " + mode);
  if (!std::isfinite(a.get_float("spatial_scale"))) c.fail("spatial_scale must be finite");
  const int64_t r = rois[0] >= 0 ? rois[0] : indices[0];
  return {{DType::kFloat32, Shape{r, oh, ow, c.shape(0)[3]}}};
}

const OpRegistrar roi_align_registration =
    OpDefBuilder("RoiAlign")
        .inputs(3)
        .attr("mode", AttrType::kString, std::string("avg"))
        .attr("output_height", AttrType::kInt, int64_t{1})
        .attr("output_width", AttrType::kInt, int64_t{1})
        .attr("sampling_ratio", AttrType::kInt, int64_t{0})
        .attr("spatial_scale", AttrType::kFloat, 1.0)
        .attr("half_pixel", AttrType::kBool, true)
        .shape_fn(roi_align_shape_fn)
        .no_gradient("detection heads are imported for inference")
        .doc(
            "Pools NHWC x over each region of interest (x1, y1, x2, y2) of its image into [OH, OW] bins, averaging "
            "(or taking the largest of) bilinear samples per bin (ONNX RoiAlign, Mask R-CNN).");

}  // namespace
}  // namespace hub
