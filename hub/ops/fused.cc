#include "hub/ops/fused.h"

#include <algorithm>
#include <cmath>

#include "hub/ops/conv2d.h"
#include "hub/ops/registry.h"

namespace hub {
namespace ops {

namespace {
constexpr const char* kPostOps[] = {"Add", "Relu", "LeakyRelu", "Relu6", "Clip", "Elu", "Sigmoid", "Tanh", "HardSwish"};
}  // namespace

bool is_post_op(const std::string& op) {
  return std::find(std::begin(kPostOps), std::end(kPostOps), op) != std::end(kPostOps);
}

std::vector<PostOp> post_ops_of(const Attrs& attrs) {
  const std::vector<std::string>& names = attrs.get_strings("post_ops");
  const std::vector<double>& args = attrs.get_floats("post_op_args");
  std::vector<PostOp> out;
  for (size_t i = 0; i < names.size(); ++i) {
    PostOp p{names[i]};
    if (args.size() == 2 * names.size()) {
      p.alpha = static_cast<float>(args[2 * i]);
      p.beta = static_cast<float>(args[2 * i + 1]);
    }
    out.push_back(p);
  }
  return out;
}

void set_post_ops(Attrs& attrs, const std::vector<PostOp>& post_ops) {
  std::vector<std::string> names;
  std::vector<double> args;
  for (const PostOp& p : post_ops) {
    names.push_back(p.op);
    args.push_back(p.alpha);
    args.push_back(p.beta);
  }
  attrs.set("post_ops", names).set("post_op_args", args);
}

FusedQuantization quantization_of(const Attrs& attrs) {
  FusedQuantization q;
  q.src_scale = static_cast<float>(attrs.get_float("src_scale"));
  q.src_zero_point = static_cast<int32_t>(attrs.get_int("src_zero_point"));
  for (double v : attrs.get_floats("filter_scales")) q.filter_scales.push_back(static_cast<float>(v));
  q.dst_scale = static_cast<float>(attrs.get_float("dst_scale"));
  q.dst_zero_point = static_cast<int32_t>(attrs.get_int("dst_zero_point"));
  q.dst_type = attrs.get_dtype("dst_type");
  return q;
}

void set_quantization(Attrs& attrs, const FusedQuantization& q) {
  attrs.set("src_scale", static_cast<double>(q.src_scale))
      .set("src_zero_point", static_cast<int64_t>(q.src_zero_point))
      .set("filter_scales", std::vector<double>(q.filter_scales.begin(), q.filter_scales.end()))
      .set("dst_scale", static_cast<double>(q.dst_scale))
      .set("dst_zero_point", static_cast<int64_t>(q.dst_zero_point))
      .set("dst_type", q.dst_type);
}

Shape blocked_shape(const Shape& nhwc, int64_t block) {
  int64_t c = nhwc[3];
  return Shape{nhwc[0], c >= 0 ? (c + block - 1) / block : kUnknownDim, nhwc[1], nhwc[2], block};
}

}  // namespace ops

namespace {

bool valid_block(int64_t b) { return b == 0 || b == 8 || b == 16; }

// Checks post_ops / post_op_args and the side input; `side` is the index the
// side input would have.
void check_post_ops(const InferContext& c, int side, const Shape& y) {
  const std::vector<std::string>& names = c.attrs().get_strings("post_ops");
  const std::vector<double>& args = c.attrs().get_floats("post_op_args");
  if (!args.empty() && args.size() != 2 * names.size())
    c.fail("post_op_args has " + std::to_string(args.size()) + " entries; expected 2 per post-op (" +
           std::to_string(2 * names.size()) + ") or none");
  int adds = 0;
  for (const std::string& n : names) {
    if (!ops::is_post_op(n)) c.fail("unknown post-op '" + n + "'");
    adds += n == "Add";
  }
  bool has_side = c.num_inputs() > side;
  if (adds > 1) c.fail("at most one \"Add\" post-op, got " + std::to_string(adds));
  if ((adds == 1) != has_side)
    c.fail(has_side ? "a side input needs an \"Add\" post-op" : "the \"Add\" post-op needs a side input");
  if (has_side) {
    c.expect_dtype(side, DType::kFloat32);
    if (!c.shape(side).compatible_with(y))
      c.fail("side input " + c.input(side).to_string() + " differs from the output " + y.to_string());
  }
}

// Checks the dtypes of x (input 0), the filter (input 1) and the other
// inputs against the quantization attributes; returns y's dtype.
DType check_quantization(const InferContext& c, int64_t channels) {
  const ops::FusedQuantization q = ops::quantization_of(c.attrs());
  for (int i = 2; i < c.num_inputs(); ++i) c.expect_dtype(i, DType::kFloat32);
  auto check_zero_point = [&](const char* name, int32_t zp, DType type) {
    const int32_t lo = type == DType::kUInt8 ? 0 : -128, hi = type == DType::kUInt8 ? 255 : 127;
    if (zp < lo || zp > hi)
      c.fail(std::string(name) + " " + std::to_string(zp) + " is outside " + std::string(dtype_name(type)));
  };
  if (!q.quantized()) {
    c.expect_dtype(0, DType::kFloat32);
    c.expect_dtype(1, DType::kFloat32);
    if (!q.filter_scales.empty() || q.quantized_output())
      c.fail("filter_scales and dst_scale need a quantized input (src_scale > 0)");
    return DType::kFloat32;
  }
  if (!is_8bit(c.dtype(0))) c.fail("a quantized input must be uint8 or int8, got " + c.input(0).to_string());
  check_zero_point("src_zero_point", q.src_zero_point, c.dtype(0));
  c.expect_dtype(1, DType::kInt8);
  const int64_t n = static_cast<int64_t>(q.filter_scales.size());
  if (n != 1 && !(channels >= 0 && n == channels))
    c.fail("filter_scales has " + std::to_string(n) + " entries; expected 1 or " + std::to_string(channels));
  for (float v : q.filter_scales)
    if (!(v > 0) || !std::isfinite(v)) c.fail("filter scale " + std::to_string(v) + " must be > 0");
  if (c.num_inputs() > 3) c.fail("a quantized fused op takes no side input");
  if (c.attrs().has("src_block") && (c.attrs().get_int("src_block") != 0 || c.attrs().get_int("dst_block") != 0))
    c.fail("a quantized fused op runs in NHWC only");
  if (!q.quantized_output()) return DType::kFloat32;
  if (!std::isfinite(q.dst_scale)) c.fail("dst_scale must be finite");
  if (!is_8bit(q.dst_type)) c.fail("dst_type must be uint8 or int8, got " + std::string(dtype_name(q.dst_type)));
  check_zero_point("dst_zero_point", q.dst_zero_point, q.dst_type);
  return q.dst_type;
}

void check_bias(const InferContext& c, int64_t channels) {
  c.expect_dtype(2, DType::kFloat32);
  c.expect_rank(2, 1);
  if (channels >= 0 && c.shape(2)[0] >= 0 && c.shape(2)[0] != channels)
    c.fail("bias " + c.input(2).to_string() + " must have " + std::to_string(channels) + " entries");
}

std::vector<TensorSpec> fused_conv_shape(const InferContext& c) {
  const bool depthwise = c.attrs().get_bool("depthwise");
  const int64_t src_block = c.attrs().get_int("src_block"), dst_block = c.attrs().get_int("dst_block");
  if (!valid_block(src_block) || !valid_block(dst_block))
    c.fail("src_block and dst_block must be 0, 8 or 16, got " + std::to_string(src_block) + " and " +
           std::to_string(dst_block));
  Shape x = c.shape(0);
  if (src_block > 0) {
    // [N, CB, H, W, b] -> [N, H, W, C] with C from the filter.
    c.expect_rank(0, 5);
    if (x[4] >= 0 && x[4] != src_block)
      c.fail("blocked input " + c.input(0).to_string() + " does not have block " + std::to_string(src_block));
    if (c.shape(1).rank() != 4 || c.shape(1)[2] < 0)
      c.fail("a blocked input needs a filter with a known input-channel count, got " + c.input(1).to_string());
    int64_t ch = c.shape(1)[2];
    if (x[1] >= 0 && x[1] != (ch + src_block - 1) / src_block)
      c.fail("blocked input " + c.input(0).to_string() + " does not hold " + std::to_string(ch) + " channels");
    x = Shape{x[0], x[2], x[3], ch};
  }
  ops::ConvGeometry g;
  std::string error = ops::conv_geometry(x, c.shape(1), c.attrs(), depthwise, &g);
  if (!error.empty()) c.fail(error);
  check_bias(c, g.oc);
  Shape y{g.n, g.oh, g.ow, g.oc};
  if (dst_block > 0) {
    if (g.oc < 0) c.fail("a blocked output needs a known channel count");
    y = ops::blocked_shape(y, dst_block);
  }
  check_post_ops(c, 3, y);
  return {{check_quantization(c, g.oc), y}};
}

std::vector<TensorSpec> fused_matmul_shape(const InferContext& c) {
  c.expect_rank(0, 2);
  c.expect_rank(1, 2);
  const bool ta = c.attrs().get_bool("transpose_a"), tb = c.attrs().get_bool("transpose_b");
  int64_t m = c.shape(0)[ta ? 1 : 0], k = c.shape(0)[ta ? 0 : 1];
  int64_t kb = c.shape(1)[tb ? 1 : 0], n = c.shape(1)[tb ? 0 : 1];
  if (k >= 0 && kb >= 0 && k != kb)
    c.fail("inner dimensions differ: a " + c.input(0).to_string() + ", b " + c.input(1).to_string());
  check_bias(c, n);
  Shape y{m, n};
  check_post_ops(c, 3, y);
  const DType type = check_quantization(c, n);
  if (ta && ops::quantization_of(c.attrs()).quantized()) c.fail("a quantized MatMul does not take transpose_a");
  return {{type, y}};
}

std::vector<TensorSpec> relayout_shape(const InferContext& c) {
  c.expect_dtype(0, DType::kFloat32);
  const int64_t from = c.attrs().get_int("from_block"), to = c.attrs().get_int("to_block");
  const int64_t ch = c.attrs().get_int("channels");
  if (!valid_block(from) || !valid_block(to) || (from == 0) == (to == 0))
    c.fail("from_block and to_block must be one 0 and one 8 or 16, got " + std::to_string(from) + " and " +
           std::to_string(to));
  if (ch <= 0) c.fail("channels must be positive, got " + std::to_string(ch));
  const Shape& x = c.shape(0);
  if (from == 0) {
    c.expect_rank(0, 4);
    if (x[3] >= 0 && x[3] != ch)
      c.fail("input " + c.input(0).to_string() + " does not have " + std::to_string(ch) + " channels");
    return {{DType::kFloat32, ops::blocked_shape(Shape{x[0], x[1], x[2], ch}, to)}};
  }
  c.expect_rank(0, 5);
  if ((x[4] >= 0 && x[4] != from) || (x[1] >= 0 && x[1] != (ch + from - 1) / from))
    c.fail("input " + c.input(0).to_string() + " is not " + std::to_string(ch) + " channels in block " +
           std::to_string(from));
  return {{DType::kFloat32, Shape{x[0], x[2], x[3], ch}}};
}

constexpr const char* kInferenceOnly = "inference-only fused op";

}  // namespace

HUB_REGISTER_OP(_FusedConv2D)
    .inputs(3, 4)
    .attr("depthwise", AttrType::kBool, false)
    .attr("strides", AttrType::kInts, std::vector<int64_t>{1, 1})
    .attr("padding", AttrType::kString)
    .attr("explicit_paddings", AttrType::kInts, std::vector<int64_t>{})
    .attr("dilations", AttrType::kInts, std::vector<int64_t>{1, 1})
    .attr("post_ops", AttrType::kStrings, std::vector<std::string>{})
    .attr("post_op_args", AttrType::kFloats, std::vector<double>{})
    .attr("src_block", AttrType::kInt, int64_t{0})
    .attr("dst_block", AttrType::kInt, int64_t{0})
    .attr("src_scale", AttrType::kFloat, 0.0)
    .attr("src_zero_point", AttrType::kInt, int64_t{0})
    .attr("filter_scales", AttrType::kFloats, std::vector<double>{})
    .attr("dst_scale", AttrType::kFloat, 0.0)
    .attr("dst_zero_point", AttrType::kInt, int64_t{0})
    .attr("dst_type", AttrType::kDType, DType::kFloat32)
    .shape_fn(fused_conv_shape)
    .in_place(3, 0)
    .no_gradient(kInferenceOnly)
    .doc("Conv2D or depthwise conv + bias + post-ops (residual Add, activations) in one op; NHWC or blocked.");

HUB_REGISTER_OP(_FusedMatMul)
    .inputs(3, 4)
    .attr("transpose_a", AttrType::kBool, false)
    .attr("transpose_b", AttrType::kBool, false)
    .attr("post_ops", AttrType::kStrings, std::vector<std::string>{})
    .attr("post_op_args", AttrType::kFloats, std::vector<double>{})
    .attr("src_scale", AttrType::kFloat, 0.0)
    .attr("src_zero_point", AttrType::kInt, int64_t{0})
    .attr("filter_scales", AttrType::kFloats, std::vector<double>{})
    .attr("dst_scale", AttrType::kFloat, 0.0)
    .attr("dst_zero_point", AttrType::kInt, int64_t{0})
    .attr("dst_type", AttrType::kDType, DType::kFloat32)
    .shape_fn(fused_matmul_shape)
    .in_place(3, 0)
    .no_gradient(kInferenceOnly)
    .doc("MatMul + bias + post-ops (residual Add, activations) in one op.");

HUB_REGISTER_OP(_Relayout)
    .inputs(1)
    .attr("from_block", AttrType::kInt)
    .attr("to_block", AttrType::kInt)
    .attr("channels", AttrType::kInt)
    .shape_fn(relayout_shape)
    .no_gradient(kInferenceOnly)
    .doc("NHWC <-> oneDNN's channel-blocked layout nChw8c / nChw16c (values unchanged).");

}  // namespace hub
