// TensorFlow <-> hub: convolutions (and the fused forms TensorFlow's
// grappler and the TF.js converter write), bias, batch normalization,
// activations, softmax, pooling, LRN. NHWC only, as hub.
#include "hub/core/error.h"
#include "hub/interop/tf/ops.h"
#include "hub/ops/array.h"

namespace hub::tf {

namespace {

constexpr int kDtFloat = 1;

// TensorFlow's [1, a, b, 1] -> [a, b].
std::vector<int64_t> spatial(const OpContext& c, const std::string& attr) {
  std::vector<int64_t> v = c.attr_ints(attr);
  if (v.size() != 4 || v[0] != 1 || v[3] != 1) c.fail_attr(attr, "must be [1, h, w, 1] (NHWC)");
  return {v[1], v[2]};
}

void require_float(const OpContext& c) {
  if (c.attr_dtype("T") != DType::kFloat32) c.fail_attr("T", "only float32 is supported");
}

void require_nhwc(const OpContext& c) { c.attr_choice("data_format", {"NHWC"}); }

// The activation in fused_ops after BiasAdd ("" for none).
std::string fused_activation(const OpContext& c, const std::vector<std::string>& fused) {
  if (fused.empty() || fused[0] != "BiasAdd" || c.attr_int("num_args") != 1)
    c.fail_attr("fused_ops", "the first fused op must be BiasAdd with one argument");
  if (fused.size() == 1) return "";
  const std::string& act = fused[1];
  if (fused.size() > 2 ||
      (act != "Relu" && act != "Relu6" && act != "Elu" && act != "LeakyRelu" && act != "Sigmoid" && act != "Tanh"))
    c.fail_attr("fused_ops", "supported: BiasAdd, then at most one of Relu, Relu6, Elu, LeakyRelu, Sigmoid, Tanh");
  return act;
}

// y (the product) + bias, then the activation; the last op gets the node's name.
void bias_and_activation(OpContext& c, Output y, const std::string& act) {
  if (c.num_inputs() != 3)
    c.fail("expects 3 inputs (two operands and the bias), got " + std::to_string(c.num_inputs()));
  if (act.empty()) {
    c.set_output(0, c.add("BiasAdd", {y, c.weight(2)}));
    return;
  }
  y = c.scope().op("BiasAdd", {y, c.weight(2)}, {}, "BiasAdd");
  Attrs a;
  if (act == "LeakyRelu") a.set("alpha", static_cast<double>(c.attr_float("leakyrelu_alpha")));
  c.set_output(0, c.add(act, {y}, a));
}

// TensorFlow's padding attributes as hub's: SAME, VALID, or EXPLICIT with
// explicit_paddings [0, 0, top, bottom, left, right, 0, 0] (hub accepts
// TensorFlow's form).
void set_padding(const OpContext& c, Attrs& a, bool explicit_allowed) {
  const std::string padding = explicit_allowed ? c.attr_choice("padding", {"SAME", "VALID", "EXPLICIT"})
                                               : c.attr_choice("padding", {"SAME", "VALID"});
  a.set("padding", padding);
  if (padding != "EXPLICIT") return;
  std::vector<int64_t> p = c.attr_ints("explicit_paddings");
  if (p.size() != 8 || p[0] || p[1] || p[6] || p[7])
    c.fail_attr("explicit_paddings", "must pad only H and W (8 values, NHWC)");
  for (int64_t v : p)
    if (v < 0) c.fail_attr("explicit_paddings", "must not be negative");
  a.set("explicit_paddings", p);
}

// Conv2D (plain or grouped: TensorFlow and hub both take the groups from the
// filter's input depth), DepthwiseConv2dNative and their fused forms.
void map_conv(OpContext& c) {
  require_float(c);
  require_nhwc(c);
  const bool depthwise = c.op() == "DepthwiseConv2dNative" || c.op() == "FusedDepthwiseConv2dNative";
  const bool fused = c.op() == "_FusedConv2D" || c.op() == "FusedDepthwiseConv2dNative";
  Attrs a;
  a.set("strides", spatial(c, "strides")).set("dilations", spatial(c, "dilations"));
  set_padding(c, a, true);
  const std::string hub_op = depthwise ? "DepthwiseConv2dNative" : "Conv2D";
  if (!fused) {
    c.set_output(0, c.add(hub_op, {c.input(0), c.weight(1)}, a));
    return;
  }
  const std::string act = fused_activation(c, c.attr_strings("fused_ops"));
  bias_and_activation(c, c.scope().op(hub_op, {c.input(0), c.weight(1)}, a, hub_op), act);
}

void map_fused_matmul(OpContext& c) {
  require_float(c);
  const std::string act = fused_activation(c, c.attr_strings("fused_ops"));
  Attrs a;
  a.set("transpose_a", c.attr_bool("transpose_a")).set("transpose_b", c.attr_bool("transpose_b"));
  bias_and_activation(c, c.scope().op("MatMul", {c.input(0), c.weight(1)}, a, "MatMul"), act);
}

void map_bias_add(OpContext& c) {
  require_nhwc(c);
  c.set_output(0, c.add("BiasAdd", {c.input(0), c.weight(1)}));
}

// FusedBatchNorm / V2 / V3. Output 0 always; outputs 1 and 2 (the mean and
// variance) in inference mode, where they are the inputs; the reserve
// spaces never.
void map_fused_batch_norm(OpContext& c) {
  require_float(c);
  require_nhwc(c);
  if (c.op() != "FusedBatchNorm" && c.attr_dtype("U") != DType::kFloat32) c.fail_attr("U", "only float32 is supported");
  const bool training = c.attr_bool("is_training");
  if (training && c.attr_float("exponential_avg_factor") != 1.0f)
    c.fail_attr("exponential_avg_factor", "only 1 is supported in training mode");
  const int64_t channels = c.shape(0).dim(-1);
  std::vector<Output> stats;
  for (int i = 3; i < 5; ++i) {
    // In training mode the statistics inputs are unused (often empty).
    if (training && c.shape(i).num_elements() == 0 && channels >= 0)
      stats.push_back(c.scope().op("Const", {}, Attrs().set("value", Tensor::zeros(DType::kFloat32, {channels})),
                                   i == 3 ? "mean" : "variance"));
    else
      stats.push_back(c.weight(i, /*trainable=*/false));
  }
  Attrs a;
  a.set("epsilon", static_cast<double>(c.attr_float("epsilon"))).set("is_training", training);
  std::vector<Output> y = c.add_n("FusedBatchNorm", {c.input(0), c.weight(1), c.weight(2), stats[0], stats[1]}, a);
  c.set_output(0, y[0]);
  for (int k = 1; k < 6; ++k) {
    if (!training && k < 3)
      c.forward(k, k + 2);
    else
      c.set_unavailable(k, "output " + std::to_string(k) + " of " + c.op() + (training ? " in training mode" : "") +
                               " is not supported");
  }
}

void map_activation(OpContext& c) {
  require_float(c);
  Attrs a;
  if (c.op() == "LeakyRelu") a.set("alpha", static_cast<double>(c.attr_float("alpha")));
  c.set_output(0, c.add(c.op(), {c.input(0)}, a));
}

// MaxPool (SAME, VALID, EXPLICIT) and AvgPool (SAME, VALID).
void map_pool(OpContext& c) {
  require_float(c);
  require_nhwc(c);
  Attrs a;
  a.set("ksize", spatial(c, "ksize")).set("strides", spatial(c, "strides"));
  set_padding(c, a, c.op() == "MaxPool");
  c.set_output(0, c.add(c.op(), {c.input(0)}, a));
}

// ResizeBilinear / ResizeNearestNeighbor / ResizeBicubic: hub's Resize with
// the coordinate mode TensorFlow's two flags select (hub/ops/resize.h).
// TensorFlow's bicubic reads its weights from a table of 1,024 fractional
// positions; hub computes them exactly (a difference of at most about 1/2048
// of a pixel's position).
void map_resize(OpContext& c) {
  if (c.dtype(0) != DType::kFloat32) c.unsupported("only float32 images are supported");
  // A constant size, or one read at run time from tensors' dims (tf.shape(y)[1:3]).
  std::vector<int64_t> size;
  ops::DimReferences refs;
  const TfValue& v = c.value(1);
  if (!v.constant && v.dims) {
    if (v.dims->size() != 2) c.fail("size (input 1) must hold two numbers");
    for (size_t i = 0; i < 2; ++i) {
      const DimValue& d = (*v.dims)[i];
      if (!d.known() && !d.is_dim()) c.unsupported("a size computed by arithmetic on run-time dims");
      size.push_back(d.known() ? d.value : 0);
      if (!d.known()) refs.add(static_cast<int64_t>(i), d.of, d.dim);
    }
  } else {
    size = c.constant_ints(1, "size");
  }
  if (size.size() != 2 || size[0] < 0 || size[1] < 0 || (refs.from.empty() && (size[0] == 0 || size[1] == 0)))
    c.fail("size (input 1) must be two positive numbers");
  const bool align = c.attr_bool("align_corners"), half = c.attr_bool("half_pixel_centers");
  if (align && half) c.fail_attr("half_pixel_centers", "TensorFlow refuses it together with align_corners");
  const bool linear = c.op() == "ResizeBilinear";
  Attrs a;
  a.set("size", size).set("from", refs.from);
  if (c.op() == "ResizeBicubic") {
    // Keys' A = -0.5 with outside taps dropped for half-pixel centres; the legacy kernel's -0.75
    // with edge pixels repeated otherwise.
    a.set("mode", "cubic")
        .set("coordinate_transformation_mode", align  ? "align_corners"
                                               : half ? "half_pixel"
                                                      : "asymmetric")
        .set("cubic_coeff_a", half ? -0.5 : -0.75)
        .set("exclude_outside", half);
    c.set_output(0, c.add("Resize", refs.inputs(c.input(0)), a));
    return;
  }
  a.set("mode", linear ? "linear" : "nearest");
  if (linear) {
    a.set("coordinate_transformation_mode", align ? "align_corners" : half ? "half_pixel" : "asymmetric");
  } else {
    a.set("coordinate_transformation_mode", align ? "align_corners" : half ? "tf_half_pixel_for_nn" : "asymmetric");
    a.set("nearest_mode", align ? "round_prefer_ceil" : "floor");
  }
  c.set_output(0, c.add("Resize", refs.inputs(c.input(0)), a));
}

void map_lrn(OpContext& c) {
  require_float(c);
  Attrs a;
  a.set("depth_radius", c.attr_int("depth_radius"))
      .set("bias", static_cast<double>(c.attr_float("bias")))
      .set("alpha", static_cast<double>(c.attr_float("alpha")))
      .set("beta", static_cast<double>(c.attr_float("beta")));
  c.set_output(0, c.add("LRN", {c.input(0)}, a));
}

// FakeQuantWithMinMaxVars(PerChannel): the same hub ops. A constant min/max
// (a frozen graph) becomes a non-trainable variable when weights are imported
// as variables, so the range reads a variable as in a training graph.
void map_fake_quant(OpContext& c) {
  const int64_t bits = c.attr_int("num_bits");
  if (bits < 2 || bits > 8) c.unsupported("num_bits = " + std::to_string(bits) + ": hub fake-quantizes to 2..8 bits");
  Attrs a;
  a.set("num_bits", bits).set("narrow_range", c.attr_bool("narrow_range"));
  c.set_output(0, c.add(c.op(), {c.input(0), c.weight(1, false), c.weight(2, false)}, a));
}

// ---- Exporters -------------------------------------------------------------------------

std::vector<int64_t> nhwc4(const std::vector<int64_t>& hw) {
  if (hw.size() == 4) return hw;
  return {1, hw.at(0), hw.at(1), 1};
}

// hub's explicit_paddings [top, bottom, left, right] (or TensorFlow's 8) as
// TensorFlow's [0, 0, top, bottom, left, right, 0, 0].
void export_padding(const Attrs& a, proto::NodeDef& n) {
  const std::string& padding = a.get_string("padding");
  (*n.mutable_attr())["padding"].set_s(padding);
  if (padding != "EXPLICIT") return;
  std::vector<int64_t> p = a.get_ints("explicit_paddings");
  if (p.size() == 4) p = {0, 0, p[0], p[1], p[2], p[3], 0, 0};
  set_ints(n, "explicit_paddings", p);
}

void export_conv(ExportContext& c) {
  const Attrs& a = c.node().attrs;
  auto& n = c.add("", c.node().op, {c.input(0), c.input(1)});
  set_type(n, "T", DType::kFloat32);
  set_ints(n, "strides", nhwc4(a.get_ints("strides")));
  set_ints(n, "dilations", nhwc4(a.get_ints("dilations")));
  export_padding(a, n);
  (*n.mutable_attr())["data_format"].set_s("NHWC");
  if (c.node().op == "Conv2D") (*n.mutable_attr())["use_cudnn_on_gpu"].set_b(true);
  c.set_output(0, n.name());
}

void export_bias_add(ExportContext& c) {
  auto& n = c.add("", "BiasAdd", {c.input(0), c.input(1)});
  set_type(n, "T", DType::kFloat32);
  (*n.mutable_attr())["data_format"].set_s("NHWC");
  c.set_output(0, n.name());
}

// hub's outputs: y, batch mean, biased variance, Bessel-corrected variance;
// TensorFlow's FusedBatchNorm: y, batch mean, Bessel-corrected variance (the
// given mean and variance in inference mode, where hub's 2 and 3 equal them).
void export_fused_batch_norm(ExportContext& c) {
  std::vector<std::string> in;
  for (int i = 0; i < 5; ++i) in.push_back(c.input(i));
  auto& n = c.add("", "FusedBatchNorm", in);
  set_type(n, "T", DType::kFloat32);
  (*n.mutable_attr())["epsilon"].set_f(static_cast<float>(c.node().attrs.get_float("epsilon")));
  (*n.mutable_attr())["is_training"].set_b(c.node().attrs.get_bool("is_training"));
  (*n.mutable_attr())["data_format"].set_s("NHWC");
  c.set_output(0, n.name());
  c.set_output(1, n.name() + ":1");
  c.set_output(3, n.name() + ":2");
  if (!c.node().attrs.get_bool("is_training")) c.set_output(2, n.name() + ":2");
}

// Elu's alpha is TensorFlow's fixed 1; LeakyRelu's is an attribute.
void export_activation(ExportContext& c) {
  const std::string& op = c.node().op;
  if (op == "Elu" && c.node().attrs.get_float("alpha") != 1.0)
    c.fail("Elu with alpha " + attr_to_string(c.node().attrs.get_float("alpha")) +
           " has no TensorFlow equivalent (TensorFlow's alpha is 1)");
  auto& n = c.add("", op, {c.input(0)});
  set_type(n, "T", DType::kFloat32);
  if (op == "LeakyRelu") (*n.mutable_attr())["alpha"].set_f(static_cast<float>(c.node().attrs.get_float("alpha")));
  c.set_output(0, n.name());
}

void export_fake_quant(ExportContext& c) {
  auto& n = c.add("", c.node().op, {c.input(0), c.input(1), c.input(2)});
  (*n.mutable_attr())["num_bits"].set_i(c.node().attrs.get_int("num_bits"));
  (*n.mutable_attr())["narrow_range"].set_b(c.node().attrs.get_bool("narrow_range"));
  c.set_output(0, n.name());
}

// TensorFlow's pooling has no ceil_mode, dilations or count_include_pad, and
// AvgPool no EXPLICIT padding.
void export_pool(ExportContext& c) {
  const Attrs& a = c.node().attrs;
  const bool max = c.node().op == "MaxPool";
  if (a.get_bool("ceil_mode")) c.fail("ceil_mode has no TensorFlow equivalent");
  if (max && nhwc4(a.get_ints("dilations")) != std::vector<int64_t>{1, 1, 1, 1})
    c.fail("dilated pooling has no TensorFlow equivalent");
  if (!max && a.get_bool("count_include_pad")) c.fail("count_include_pad has no TensorFlow equivalent");
  if (!max && a.get_string("padding") == "EXPLICIT") c.fail("TensorFlow's AvgPool has no EXPLICIT padding");
  auto& n = c.add("", c.node().op, {c.input(0)});
  set_type(n, "T", DType::kFloat32);
  set_ints(n, "ksize", nhwc4(a.get_ints("ksize")));
  set_ints(n, "strides", nhwc4(a.get_ints("strides")));
  export_padding(a, n);
  (*n.mutable_attr())["data_format"].set_s("NHWC");
  c.set_output(0, n.name());
}

// The inverse of map_resize: only the modes TensorFlow's flags express.
void export_resize(ExportContext& c) {
  const Attrs& a = c.node().attrs;
  if (!a.get_floats("scales").empty()) c.fail("explicit scales have no TensorFlow equivalent");
  const std::string& mode = a.get_string("mode");
  const std::string& coord = a.get_string("coordinate_transformation_mode");
  const std::string& nearest = a.get_string("nearest_mode");
  bool align = false, half = false;
  const double cubic_a = a.get_float("cubic_coeff_a");
  const bool exclude = a.get_bool("exclude_outside");
  if (mode == "linear" && (coord == "asymmetric" || coord == "align_corners" || coord == "half_pixel")) {
    align = coord == "align_corners";
    half = coord == "half_pixel";
  } else if (mode == "cubic" &&
             ((coord == "half_pixel" && cubic_a == -0.5 && exclude) ||
              ((coord == "asymmetric" || coord == "align_corners") && cubic_a == -0.75 && !exclude))) {
    align = coord == "align_corners";
    half = coord == "half_pixel";
  } else if (mode == "nearest" && ((coord == "asymmetric" && nearest == "floor") ||
                                   (coord == "align_corners" && nearest == "round_prefer_ceil") ||
                                   (coord == "tf_half_pixel_for_nn" && nearest == "floor"))) {
    align = coord == "align_corners";
    half = coord == "tf_half_pixel_for_nn";
  } else {
    c.fail("mode " + mode + " with " + coord + (mode == "nearest" ? " and " + nearest : "") +
           (mode == "cubic" ? " and cubic_coeff_a " + attr_to_string(cubic_a) + (exclude ? ", exclude_outside" : "")
                            : "") +
           " has no TensorFlow equivalent");
  }
  // A run-time size (entries 0) is read from the reference inputs' shapes.
  const auto& size = a.get_ints("size");
  if ((size[0] == 0 || size[1] == 0) && a.get_ints("from").empty())
    c.fail("a size of floor(input size x scale) at run time has no TensorFlow equivalent");
  std::string sz = a.get_ints("from").empty()
                       ? c.constant("size", Tensor::from_vector<int32_t>(
                                                {2}, {static_cast<int32_t>(size[0]), static_cast<int32_t>(size[1])}))
                       : dims_with_references(c, size);
  auto& n = c.add("",
                  mode == "linear"  ? "ResizeBilinear"
                  : mode == "cubic" ? "ResizeBicubic"
                                    : "ResizeNearestNeighbor",
                  {c.input(0), sz});
  set_type(n, "T", DType::kFloat32);
  (*n.mutable_attr())["align_corners"].set_b(align);
  (*n.mutable_attr())["half_pixel_centers"].set_b(half);
  c.set_output(0, n.name());
}

void export_lrn(ExportContext& c) {
  const Attrs& a = c.node().attrs;
  auto& n = c.add("", "LRN", {c.input(0)});
  set_type(n, "T", DType::kFloat32);
  (*n.mutable_attr())["depth_radius"].set_i(a.get_int("depth_radius"));
  (*n.mutable_attr())["bias"].set_f(static_cast<float>(a.get_float("bias")));
  (*n.mutable_attr())["alpha"].set_f(static_cast<float>(a.get_float("alpha")));
  (*n.mutable_attr())["beta"].set_f(static_cast<float>(a.get_float("beta")));
  c.set_output(0, n.name());
}

}  // namespace

void add_nn_importers(std::map<std::string, OpImporter>& m) {
  const auto T = attr_required();
  const auto conv_attrs = [&](bool depthwise, bool fused) {
    std::map<std::string, proto::AttrValue> a = {
        {"T", T},
        {"strides", T},
        {"padding", T},
        {"explicit_paddings", attr_list()},
        {"data_format", attr_s("NHWC")},
        {"dilations", attr_ints({1, 1, 1, 1})},
    };
    if (!depthwise) a["use_cudnn_on_gpu"] = attr_b(true);
    if (fused) {
      a["num_args"] = T;
      a["fused_ops"] = attr_list();
      a["epsilon"] = attr_f(0.0001f);
      a["leakyrelu_alpha"] = attr_f(0.2f);
      a["TArgs"] = attr_list();
    }
    return a;
  };
  m["Conv2D"] = {map_conv, conv_attrs(false, false)};
  m["DepthwiseConv2dNative"] = {map_conv, conv_attrs(true, false)};
  m["_FusedConv2D"] = {map_conv, conv_attrs(false, true)};
  m["FusedDepthwiseConv2dNative"] = {map_conv, conv_attrs(true, true)};
  m["_FusedMatMul"] = {map_fused_matmul,
                       {{"T", T},
                        {"transpose_a", attr_b(false)},
                        {"transpose_b", attr_b(false)},
                        {"num_args", T},
                        {"fused_ops", attr_list()},
                        {"epsilon", attr_f(0.0001f)},
                        {"leakyrelu_alpha", attr_f(0.2f)}},
                       {"product"}};
  m["BiasAdd"] = {map_bias_add, {{"T", T}, {"data_format", attr_s("NHWC")}}};
  const std::vector<std::string> bn_outputs = {
      "y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2", "reserve_space_3"};
  for (const char* op : {"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"}) {
    std::map<std::string, proto::AttrValue> a = {{"T", T},
                                                 {"epsilon", attr_f(0.0001f)},
                                                 {"exponential_avg_factor", attr_f(1.0f)},
                                                 {"data_format", attr_s("NHWC")},
                                                 {"is_training", attr_b(true)}};
    if (std::string(op) != "FusedBatchNorm") a["U"] = attr_type(kDtFloat);
    std::vector<std::string> outs(bn_outputs.begin(),
                                  bn_outputs.begin() + (std::string(op) == "FusedBatchNormV3" ? 6 : 5));
    m[op] = {map_fused_batch_norm, a, outs};
  }
  for (const char* op : {"Relu", "Relu6", "Elu", "Sigmoid", "Tanh"})
    m[op] = {
        map_activation, {{"T", T}}, {std::string(op) == "Sigmoid" || std::string(op) == "Tanh" ? "y" : "activations"}};
  m["LeakyRelu"] = {map_activation, {{"T", T}, {"alpha", attr_f(0.2f)}}, {"activations"}};
  m["Softmax"] = {map_activation, {{"T", T}}, {"softmax"}};
  m["LogSoftmax"] = {map_activation, {{"T", T}}, {"logsoftmax"}};
  m["MaxPool"] = {map_pool,
                  {{"T", T},
                   {"ksize", T},
                   {"strides", T},
                   {"padding", T},
                   {"explicit_paddings", attr_list()},
                   {"data_format", attr_s("NHWC")}}};
  m["AvgPool"] = {map_pool, {{"T", T}, {"ksize", T}, {"strides", T}, {"padding", T}, {"data_format", attr_s("NHWC")}}};
  for (const char* op : {"ResizeBilinear", "ResizeNearestNeighbor", "ResizeBicubic"})
    m[op] = {map_resize,
             {{"T", T}, {"align_corners", attr_b(false)}, {"half_pixel_centers", attr_b(false)}},
             {"resized_images"}};
  for (const char* op : {"FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxVarsPerChannel"})
    m[op] = {map_fake_quant, {{"num_bits", attr_i(8)}, {"narrow_range", attr_b(false)}}, {"outputs"}};
  m["LRN"] = {
      map_lrn,
      {{"T", T}, {"depth_radius", attr_i(5)}, {"bias", attr_f(1.0f)}, {"alpha", attr_f(1.0f)}, {"beta", attr_f(0.5f)}}};
}

void add_nn_exporters(std::map<std::string, OpExporter>& m) {
  m["Conv2D"] = export_conv;
  m["DepthwiseConv2dNative"] = export_conv;
  m["BiasAdd"] = export_bias_add;
  m["FusedBatchNorm"] = export_fused_batch_norm;
  for (const char* op : {"Relu", "Relu6", "Elu", "LeakyRelu", "Sigmoid", "Tanh", "Softmax", "LogSoftmax"})
    m[op] = export_activation;
  m["MaxPool"] = export_pool;
  m["AvgPool"] = export_pool;
  m["LRN"] = export_lrn;
  m["FakeQuantWithMinMaxVars"] = export_fake_quant;
  m["FakeQuantWithMinMaxVarsPerChannel"] = export_fake_quant;
  m["Resize"] = export_resize;
}

}  // namespace hub::tf
