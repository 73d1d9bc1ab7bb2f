// Resize and ResizeGrad (formulas in hub/ops/resize.h).
#include "hub/ops/resize.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "hub/core/error.h"
#include "hub/ops/registry.h"

namespace hub {
namespace ops {

namespace {

template <class E>
struct Named {
  const char* name;
  E value;
};
constexpr Named<ResampleMode> kModes[] = {{"nearest", ResampleMode::kNearest}, {"linear", ResampleMode::kLinear}};
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
  std::vector<double> scales;
};

// "" or what is wrong with the attributes, naming the attribute and value.
std::string parse(const Attrs& attrs, Parsed* p) {
  const std::vector<int64_t>& size = attrs.get_ints("size");
  if (size.size() != 2 || size[0] < 1 || size[1] < 1)
    return "attribute size must be [OH, OW] with OH, OW >= 1, got " + attr_to_string(size);
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
  p->scales = attrs.get_floats("scales");
  if (!p->scales.empty() && (p->scales.size() != 2 || !(p->scales[0] > 0) || !(p->scales[1] > 0) ||
                             !std::isfinite(p->scales[0]) || !std::isfinite(p->scales[1])))
    return "attribute scales must be empty or [sh, sw] with positive finite entries, got " + attr_to_string(p->scales);
  return "";
}

}  // namespace

ResamplePlan resize_plan(const Attrs& attrs, int64_t in_h, int64_t in_w) {
  Parsed p;
  std::string error = parse(attrs, &p);
  HUB_CHECK(error.empty(), error);
  const double sh = p.scales.empty() ? static_cast<double>(p.oh) / static_cast<double>(in_h) : p.scales[0];
  const double sw = p.scales.empty() ? static_cast<double>(p.ow) / static_cast<double>(in_w) : p.scales[1];
  return {resample_axis(in_h, p.oh, sh, p.mode, p.coordinates, p.nearest),
          resample_axis(in_w, p.ow, sw, p.mode, p.coordinates, p.nearest)};
}

Attrs ResizeOptions::to_attrs() const {
  return Attrs()
      .set("size", size)
      .set("mode", mode)
      .set("coordinate_transformation_mode", coordinate_transformation_mode)
      .set("nearest_mode", nearest_mode)
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

std::vector<TensorSpec> resize_shape_fn(const InferContext& c) {
  c.expect_rank(0, 4);
  c.expect_dtype(0, DType::kFloat32);
  ops::Parsed p = checked(c);
  const Shape& x = c.shape(0);
  if (x[1] == 0 || x[2] == 0) c.fail("cannot resize an empty image " + c.input(0).to_string());
  return {{DType::kFloat32, Shape{x[0], p.oh, p.ow, x[3]}}};
}

// ResizeGrad(x_like, grad): grad must have Resize(x_like)'s shape.
std::vector<TensorSpec> resize_grad_shape_fn(const InferContext& c) {
  for (int i = 0; i < 2; ++i) {
    c.expect_rank(i, 4);
    c.expect_dtype(i, DType::kFloat32);
  }
  ops::Parsed p = checked(c);
  const Shape& x = c.shape(0);
  if (x[1] == 0 || x[2] == 0) c.fail("cannot resize an empty image " + c.input(0).to_string());
  const Shape out{x[0], p.oh, p.ow, x[3]};
  if (!c.shape(1).compatible_with(out))
    c.fail("grad " + c.input(1).to_string() + " does not match the resized shape " + out.to_string() + " of " +
           c.input(0).to_string());
  return {c.input(0)};
}

OpDefBuilder resize_op(const char* name, int inputs, ShapeFn shape_fn) {
  OpDefBuilder b(name);
  b.inputs(inputs)
      .attr("size", AttrType::kInts)
      .attr("mode", AttrType::kString, std::string("nearest"))
      .attr("coordinate_transformation_mode", AttrType::kString, std::string("half_pixel"))
      .attr("nearest_mode", AttrType::kString, std::string("round_prefer_floor"))
      .attr("scales", AttrType::kFloats, std::vector<double>{})
      .shape_fn(std::move(shape_fn));
  return b;
}

const OpRegistrar resize_registration =
    resize_op("Resize", 1, resize_shape_fn)
        .grad([](const GradContext& c) {
          return std::vector<Output>{c.scope.op("ResizeGrad", {c.inputs[0], c.grads[0]}, c.node.attrs)};
        })
        .doc(
            "Resize NHWC images to size [OH,OW]: nearest or (bi)linear with ONNX's coordinate "
            "transformation "
            "and nearest modes.");

const OpRegistrar resize_grad_registration =
    resize_op("ResizeGrad", 2, resize_grad_shape_fn)
        .grad([](const GradContext& c) {
          return std::vector<Output>{Output{}, c.scope.op("Resize", {c.grads[0]}, c.node.attrs)};
        })
        .doc(
            "Gradient of Resize: grad added back to the pixels each output read, by their "
            "weights.");

}  // namespace
}  // namespace hub
