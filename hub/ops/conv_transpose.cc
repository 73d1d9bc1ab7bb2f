// Conv2DTranspose (formulas in hub/ops/conv_transpose.h).
#include "hub/ops/conv_transpose.h"

#include <algorithm>

#include "hub/core/error.h"
#include "hub/ops/padding.h"
#include "hub/ops/registry.h"

namespace hub {
namespace ops {

namespace {

struct TransposeAttrs {
  int64_t sh, sw, dh, dw, oph, opw, groups;
  Pads2D pads;
};

// Parses and checks the attributes; "" or what is wrong.
std::string parse(const Attrs& attrs, TransposeAttrs* t) {
  auto strides = spatial_pair(attrs.get_ints("strides"));
  auto dilations = spatial_pair(attrs.get_ints("dilations"));
  const std::vector<int64_t>& raw_op = attrs.get_ints("output_padding");
  if (!strides || strides->first <= 0 || strides->second <= 0)
    return "strides must be [sh,sw] (or [1,sh,sw,1]) with positive entries, got " +
           attr_to_string(attrs.get_ints("strides"));
  if (!dilations || dilations->first <= 0 || dilations->second <= 0)
    return "dilations must be [dh,dw] (or [1,dh,dw,1]) with positive entries, got " +
           attr_to_string(attrs.get_ints("dilations"));
  std::optional<Pads2D> pads = parse_explicit_paddings(attrs.get_ints("explicit_paddings"));
  if (!pads)
    return "explicit_paddings must be [top,bottom,left,right] (or [0,0,top,bottom,left,right,0,0]) "
           "with "
           "entries >= 0, got " +
           attr_to_string(attrs.get_ints("explicit_paddings"));
  if (raw_op.size() != 2 || raw_op[0] < 0 || raw_op[1] < 0 || raw_op[0] >= strides->first ||
      raw_op[1] >= strides->second)
    return "output_padding must be [oph,opw] with 0 <= op < stride (strides " +
           attr_to_string(attrs.get_ints("strides")) + "), got " + attr_to_string(raw_op);
  t->groups = attrs.get_int("groups");
  if (t->groups < 1) return "groups must be >= 1, got " + std::to_string(t->groups);
  t->sh = strides->first;
  t->sw = strides->second;
  t->dh = dilations->first;
  t->dw = dilations->second;
  t->oph = raw_op[0];
  t->opw = raw_op[1];
  t->pads = *pads;
  return "";
}

Attrs conv_attrs(const TransposeAttrs& t) {
  const Pads2D& p = t.pads;
  return ConvOptions{{t.sh, t.sw},
                     "EXPLICIT",
                     {t.dh, t.dw},
                     {p.top, std::max<int64_t>(0, p.bottom - t.oph), p.left, std::max<int64_t>(0, p.right - t.opw)}}
      .to_attrs();
}

// (in-1)*s - before - after + d*(k-1) + 1 + op, or unknown.
int64_t transposed_size(int64_t in, int64_t k, int64_t s, int64_t d, int64_t before, int64_t after, int64_t op) {
  if (in < 0 || k < 0) return kUnknownDim;
  return (in - 1) * s - before - after + d * (k - 1) + 1 + op;
}

}  // namespace

Attrs ConvTransposeOptions::to_attrs() const {
  return Attrs()
      .set("strides", strides)
      .set("explicit_paddings", explicit_paddings)
      .set("output_padding", output_padding)
      .set("dilations", dilations)
      .set("groups", groups);
}

Attrs conv_transpose_conv_attrs(const Attrs& attrs) {
  TransposeAttrs t;
  std::string error = parse(attrs, &t);
  HUB_CHECK(error.empty(), error);
  return conv_attrs(t);
}

std::string conv_transpose_geometry(const Shape& x, const Shape& w, const Attrs& attrs, ConvGeometry* out) {
  const std::string shapes = "input " + x.to_string() + ", filter " + w.to_string();
  if (x.rank() != 4) return "input must have rank 4 [N,H,W,C], got " + shapes;
  if (w.rank() != 4) return "filter must have rank 4 [KH,KW,O/G,C], got " + shapes;
  for (int i = 0; i < 4; ++i)
    if (w[i] == 0) return "filter has a zero dimension (" + shapes + ")";
  TransposeAttrs t;
  std::string error = parse(attrs, &t);
  if (!error.empty()) return error + " (" + shapes + ")";
  if (x[3] >= 0 && w[3] >= 0 && x[3] != w[3])
    return "input channels " + std::to_string(x[3]) + " != filter's last dim " + std::to_string(w[3]) + " (" + shapes +
           ")";
  const int64_t c = x[3] >= 0 ? x[3] : w[3];
  if (c >= 0 && c % t.groups != 0)
    return "input channels " + std::to_string(c) + " are not a multiple of groups " + std::to_string(t.groups) + " (" +
           shapes + ")";
  const int64_t oh = transposed_size(x[1], w[0], t.sh, t.dh, t.pads.top, t.pads.bottom, t.oph);
  const int64_t ow = transposed_size(x[2], w[1], t.sw, t.dw, t.pads.left, t.pads.right, t.opw);
  if ((oh != kUnknownDim && oh < 1) || (ow != kUnknownDim && ow < 1))
    return "output size " + std::to_string(oh) + "x" + std::to_string(ow) +
           " is empty: the paddings crop more than the full result (" + shapes + ", explicit_paddings " +
           attr_to_string(attrs.get_ints("explicit_paddings")) + ")";
  const int64_t o = w[2] >= 0 ? w[2] * t.groups : kUnknownDim;
  ConvGeometry g;
  error = conv_geometry(Shape{x[0], oh, ow, o}, w, conv_attrs(t), false, &g);
  if (!error.empty()) return error;
  // The convolution's output is x (op < stride keeps its size at H x W).
  HUB_CHECK((x[1] < 0 || g.oh == x[1]) && (x[2] < 0 || g.ow == x[2]),
            "transposed convolution geometry does not invert: " + shapes);
  g.oh = x[1];
  g.ow = x[2];
  g.oc = c;
  if (g.groups < 0 && c >= 0) g.groups = t.groups;
  *out = g;
  return "";
}

}  // namespace ops

namespace {

std::vector<TensorSpec> shape_fn(const InferContext& c) {
  for (int i = 0; i < 2; ++i) c.expect_dtype(i, DType::kFloat32);
  ops::ConvGeometry g;
  std::string error = ops::conv_transpose_geometry(c.shape(0), c.shape(1), c.attrs(), &g);
  if (!error.empty()) c.fail(error);
  return {{DType::kFloat32, Shape{g.n, g.h, g.w, g.c}}};
}

// y = BackpropInput_conv(w, x): linear in x and in w.
std::vector<Output> grad(const GradContext& c) {
  const Output& x = c.inputs[0];
  const Output& w = c.inputs[1];
  const Output& g = c.grads[0];
  const Attrs conv = ops::conv_transpose_conv_attrs(c.node.attrs);
  return {c.scope.op("Conv2D", {g, w}, conv, "dx"), c.scope.op("Conv2DBackpropFilter", {g, w, x}, conv, "dw")};
}

}  // namespace

HUB_REGISTER_OP(Conv2DTranspose)
    .inputs(2)
    .attr("strides", AttrType::kInts, std::vector<int64_t>{1, 1})
    .attr("explicit_paddings", AttrType::kInts, std::vector<int64_t>{0, 0, 0, 0})
    .attr("output_padding", AttrType::kInts, std::vector<int64_t>{0, 0})
    .attr("dilations", AttrType::kInts, std::vector<int64_t>{1, 1})
    .attr("groups", AttrType::kInt, int64_t{1})
    .shape_fn(shape_fn)
    .grad(grad)
    .doc(
        "Transposed 2-D convolution (ONNX ConvTranspose), NHWC x [N,H,W,C], filter [KH,KW,O/G,C] "
        "-> "
        "[N,OH,OW,O].");

namespace ops {

Output conv2d_transpose(const Scope& s, Output x, Output w, const ConvTransposeOptions& o, const std::string& name) {
  return s.op("Conv2DTranspose", {x, w}, o.to_attrs(), name);
}

}  // namespace ops
}  // namespace hub
