#include "hub/ops/conv2d.h"

#include "hub/ops/registry.h"

namespace hub {
namespace ops {

std::string conv_geometry(const Shape& x, const Shape& w, const Attrs& attrs, bool depthwise, ConvGeometry* out) {
  const std::string shapes = "input " + x.to_string() + ", filter " + w.to_string();
  if (x.rank() != 4) return "input must have rank 4 [N,H,W,C], got " + shapes;
  if (w.rank() != 4)
    return std::string("filter must have rank 4 ") + (depthwise ? "[KH,KW,C,M]" : "[KH,KW,C/G,O]") + ", got " + shapes;
  for (int i = 0; i < 4; ++i)
    if (w[i] == 0) return "filter has a zero dimension (" + shapes + ")";
  ConvGeometry g{};
  g.n = x[0];
  g.h = x[1];
  g.w = x[2];
  g.c = x[3] >= 0 ? x[3] : (depthwise ? w[2] : kUnknownDim);
  g.kh = w[0];
  g.kw = w[1];
  if (depthwise) {
    if (x[3] >= 0 && w[2] >= 0 && x[3] != w[2])
      return "input channels " + std::to_string(x[3]) + " != filter input channels " + std::to_string(w[2]) + " (" +
             shapes + ")";
    g.m = w[3];
    g.oc = g.c >= 0 && w[3] >= 0 ? g.c * w[3] : kUnknownDim;
    g.groups = g.c;
    g.cg = 1;
    g.og = g.m;
  } else {
    if (g.c >= 0 && w[2] >= 0 && g.c % w[2] != 0)
      return "input channels " + std::to_string(g.c) + " are not a multiple of the filter's input channels " +
             std::to_string(w[2]) + " (groups = C / filter input channels; " + shapes + ")";
    g.m = 1;
    g.oc = w[3];
    g.cg = w[2];
    g.groups = g.c >= 0 && w[2] >= 0 ? g.c / w[2] : kUnknownDim;
    if (g.groups > 0 && g.oc >= 0 && g.oc % g.groups != 0)
      return "output channels " + std::to_string(g.oc) + " are not a multiple of the " + std::to_string(g.groups) +
             " groups (" + shapes + ")";
    g.og = g.groups > 0 && g.oc >= 0 ? g.oc / g.groups : kUnknownDim;
  }
  const std::vector<int64_t>& raw_strides = attrs.get_ints("strides");
  const std::vector<int64_t>& raw_dilations = attrs.get_ints("dilations");
  auto strides = spatial_pair(raw_strides);
  auto dilations = spatial_pair(raw_dilations);
  if (!strides || strides->first <= 0 || strides->second <= 0)
    return "strides must be [sh,sw] (or [1,sh,sw,1]) with positive entries, got " + attr_to_string(raw_strides) + " (" +
           shapes + ")";
  if (!dilations || dilations->first <= 0 || dilations->second <= 0)
    return "dilations must be [dh,dw] (or [1,dh,dw,1]) with positive entries, got " + attr_to_string(raw_dilations) +
           " (" + shapes + ")";
  Padding padding;
  Pads2D pads;
  std::string error = padding_attrs(attrs, &padding, &pads);
  if (!error.empty()) return error + " (" + shapes + ")";
  g.sh = strides->first;
  g.sw = strides->second;
  g.dh = dilations->first;
  g.dw = dilations->second;
  // One spatial dim: output size and padding, or an error when the window does not fit.
  auto resolve = [&](int64_t in, int64_t k, int64_t s, int64_t d, int64_t before, int64_t after, const char* dim,
                     int64_t* o, int64_t* pad_before, int64_t* pad_after) -> std::string {
    *o = kUnknownDim;
    *pad_before = *pad_after = 0;
    if (k < 0) return "";
    WindowDim r = window_dim(in, k, s, d, padding, before, after);
    if (in >= 0 && r.out < 1 && !(padding == Padding::kSame && in == 0))
      return "window " + std::to_string((k - 1) * d + 1) + " (dilated) exceeds input " + dim + " " +
             std::to_string(in) + " plus padding " + std::to_string(r.pad_before + r.pad_after) + " (" + shapes + ")";
    *o = in == 0 && padding == Padding::kSame ? 0 : r.out;  // SAME on an empty input: empty output
    *pad_before = r.pad_before;
    *pad_after = r.pad_after;
    return "";
  };
  error = resolve(g.h, g.kh, g.sh, g.dh, pads.top, pads.bottom, "height", &g.oh, &g.pad_top, &g.pad_bottom);
  if (error.empty())
    error = resolve(g.w, g.kw, g.sw, g.dw, pads.left, pads.right, "width", &g.ow, &g.pad_left, &g.pad_right);
  if (!error.empty()) return error;
  *out = g;
  return "";
}

Attrs ConvOptions::to_attrs() const {
  return Attrs()
      .set("strides", strides)
      .set("padding", padding)
      .set("explicit_paddings", explicit_paddings)
      .set("dilations", dilations);
}

}  // namespace ops

namespace {

ops::ConvGeometry infer_geometry(const InferContext& c, int x, int w, bool depthwise) {
  for (int i = 0; i < c.num_inputs(); ++i) c.expect_dtype(i, DType::kFloat32);
  ops::ConvGeometry g;
  std::string error = ops::conv_geometry(c.shape(x), c.shape(w), c.attrs(), depthwise, &g);
  if (!error.empty()) c.fail(error);
  return g;
}

Shape out_shape(const ops::ConvGeometry& g) { return Shape{g.n, g.oh, g.ow, g.oc}; }

std::vector<TensorSpec> forward_shape(const InferContext& c, bool depthwise) {
  return {{DType::kFloat32, out_shape(infer_geometry(c, 0, 1, depthwise))}};
}

// Backprop ops: inputs (x or x_like, w or w_like, dy); output has the shape of
// input `like`. dy must match the forward output.
std::vector<TensorSpec> backprop_shape(const InferContext& c, bool depthwise, int like) {
  ops::ConvGeometry g = infer_geometry(c, 0, 1, depthwise);
  c.expect_rank(2, 4);
  if (!c.shape(2).compatible_with(out_shape(g)))
    c.fail("dy " + c.input(2).to_string() + " does not match the forward output " + out_shape(g).to_string() +
           " of input " + c.input(0).to_string() + " and filter " + c.input(1).to_string());
  return {{DType::kFloat32, c.shape(like)}};
}

struct Names {
  const char* forward;
  const char* input;
  const char* filter;
};
constexpr Names kConv{"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"};
constexpr Names kDepthwise{"DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput",
                           "DepthwiseConv2dNativeBackpropFilter"};

GradFn forward_grad(Names n) {
  return [n](const GradContext& c) -> std::vector<Output> {
    const Output& x = c.inputs[0];
    const Output& w = c.inputs[1];
    const Output& g = c.grads[0];
    return {c.scope.op(n.input, {x, w, g}, c.node.attrs, "dx"), c.scope.op(n.filter, {x, w, g}, c.node.attrs, "dw")};
  };
}
// dx = BackpropInput(x_like, w, dy) is bilinear in (w, dy).
GradFn backprop_input_grad(Names n) {
  return [n](const GradContext& c) -> std::vector<Output> {
    const Output& w = c.inputs[1];
    const Output& dy = c.inputs[2];
    const Output& g = c.grads[0];  // shaped like x
    return {Output{}, c.scope.op(n.filter, {g, w, dy}, c.node.attrs, "dw"),
            c.scope.op(n.forward, {g, w}, c.node.attrs, "ddy")};
  };
}
// dw = BackpropFilter(x, w_like, dy) is bilinear in (x, dy).
GradFn backprop_filter_grad(Names n) {
  return [n](const GradContext& c) -> std::vector<Output> {
    const Output& x = c.inputs[0];
    const Output& dy = c.inputs[2];
    const Output& g = c.grads[0];  // shaped like w
    return {c.scope.op(n.input, {x, g, dy}, c.node.attrs, "dx"), Output{},
            c.scope.op(n.forward, {x, g}, c.node.attrs, "ddy")};
  };
}

#define HUB_CONV_ATTRS                                                    \
  .attr("strides", AttrType::kInts, std::vector<int64_t>{1, 1})           \
      .attr("padding", AttrType::kString)                                 \
      .attr("explicit_paddings", AttrType::kInts, std::vector<int64_t>{}) \
      .attr("dilations", AttrType::kInts, std::vector<int64_t>{1, 1})

}  // namespace

HUB_REGISTER_OP(Conv2D)
    .inputs(2) HUB_CONV_ATTRS.shape_fn([](const InferContext& c) { return forward_shape(c, false); })
    .grad(forward_grad(kConv))
    .doc(
        "2-D convolution, NHWC x, filter [KH,KW,C/G,O] (G groups = C / filter dim 2), "
        "SAME/VALID/EXPLICIT padding.");
HUB_REGISTER_OP(Conv2DBackpropInput)
    .inputs(3) HUB_CONV_ATTRS.shape_fn([](const InferContext& c) { return backprop_shape(c, false, 0); })
    .grad(backprop_input_grad(kConv))
    .doc("Gradient of Conv2D with respect to its input (shape of input 0).");
HUB_REGISTER_OP(Conv2DBackpropFilter)
    .inputs(3) HUB_CONV_ATTRS.shape_fn([](const InferContext& c) { return backprop_shape(c, false, 1); })
    .grad(backprop_filter_grad(kConv))
    .doc("Gradient of Conv2D with respect to its filter (shape of input 1).");
HUB_REGISTER_OP(DepthwiseConv2dNative)
    .inputs(2) HUB_CONV_ATTRS.shape_fn([](const InferContext& c) { return forward_shape(c, true); })
    .grad(forward_grad(kDepthwise))
    .doc("Depthwise 2-D convolution, filter [KH,KW,C,M] -> C*M channels.");
HUB_REGISTER_OP(DepthwiseConv2dNativeBackpropInput)
    .inputs(3) HUB_CONV_ATTRS.shape_fn([](const InferContext& c) { return backprop_shape(c, true, 0); })
    .grad(backprop_input_grad(kDepthwise))
    .doc("Gradient of DepthwiseConv2dNative with respect to its input.");
HUB_REGISTER_OP(DepthwiseConv2dNativeBackpropFilter)
    .inputs(3) HUB_CONV_ATTRS.shape_fn([](const InferContext& c) { return backprop_shape(c, true, 1); })
    .grad(backprop_filter_grad(kDepthwise))
    .doc("Gradient of DepthwiseConv2dNative with respect to its filter.");

#undef HUB_CONV_ATTRS

namespace ops {

Output conv2d(const Scope& s, Output x, Output w, const ConvOptions& o, const std::string& name) {
  return s.op("Conv2D", {x, w}, o.to_attrs(), name);
}
Output conv2d_backprop_input(const Scope& s, Output x_like, Output w, Output dy, const ConvOptions& o,
                             const std::string& name) {
  return s.op("Conv2DBackpropInput", {x_like, w, dy}, o.to_attrs(), name);
}
Output conv2d_backprop_filter(const Scope& s, Output x, Output w_like, Output dy, const ConvOptions& o,
                              const std::string& name) {
  return s.op("Conv2DBackpropFilter", {x, w_like, dy}, o.to_attrs(), name);
}
Output depthwise_conv2d(const Scope& s, Output x, Output w, const ConvOptions& o, const std::string& name) {
  return s.op("DepthwiseConv2dNative", {x, w}, o.to_attrs(), name);
}
Output depthwise_conv2d_backprop_input(const Scope& s, Output x_like, Output w, Output dy, const ConvOptions& o,
                                       const std::string& name) {
  return s.op("DepthwiseConv2dNativeBackpropInput", {x_like, w, dy}, o.to_attrs(), name);
}
Output depthwise_conv2d_backprop_filter(const Scope& s, Output x, Output w_like, Output dy, const ConvOptions& o,
                                        const std::string& name) {
  return s.op("DepthwiseConv2dNativeBackpropFilter", {x, w_like, dy}, o.to_attrs(), name);
}

}  // namespace ops
}  // namespace hub
