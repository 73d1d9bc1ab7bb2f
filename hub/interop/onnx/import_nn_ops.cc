// ONNX -> hub: convolutions, pooling, normalisation, resizing and matrix
// products (opset 17 semantics). Spatial ops run NHWC; their weights are
// transposed to hub's layouts once, at import.
#include <cmath>

#include "hub/interop/einsum.h"
#include "hub/interop/onnx/convert.h"
#include "hub/interop/onnx/model.h"
#include "hub/ops/activation.h"
#include "hub/ops/array.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/math.h"
#include "hub/ops/matmul.h"
#include "hub/ops/reduction.h"
#include "hub/ops/state.h"

namespace hub::onnx_interop {

namespace {

std::string ints_text(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(v[i]);
  }
  return s + "]";
}

// The spatial geometry shared by convolutions and pooling: kernel, strides,
// dilations and padding as hub attributes. ONNX pads are [top, left, bottom,
// right]; hub's explicit_paddings are [top, bottom, left, right].
struct Window {
  std::vector<int64_t> kernel, strides, dilations;
  std::string padding;  // "VALID", "SAME" or "EXPLICIT"
  std::vector<int64_t> explicit_paddings;
  void add_to(Attrs& a, bool with_dilations) const {
    a.set("strides", strides).set("padding", padding);
    if (padding == "EXPLICIT") a.set("explicit_paddings", explicit_paddings);
    if (with_dilations) a.set("dilations", dilations);
  }
};

// The padding SAME needs along one dim of static size `in` (output
// ceil(in / stride)), split by auto_pad: SAME_UPPER (TF's SAME) puts the odd
// pixel after, SAME_LOWER before.
int64_t same_total_padding(int64_t in, int64_t kernel, int64_t stride, int64_t dilation) {
  const int64_t out = (in + stride - 1) / stride;
  return std::max<int64_t>(0, (out - 1) * stride + (kernel - 1) * dilation + 1 - in);
}

// TF's SAME padding [top, bottom, left, right] for a static input size
// (empty when a spatial size is unknown).
std::vector<int64_t> same_paddings(const Window& w, const Shape& x) {
  std::vector<int64_t> p;
  for (int d = 0; d < 2; ++d) {
    int64_t in = x[2 + d];
    if (in < 0) return {};
    const int64_t total = same_total_padding(in, w.kernel[d], w.strides[d], w.dilations[d]);
    p.push_back(total / 2);
    p.push_back(total - total / 2);
  }
  return p;
}

// A 1-D spatial op [N, C, L] runs as the 2-D one on [N, C, 1, L]: a unit
// height in front of each spatial attribute.
bool is_1d(NodeContext& c, int rank) {
  if (rank != 3 && rank != 4)
    c.fail("only 1-D and 2-D spatial ops (3-D or 4-D input N,C,...) are supported, input is " + c.shape(0).to_string());
  return rank == 3;
}
Shape lifted_shape(const Shape& x) { return x.rank() == 3 ? Shape{x[0], x[1], 1, x[2]} : x; }

// The window of a 1-D or 2-D op as 2-D (x: the input, already lifted).
Window window(NodeContext& c, std::vector<int64_t> kernel, const Shape& x, bool one_d) {
  auto lift = [&](std::vector<int64_t> v, int64_t unit) {
    if (one_d && v.size() == 1) v.insert(v.begin(), unit);
    return v;
  };
  Window w;
  w.kernel = lift(std::move(kernel), 1);
  if (w.kernel.size() != 2)
    c.fail("only 1-D and 2-D windows are supported (kernel " + ints_text(w.kernel) + "; input " + x.to_string() + ")");
  w.strides = lift(c.attr_ints("strides", {1, 1}), 1);
  w.dilations = lift(c.attr_ints("dilations", {1, 1}), 1);
  for (const auto& [name, v] :
       {std::pair<const char*, const std::vector<int64_t>&>{"strides", w.strides}, {"dilations", w.dilations}})
    if (v.size() != 2 || v[0] < 1 || v[1] < 1)
      c.fail("attribute " + std::string(name) + " = " + ints_text(v) +
             ": expected one positive value per spatial dim of kernel " + ints_text(w.kernel));
  const std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  std::vector<int64_t> pads = c.attr_ints("pads", {0, 0, 0, 0});
  if (one_d && pads.size() == 2) pads = {0, pads[0], 0, pads[1]};
  if (pads.size() != 4) c.fail_attr("pads", ints_text(pads), "expected 2 values per spatial dim");
  if (auto_pad == "VALID") {
    w.padding = "VALID";
  } else if (auto_pad == "SAME_UPPER") {
    w.padding = "SAME";  // TF's SAME: the odd pixel of padding goes after
  } else if (auto_pad == "SAME_LOWER") {
    // The odd pixel goes before: explicit, from the static input size.
    w.padding = "EXPLICIT";
    for (int d = 0; d < 2; ++d) {
      int64_t in = x[2 + d];
      if (in < 0) c.fail("auto_pad SAME_LOWER needs a static input size, got " + x.to_string());
      const int64_t total = same_total_padding(in, w.kernel[d], w.strides[d], w.dilations[d]);
      w.explicit_paddings.push_back(total - total / 2);
      w.explicit_paddings.push_back(total / 2);
    }
  } else if (auto_pad == "NOTSET") {
    w.explicit_paddings = {pads[0], pads[2], pads[1], pads[3]};
    if (pads == std::vector<int64_t>{0, 0, 0, 0}) {
      w.padding = "VALID";
    } else if (w.explicit_paddings == same_paddings(w, x)) {
      w.padding = "SAME";  // what PyTorch's padding=k//2 usually is
    } else {
      w.padding = "EXPLICIT";
    }
  } else {
    c.fail_attr("auto_pad", auto_pad, "expected NOTSET, SAME_UPPER, SAME_LOWER or VALID");
  }
  return w;
}

// Weight transforms: at import for constants, as graph ops for weights fed
// at run time.
Tensor same(const Tensor& t) { return t; }
Output runtime_same(Output w) { return w; }
std::function<Tensor(const Tensor&)> transposed(std::vector<int64_t> perm) {
  return [perm](const Tensor& t) { return evaluate("Transpose", {t}, Attrs().set("perm", perm)); };
}
std::function<Output(Output)> runtime_transpose(NodeContext& c, std::vector<int64_t> perm) {
  return [&c, perm](Output w) { return ops::transpose(c.scope(), w, perm, "w_transposed"); };
}

// ---- convolution -----------------------------------------------------------------

// x [N, C, L] as NHWC [N, 1, L, C], or a 2-D op's input as NHWC.
Output nhwc_input(NodeContext& c, bool one_d) {
  if (!one_d) return c.nhwc(0);
  return ops::transpose(c.scope(), ops::expand_dims(c.scope(), c.native(0), 2, "unit_height"), {0, 2, 3, 1}, "to_nhwc");
}

// The op's NHWC result as its output: [N, 1, L, C] back to [N, C, L] for a 1-D op.
void set_spatial_output(NodeContext& c, Output y, bool one_d) {
  if (!one_d) {
    c.set_output(0, y, true);
    return;
  }
  Output squeezed = ops::squeeze(c.scope(), y, {1}, "drop_height");
  c.set_output(0, ops::transpose(c.scope(), squeezed, {0, 2, 1}, "channels_first"));
}

// ---- volumetric (3-D) ops ---------------------------------------------------------------

// x [N, C, D, H, W] runs channels-last ([N, D, H, W, C]) as 2-D ops over
// (H, W) and a pass over D: a convolution is the sum, over the kernel's depth
// taps, of 2-D convolutions of the depth slices each tap reads (a strided
// slice of the depth-padded input, batched with N); a pooling window is the
// 2-D pool over (H, W), then a pool over D with a [KD, 1] window (maximum and
// average are separable over a box, padding, ceil_mode and
// count_include_pad included: the average's divisor is a product of per-dim
// counts). Spatial dims must be static.
struct Window3 {
  std::vector<int64_t> kernel, strides, dilations;  // [d, h, w]
  std::vector<int64_t> pads;                        // [d0, h0, w0, d1, h1, w1]
  std::vector<int64_t> out;                         // [OD, OH, OW] from shape inference
};

Window3 window3(NodeContext& c, std::vector<int64_t> kernel) {
  const Shape x = c.shape(0);
  Window3 w;
  w.kernel = std::move(kernel);
  w.strides = c.attr_ints("strides", {1, 1, 1});
  w.dilations = c.attr_ints("dilations", {1, 1, 1});
  for (const auto& [name, v] : {std::pair<const char*, const std::vector<int64_t>&>{"kernel_shape", w.kernel},
                                {"strides", w.strides},
                                {"dilations", w.dilations}})
    if (v.size() != 3 || v[0] < 1 || v[1] < 1 || v[2] < 1)
      c.fail("attribute " + std::string(name) + " = " + ints_text(v) + ": expected one positive value per spatial dim");
  for (int d = 1; d < 5; ++d)
    if (x[d] < 0) c.fail("3-D ops need static channels and spatial dims, input is " + x.to_string());
  const std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  w.pads = c.attr_ints("pads", {0, 0, 0, 0, 0, 0});
  if (w.pads.size() != 6) c.fail_attr("pads", ints_text(w.pads), "expected 2 values per spatial dim");
  if (auto_pad == "VALID") {
    w.pads.assign(6, 0);
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (int d = 0; d < 3; ++d) {
      const int64_t total = same_total_padding(x[2 + d], w.kernel[d], w.strides[d], w.dilations[d]);
      w.pads[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.pads[d + 3] = total - w.pads[d];
    }
  } else if (auto_pad != "NOTSET") {
    c.fail_attr("auto_pad", auto_pad, "expected NOTSET, SAME_UPPER, SAME_LOWER or VALID");
  }
  const std::optional<Shape> y = c.output_shape(0);
  if (!y || y->rank() != 5 || (*y)[2] < 1 || (*y)[3] < 1 || (*y)[4] < 1)
    c.fail("3-D ops need the output's spatial dims from shape inference, got " +
           (y ? y->to_string() : std::string("none")));
  w.out = {(*y)[2], (*y)[3], (*y)[4]};
  return w;
}

// The (H, W) part of a 3-D window as a 2-D op's attributes.
Attrs hw_window(const Window3& w, bool with_dilations) {
  Attrs a;
  const std::vector<int64_t> pads{w.pads[1], w.pads[4], w.pads[2], w.pads[5]};
  a.set("strides", std::vector<int64_t>{w.strides[1], w.strides[2]});
  if (pads == std::vector<int64_t>{0, 0, 0, 0})
    a.set("padding", "VALID");
  else
    a.set("padding", "EXPLICIT").set("explicit_paddings", pads);
  if (with_dilations) a.set("dilations", std::vector<int64_t>{w.dilations[1], w.dilations[2]});
  return a;
}

// [N, C, D, H, W] -> [N, D, H, W, C] and back.
Output channels_last_3d(NodeContext& c) { return ops::transpose(c.scope(), c.native(0), {0, 2, 3, 4, 1}, "to_ndhwc"); }
void set_channels_last_3d(NodeContext& c, Output y) {
  c.set_output(0, ops::transpose(c.scope(), y, {0, 4, 1, 2, 3}, "to_ncdhw"));
}

void map_conv_3d(NodeContext& c) {
  const Shape x = c.shape(0), wshape = c.shape(1);
  if (wshape.rank() != 5 || !wshape.is_fully_defined())
    c.fail("weights " + wshape.to_string() + " must be static and of the input's rank");
  const Window3 w = window3(c, c.attr_ints("kernel_shape", {wshape[2], wshape[3], wshape[4]}));
  const int64_t group = c.attr_int("group", 1), m = wshape[0], cg = wshape[1];
  if (group < 1 || x[1] != cg * group)
    c.fail("input channels " + std::to_string(x[1]) + " are not group " + std::to_string(group) + " x " +
           std::to_string(cg));
  const Scope& s = c.scope();
  const int64_t h = x[3], wd = x[4], od = w.out[0];
  Output in = channels_last_3d(c);
  if (w.pads[0] || w.pads[3]) in = ops::pad(s, in, {0, 0, w.pads[0], w.pads[3], 0, 0, 0, 0, 0, 0}, "pad_depth");
  // W [M, C/G, KD, KH, KW] -> [KD, KH, KW, C/G, M]: one variable, a 2-D HWIO filter per depth tap.
  Output filter = c.weight_or(1, transposed({2, 3, 4, 1, 0}), runtime_transpose(c, {2, 3, 4, 1, 0}));
  const Attrs a = hw_window(w, true);
  constexpr int64_t kAllButDepth = 1 | 4 | 8 | 16;  // begin/end mask bits of dims 0, 2, 3, 4
  Output sum;
  for (int64_t kd = 0; kd < w.kernel[0]; ++kd) {
    const std::string tap = "tap" + std::to_string(kd);
    const int64_t first = kd * w.dilations[0];
    Output slices = ops::strided_slice(s, in, {0, first, 0, 0, 0}, {0, first + w.strides[0] * (od - 1) + 1, 0, 0, 0},
                                       {1, w.strides[0], 1, 1, 1}, {kAllButDepth, kAllButDepth}, tap + "/depths");
    Output images = ops::reshape(s, slices, {-1, h, wd, x[1]}, tap + "/images");
    Output f = ops::reshape(s, ops::slice(s, filter, {kd, 0, 0, 0, 0}, {1, -1, -1, -1, -1}, tap + "/filter"),
                            {w.kernel[1], w.kernel[2], cg, m}, tap + "/hwio");
    Output y = s.op("Conv2D", {images, f}, a, tap + "/conv");
    sum = sum.valid() ? ops::add(s, sum, y, tap + "/sum") : y;
  }
  Output y = ops::reshape(s, sum, {-1, od, w.out[1], w.out[2], m}, "volumes");
  if (c.has_input(2)) y = s.op("BiasAdd", {y, c.weight_or(2, same, runtime_same)}, {}, "bias");
  set_channels_last_3d(c, y);
}

template <bool kMax>
void map_pool_3d(NodeContext& c) {
  const Shape x = c.shape(0);
  const Window3 w = window3(c, c.attr_ints("kernel_shape"));
  if (!kMax && w.dilations != std::vector<int64_t>{1, 1, 1})
    c.fail_attr("dilations", ints_text(w.dilations), "AveragePool with dilations is not supported");
  const bool ceil_mode = c.attr_int("ceil_mode", 0) != 0, include_pad = !kMax && c.attr_int("count_include_pad", 0);
  const char* op = kMax ? "MaxPool" : "AvgPool";
  auto pool = [&](Output in, Attrs a, std::vector<int64_t> kernel, const std::string& name) {
    a.set("ksize", std::move(kernel));
    if (ceil_mode) {
      if (a.get_string("padding") == "VALID")
        a.set("padding", "EXPLICIT").set("explicit_paddings", std::vector<int64_t>{0, 0, 0, 0});
      a.set("ceil_mode", true);
    }
    if (include_pad) a.set("count_include_pad", true);
    return c.scope().op(op, {in}, a, name);
  };
  const Scope& s = c.scope();
  const int64_t oh = w.out[1], ow = w.out[2];
  Output images = ops::reshape(s, channels_last_3d(c), {-1, x[3], x[4], x[1]}, "images");
  Output y = pool(images, hw_window(w, kMax), {w.kernel[1], w.kernel[2]}, "pool_hw");
  Output columns = ops::reshape(s, y, {-1, x[2], oh * ow, x[1]}, "depth_columns");
  Window3 depth = w;  // the D part as a [KD, 1] window over [N, D, OH*OW, C]
  depth.strides = {1, w.strides[0], 1};
  depth.dilations = {1, w.dilations[0], 1};
  depth.pads = {0, w.pads[0], 0, 0, w.pads[3], 0};
  y = pool(columns, hw_window(depth, kMax), {w.kernel[0], 1}, "pool_depth");
  set_channels_last_3d(c, ops::reshape(s, y, {-1, w.out[0], oh, ow, x[1]}, "volumes"));
}

void map_conv(NodeContext& c) {
  if (c.rank(0) == 5) return map_conv_3d(c);
  const bool one_d = is_1d(c, c.rank(0));
  const Shape x = lifted_shape(c.shape(0));
  // 1-D weights [M, C/G, K] as [M, C/G, 1, K].
  if (c.rank(1) != c.rank(0))
    c.fail("weights " + c.shape(1).to_string() + " do not match input " + c.shape(0).to_string() + " in rank");
  Shape wshape = c.shape(1);
  if (one_d) wshape = Shape{wshape[0], wshape[1], 1, wshape[2]};
  const int64_t group = c.attr_int("group", 1);
  const int64_t channels = x[1], m = wshape[0];
  std::vector<int64_t> kernel =
      c.attr_ints("kernel_shape", one_d ? std::vector<int64_t>{wshape[3]} : std::vector<int64_t>{wshape[2], wshape[3]});
  Window w = window(c, kernel, x, one_d);
  Output in = nhwc_input(c, one_d);
  Output y;
  Attrs a;
  w.add_to(a, true);
  if (group > 1 && group == channels && m % channels == 0) {
    // Depthwise: W [C*M, 1, KH, KW] -> [KH, KW, C, M].
    const int64_t mult = m / channels;
    const std::vector<int64_t> perm{2, 3, 0, 1};
    Output f = c.weight_or(
        1,
        [&](const Tensor& t) {
          return evaluate("Transpose", {t.reshaped({channels, mult, wshape[2], wshape[3]})}, Attrs().set("perm", perm));
        },
        [&](Output w) {
          return ops::transpose(c.scope(), ops::reshape(c.scope(), w, {channels, mult, wshape[2], wshape[3]}, "w_cm"),
                                perm, "w_hwcm");
        });
    y = c.scope().op("DepthwiseConv2dNative", {in, f}, a, "depthwise");
  } else {
    // W [M, C/G, KH, KW] -> HWIO [KH, KW, C/G, M]; G > 1 is a grouped Conv2D.
    const std::vector<int64_t> dims = wshape.dims(), perm{2, 3, 1, 0};
    Output f = c.weight_or(
        1, [&](const Tensor& t) { return evaluate("Transpose", {t.reshaped(Shape(dims))}, Attrs().set("perm", perm)); },
        [&](Output w) {
          return ops::transpose(c.scope(), ops::reshape(c.scope(), w, dims, "w_4d"), perm, "w_transposed");
        });
    y = c.scope().op("Conv2D", {in, f}, a, "conv");
  }
  if (c.has_input(2)) y = c.scope().op("BiasAdd", {y, c.weight_or(2, same, runtime_same)}, {}, "bias");
  set_spatial_output(c, y, one_d);
}

void map_conv_transpose(NodeContext& c) {
  if (c.rank(0) == 3 || c.rank(0) == 4)
    if (c.rank(1) != c.rank(0))
      c.fail("weights " + c.shape(1).to_string() + " do not match input " + c.shape(0).to_string() + " in rank");
  const bool one_d = c.rank(0) == 3;
  if (!one_d && c.rank(0) != 4)
    c.fail("only 1-D and 2-D transposed convolutions are supported, input is " + c.shape(0).to_string());
  // A 1-D one [N, C, L] runs as the 2-D one on [N, C, 1, L] (unit height in every attribute).
  const Shape x = lifted_shape(c.shape(0)), wshape = lifted_shape(c.shape(1));
  auto lift = [&](std::vector<int64_t> v, int64_t unit) {
    if (one_d && v.size() == 1) v.insert(v.begin(), unit);
    return v;
  };
  const int64_t group = c.attr_int("group", 1);
  std::vector<int64_t> kernel = c.attr_ints("kernel_shape", {wshape[2], wshape[3]});
  if (one_d && kernel.size() == 1) kernel.insert(kernel.begin(), 1);
  Window w = window(c, kernel, x, one_d);  // checks strides, dilations, pads and auto_pad
  const std::string auto_pad = c.attr_string("auto_pad", "NOTSET");
  const std::vector<int64_t> output_padding = lift(c.attr_ints("output_padding", {0, 0}), 0);
  if (output_padding.size() != 2) c.fail_attr("output_padding", ints_text(output_padding), "expected 2 entries");
  std::vector<int64_t> output_pad = output_padding;
  std::vector<int64_t> pads = c.attr_ints("pads", {0, 0, 0, 0});
  if (one_d && pads.size() == 2) pads = {0, pads[0], 0, pads[1]};
  // An output shape (given, or the input's times the strides for SAME_*)
  // sets the pads: the total is what the full transposed window overshoots
  // it by, split evenly (rounding down, as ONNX's reference), the odd one at
  // the end (SAME_UPPER) or at the start otherwise. A negative end pad (an
  // output one longer than the window reaches) is output padding.
  std::vector<int64_t> out_hw = c.attr_ints("output_shape", {});
  if (one_d && out_hw.size() == 3) out_hw = {out_hw[2]};
  out_hw = lift(out_hw, 1);
  if (!out_hw.empty() && out_hw.size() != 2 && out_hw.size() != 4)
    c.fail_attr("output_shape", ints_text(out_hw), "expected [H, W] or [N, C, H, W]");
  if (out_hw.size() == 4) out_hw = {out_hw[2], out_hw[3]};
  if (out_hw.empty() && (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER")) {
    if (x[2] < 0 || x[3] < 0)
      c.fail("auto_pad " + auto_pad + " needs the input's height and width, got " + x.to_string());
    out_hw = {x[2] * w.strides[0], x[3] * w.strides[1]};
  }
  if (auto_pad == "VALID") pads = {0, 0, 0, 0};
  if (!out_hw.empty()) {
    if (x[2] < 0 || x[3] < 0) c.fail("output_shape needs the input's height and width, got " + x.to_string());
    for (int i = 0; i < 2; ++i) {
      const int64_t total =
          w.strides[i] * (x[2 + i] - 1) + output_padding[i] + (kernel[i] - 1) * w.dilations[i] + 1 - out_hw[i];
      const int64_t small = total >= 0 ? total / 2 : -((1 - total) / 2), large = total - small;
      pads[i] = auto_pad == "SAME_UPPER" ? small : large;
      pads[i + 2] = auto_pad == "SAME_UPPER" ? large : small;
      if (pads[i] < 0 || pads[i + 2] < -(w.strides[i] - 1 - output_pad[i]))
        c.fail_attr("output_shape", ints_text(c.attr_ints("output_shape", out_hw)),
                    "is " + std::to_string(-total) + " beyond what the transposed window reaches (" +
                        std::to_string(out_hw[i] + total) + ")");
      if (pads[i + 2] < 0) {
        output_pad[i] -= pads[i + 2];
        pads[i + 2] = 0;
      }
    }
  }
  Attrs a;
  a.set("strides", w.strides).set("dilations", w.dilations);
  a.set("explicit_paddings", std::vector<int64_t>{pads[0], pads[2], pads[1], pads[3]});
  a.set("output_padding", output_pad).set("groups", group);
  // ONNX W [C, M/G, KH, KW] -> hub's Conv2DTranspose filter [KH, KW, M/G, C].
  const std::vector<int64_t> dims = wshape.dims(), perm{2, 3, 1, 0};
  Output f = c.weight_or(
      1, [&](const Tensor& t) { return evaluate("Transpose", {t.reshaped(Shape(dims))}, Attrs().set("perm", perm)); },
      [&](Output wt) { return ops::transpose(c.scope(), ops::reshape(c.scope(), wt, dims, "w_4d"), perm, "w_hwoc"); });
  Output y = c.scope().op("Conv2DTranspose", {nhwc_input(c, one_d), f}, a, "conv_transpose");
  if (c.has_input(2)) y = c.scope().op("BiasAdd", {y, c.weight_or(2, same, runtime_same)}, {}, "bias");
  set_spatial_output(c, y, one_d);
}

// ---- pooling ---------------------------------------------------------------------------

template <bool kMax>
void map_pool(NodeContext& c) {
  if (c.rank(0) == 5) return map_pool_3d<kMax>(c);
  const bool one_d = is_1d(c, c.rank(0));
  const Shape x = lifted_shape(c.shape(0));
  if (kMax && c.attr_int("storage_order", 0) != 0) c.fail_attr("storage_order", "1", "only row-major indices");
  Window w = window(c, c.attr_ints("kernel_shape"), x, one_d);
  const bool ceil_mode = c.attr_int("ceil_mode", 0) != 0;
  if (ceil_mode && w.padding != "EXPLICIT") {
    // hub's ceil_mode is defined on explicit pads only.
    if (w.padding == "SAME") c.fail_attr("ceil_mode", "1", "with auto_pad SAME_UPPER is not supported");
    w.padding = "EXPLICIT";
    w.explicit_paddings = {0, 0, 0, 0};
  }
  Attrs a;
  a.set("ksize", w.kernel);
  w.add_to(a, kMax && w.dilations != std::vector<int64_t>{1, 1});
  if (!kMax && w.dilations != std::vector<int64_t>{1, 1})
    c.fail_attr("dilations", ints_text(w.dilations), "AveragePool with dilations is not supported");
  if (ceil_mode) a.set("ceil_mode", true);
  if (!kMax && c.attr_int("count_include_pad", 0)) a.set("count_include_pad", true);
  set_spatial_output(
      c, c.scope().op(kMax ? "MaxPool" : "AvgPool", {nhwc_input(c, one_d)}, a, kMax ? "MaxPool" : "AvgPool"), one_d);
}

template <bool kMax>
void map_global_pool(NodeContext& c) {
  const int rank = c.rank(0);
  if (rank < 3) c.fail("inputs of rank 3 or more (N,C,...) are supported, got " + c.shape(0).to_string());
  if (rank != 4) {  // 1-D and 3-D: over the native spatial dims
    std::vector<int64_t> axes;
    for (int d = 2; d < rank; ++d) axes.push_back(d);
    c.set_output(0, c.scope().op(kMax ? "Max" : "Mean", {c.native(0)}, Attrs().set("axes", axes).set("keep_dims", true),
                                 kMax ? "GlobalMaxPool" : "GlobalAveragePool"));
    return;
  }
  Attrs a;
  a.set("axes", std::vector<int64_t>{1, 2}).set("keep_dims", true);
  c.set_output(0, c.scope().op(kMax ? "Max" : "Mean", {c.nhwc(0)}, a, kMax ? "GlobalMaxPool" : "GlobalAveragePool"),
               true);
}

// ---- normalisation ---------------------------------------------------------------------

void map_batch_norm(NodeContext& c) {
  if (c.attr_int("training_mode", 0)) c.fail_attr("training_mode", "1", "hub imports models for inference");
  const int rank = c.rank(0);
  Output scale = c.weight_or(1, same, runtime_same), offset = c.weight_or(2, same, runtime_same);
  Output mean = c.weight_or(3, same, runtime_same, false), var = c.weight_or(4, same, runtime_same, false);
  Attrs a;
  a.set("epsilon", static_cast<double>(c.attr_float("epsilon", 1e-5f))).set("is_training", false);
  if (rank == 4) {
    std::vector<Output> y = c.scope().op_n("FusedBatchNorm", {c.nhwc(0), scale, offset, mean, var}, a, "BatchNorm");
    c.set_output(0, y[0], true);
  } else if (rank == 2) {
    std::vector<Output> y = c.scope().op_n("FusedBatchNorm", {c.native(0), scale, offset, mean, var}, a, "BatchNorm");
    c.set_output(0, y[0]);
  } else if (rank == 3) {
    // [N, C, L] -> [N, L, 1, C] (NHWC with a unit width) -> normalise -> back.
    Output t = ops::transpose(c.scope(), c.native(0), {0, 2, 1}, "channels_last");
    t = ops::expand_dims(c.scope(), t, 2, "unit_width");
    std::vector<Output> y = c.scope().op_n("FusedBatchNorm", {t, scale, offset, mean, var}, a, "BatchNorm");
    Output back = ops::squeeze(c.scope(), y[0], {2}, "drop_width");
    c.set_output(0, ops::transpose(c.scope(), back, {0, 2, 1}, "channels_first"));
  } else {
    // [N, C, S...] -> [N, prod(S), 1, C] (NHWC) -> normalise -> back.
    const Shape x = c.shape(0);
    if (rank < 2) c.fail("inputs of rank 2 or more (N, C, ...) are supported, got " + x.to_string());
    std::vector<int64_t> to_last{0}, back{0, rank - 1}, spatial{-1};
    int64_t size = 1;
    for (int d = 2; d < rank; ++d) {
      if (x[d] < 0) c.fail("inputs of rank 5 or more need static spatial dims, got " + x.to_string());
      to_last.push_back(d);
      back.push_back(d - 1);
      spatial.push_back(x[d]);
      size *= x[d];
    }
    to_last.push_back(1);
    spatial.push_back(x[1]);
    Output t = ops::transpose(c.scope(), c.native(0), to_last, "channels_last");
    t = ops::reshape(c.scope(), t, {-1, size, 1, x[1]}, "as_image");
    std::vector<Output> y = c.scope().op_n("FusedBatchNorm", {t, scale, offset, mean, var}, a, "BatchNorm");
    Output volume = ops::reshape(c.scope(), y[0], spatial, "as_volume");
    c.set_output(0, ops::transpose(c.scope(), volume, back, "channels_first"));
  }
}

// LayerNormalization over the dims from `axis` on: y = (x - mean) /
// sqrt(var + epsilon) * scale + bias, the statistics in float32 (stash_type
// 1). The optional outputs Mean and InvStdDev keep x's rank, size 1 over the
// normalised dims.
void map_layer_norm(NodeContext& c) {
  const int rank = c.rank(0);
  const int64_t axis = normalize_axis(c, c.attr_int("axis", -1), rank, "axis");
  if (const int64_t stash = c.attr_int("stash_type", 1); stash != 1)
    c.fail_attr("stash_type", std::to_string(stash), "only float32 statistics (1) are supported");
  std::vector<int64_t> axes;
  for (int64_t d = axis; d < rank; ++d) axes.push_back(d);
  const Scope& s = c.scope();
  Output x = c.native(0);
  Output mean = ops::mean(s, x, axes, true, "mean");
  Output centred = ops::sub(s, x, mean, "centred");
  Output var = ops::mean(s, ops::square(s, centred, "squared"), axes, true, "variance");
  const float epsilon = c.attr_float("epsilon", 1e-5f);
  Output inv_std = ops::rsqrt(s, ops::add(s, var, ops::scalar(s, epsilon, "epsilon")), "inv_std_dev");
  Output y = ops::mul(s, ops::mul(s, centred, inv_std, "normalised"), c.weight_or(1, same, runtime_same), "scaled");
  if (c.has_input(2)) y = ops::add(s, y, c.weight_or(2, same, runtime_same), "shifted");
  c.set_output(0, y);
  if (c.node().output_size() > 1 && !c.node().output(1).empty()) c.set_output(1, mean);
  if (c.node().output_size() > 2 && !c.node().output(2).empty()) c.set_output(2, inv_std);
}

// InstanceNormalization: each (sample, channel) normalised over the spatial
// dims, y = (x - mean) / sqrt(var + epsilon) * scale[c] + bias[c] (NCHW...).
void map_instance_norm(NodeContext& c) {
  const int rank = c.rank(0);
  if (rank < 3) c.fail("needs an input of rank >= 3, got " + c.shape(0).to_string());
  std::vector<int64_t> axes;
  for (int64_t d = 2; d < rank; ++d) axes.push_back(d);
  const Scope& s = c.scope();
  Output x = c.native(0);
  Output centred = ops::sub(s, x, ops::mean(s, x, axes, true, "mean"), "centred");
  Output var = ops::mean(s, ops::square(s, centred, "squared"), axes, true, "variance");
  Output eps = ops::scalar(s, c.attr_float("epsilon", 1e-5f), "epsilon");
  Output normalised = ops::mul(s, centred, ops::rsqrt(s, ops::add(s, var, eps), "inv_std_dev"), "normalised");
  // scale and bias [C] as [C, 1, ...] against [N, C, spatial...].
  std::vector<int64_t> per_channel(static_cast<size_t>(rank - 1), 1);
  auto channel_shaped = [&](const Tensor& t) {
    per_channel[0] = t.num_elements();
    return t.reshaped(Shape(per_channel)).clone();
  };
  auto runtime_channel_shaped = [&](Output v) {
    per_channel[0] = -1;
    return ops::reshape(s, v, per_channel, "per_channel");
  };
  Output y = ops::mul(s, normalised, c.weight_or(1, channel_shaped, runtime_channel_shaped), "scaled");
  c.set_output(0, ops::add(s, y, c.weight_or(2, channel_shaped, runtime_channel_shaped), "shifted"));
}

// DepthToSpace (DCR and CRD modes) and SpaceToDepth as ONNX defines them: a
// reshape to 6-D, a transpose and a reshape back, on NCHW.
template <bool kToSpace>
void map_depth_space(NodeContext& c) {
  const Shape x = c.shape(0);
  if (x.rank() != 4) c.fail("needs a 4-D input, got " + x.to_string());
  const int64_t n = x[0] < 0 ? -1 : x[0], ch = x[1], h = x[2], w = x[3];
  if (ch < 0 || h < 0 || w < 0) c.fail("needs channels, height and width known at import, got " + x.to_string());
  const int64_t b = c.attr_int("blocksize", 0);
  if (b < 1) c.fail_attr("blocksize", std::to_string(b), "must be positive");
  const Scope& s = c.scope();
  std::vector<int64_t> split, perm, out;
  if (kToSpace) {
    if (ch % (b * b)) c.fail("channels " + std::to_string(ch) + " are not a multiple of blocksize^2");
    const std::string mode = c.attr_string("mode", "DCR");
    if (mode == "DCR") {
      split = {n, b, b, ch / (b * b), h, w};
      perm = {0, 3, 4, 1, 5, 2};
    } else if (mode == "CRD") {
      split = {n, ch / (b * b), b, b, h, w};
      perm = {0, 1, 4, 2, 5, 3};
    } else {
      c.fail_attr("mode", mode, "expected DCR or CRD");
    }
    out = {n, ch / (b * b), h * b, w * b};
  } else {
    if (h % b || w % b) c.fail("height and width of " + x.to_string() + " are not multiples of the blocksize");
    split = {n, ch, h / b, b, w / b, b};
    perm = {0, 3, 5, 1, 2, 4};
    out = {n, ch * b * b, h / b, w / b};
  }
  Output y = ops::reshape(s, c.native(0), split, "split");
  y = ops::transpose(s, y, perm, "blocks");
  c.set_output(0, ops::reshape(s, y, out, "merged"));
}

// ONNX: y = x / (bias + alpha / size * sum over `size` channels of x^2)^beta,
// the window centred (floor((size-1)/2) before, ceil((size-1)/2) after);
// TF's LRN sums over [d - r, d + r] with alpha unscaled: r = (size-1)/2 for
// odd sizes, alpha_tf = alpha / size.
void map_lrn(NodeContext& c) {
  const int64_t size = c.attr_int("size", 0);
  if (size < 1 || size % 2 == 0) c.fail_attr("size", std::to_string(size), "only odd window sizes are supported");
  Attrs a;
  a.set("depth_radius", (size - 1) / 2)
      .set("bias", static_cast<double>(c.attr_float("bias", 1.0f)))
      .set("alpha", static_cast<double>(c.attr_float("alpha", 1e-4f)) / static_cast<double>(size))
      .set("beta", static_cast<double>(c.attr_float("beta", 0.75f)));
  c.set_output(0, c.scope().op("LRN", {c.nhwc(0)}, a, "LRN"), true);
}

// ---- resizing ----------------------------------------------------------------------------

void map_resize(NodeContext& c) {
  const Shape x = c.shape(0);
  if (x.rank() != 4) c.fail("only 4-D inputs (N,C,H,W) are supported, got " + x.to_string());
  std::vector<int64_t> size;
  std::vector<double> scale_attr;
  ops::DimReferences refs;
  if (c.has_input(3)) {
    // Constant sizes, or ones read at run time from tensors' dims
    // (F.interpolate(x, size=y.shape[2:]) with dynamic axes).
    std::optional<SymShape> sizes = c.constant(3) ? std::nullopt : c.symbolic(3);
    if (!sizes) {
      sizes.emplace();
      for (int64_t v : c.constant_ints(3, "sizes")) sizes->push_back(SymDim::constant(v));
    }
    if (sizes->size() != 4) c.fail("sizes must have 4 entries");
    for (int i = 0; i < 2; ++i) {
      const SymDim& d = (*sizes)[static_cast<size_t>(i)];
      const bool same = d.known() ? d.value == x[i] : !d.derived && d.tensor == c.node().input(0) && d.dim == i;
      if (!same) c.fail("resizing the batch or channel dimension is not supported");
    }
    for (int i = 0; i < 2; ++i) {
      const SymDim& d = (*sizes)[static_cast<size_t>(2 + i)];
      if (d.known()) {
        if (d.value < 1) c.fail("sizes must be positive, got " + std::to_string(d.value));
        size.push_back(d.value);
      } else {
        if (d.derived) c.fail("an output size computed by arithmetic on run-time dims is not supported");
        const auto [tensor, dim] = c.dim_source(d);
        refs.add(i, tensor, dim);
        size.push_back(0);
      }
    }
  } else if (c.has_input(2)) {
    std::optional<Tensor> scales = c.constant(2);
    if (!scales || scales->num_elements() != 4 || scales->dtype() != DType::kFloat32)
      c.fail("scales must be 4 constant floats");
    const float* s = scales->data<float>();
    if (s[0] != 1.0f || s[1] != 1.0f) c.fail("resizing the batch or channel dimension is not supported");
    for (int i = 0; i < 2; ++i) {
      if (!(s[2 + i] > 0.0f) || !std::isfinite(s[2 + i]))
        c.fail("scales must give output sizes from 1 to 2^31, got scale " + std::to_string(s[2 + i]));
      if (x[2 + i] < 0) {
        size.push_back(0);  // floor(size * scale) at each run
        continue;
      }
      // Checked in double before converting: a huge scale must not reach an integer conversion.
      const double out = std::floor(static_cast<double>(x[2 + i]) * s[2 + i]);
      if (!(out >= 1.0 && out <= static_cast<double>(int64_t{1} << 31)))
        c.fail("scales must give output sizes from 1 to 2^31, got scale " + std::to_string(s[2 + i]) + " for size " +
               std::to_string(x[2 + i]));
      size.push_back(static_cast<int64_t>(out));
    }
    scale_attr = {s[2], s[3]};  // the coordinate transform uses ONNX's scales, not OH/H
  } else {
    c.fail("needs scales or sizes");
  }
  const std::string mode = c.attr_string("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    c.fail_attr("mode", mode, "expected nearest, linear or cubic");
  const std::string ctm = c.attr_string("coordinate_transformation_mode", "half_pixel");
  if (ctm == "tf_crop_and_resize") c.fail_attr("coordinate_transformation_mode", ctm, "not supported");
  Attrs a;
  a.set("size", size).set("mode", mode).set("coordinate_transformation_mode", ctm);
  if (!scale_attr.empty()) a.set("scales", scale_attr);
  if (!refs.from.empty()) a.set("from", refs.from);
  if (mode == "nearest") a.set("nearest_mode", c.attr_string("nearest_mode", "round_prefer_floor"));
  if (mode == "cubic")
    a.set("cubic_coeff_a", static_cast<double>(c.attr_float("cubic_coeff_a", -0.75f)))
        .set("exclude_outside", c.attr_int("exclude_outside", 0) != 0);
  c.set_output(0, c.scope().op("Resize", refs.inputs(c.nhwc(0)), a, "Resize"), true);
}

// RoiAlign (opset 16 semantics; opset 10's legacy pixel offsets arrive as
// output_half_pixel from the version converter).
void map_roi_align(NodeContext& c) {
  if (c.rank(0) != 4) c.fail("only 4-D inputs (N,C,H,W) are supported, got " + c.shape(0).to_string());
  const std::string ctm = c.attr_string("coordinate_transformation_mode", "half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    c.fail_attr("coordinate_transformation_mode", ctm, "expected half_pixel or output_half_pixel");
  Attrs a;
  a.set("mode", c.attr_string("mode", "avg"))
      .set("output_height", c.attr_int("output_height", 1))
      .set("output_width", c.attr_int("output_width", 1))
      .set("sampling_ratio", c.attr_int("sampling_ratio", 0))
      .set("spatial_scale", static_cast<double>(c.attr_float("spatial_scale", 1.0f)))
      .set("half_pixel", ctm == "half_pixel");
  c.set_output(0, c.scope().op("RoiAlign", {c.nhwc(0), c.native(1), c.native(2)}, a, "RoiAlign"), true);
}

// ---- matrix products --------------------------------------------------------------------

void map_gemm(NodeContext& c) {
  const bool trans_a = c.attr_int("transA", 0) != 0, trans_b = c.attr_int("transB", 0) != 0;
  const float alpha = c.attr_float("alpha", 1.0f), beta = c.attr_float("beta", 1.0f);
  Output a = c.native(0);
  Output b;
  bool b_transposed = trans_b;
  if (c.constant(1)) {
    // A weight: stored [K, N] (transposed at import) and scaled by alpha.
    b = c.weight(1, [&](const Tensor& t) {
      Tensor w = trans_b ? evaluate("Transpose", {t}, Attrs().set("perm", std::vector<int64_t>{1, 0})) : t;
      return alpha == 1.0f ? w : evaluate("Mul", {w, Tensor::scalar<float>(alpha)});
    });
    b_transposed = false;
  } else {
    b = c.native(1);
  }
  Output y =
      c.scope().op("MatMul", {a, b}, Attrs().set("transpose_a", trans_a).set("transpose_b", b_transposed), "MatMul");
  if (!c.constant(1) && alpha != 1.0f)
    y = c.scope().op("Mul", {y, ops::scalar(c.scope(), alpha, "alpha")}, {}, "alpha");
  if (c.has_input(2) && beta != 0.0f) {
    const Shape cs = c.shape(2);
    if (c.constant(2) && cs.rank() <= 1) {
      // A bias vector (or scalar) broadcast over rows: BiasAdd.
      const int64_t n = c.shape(1)[trans_b ? 0 : 1];
      Output bias = c.weight(2, [&](const Tensor& t) {
        Tensor v =
            t.num_elements() == 1 && n > 1
                ? evaluate("Mul", {Tensor::from_vector<float>({n}, std::vector<float>(static_cast<size_t>(n), 1.0f)),
                                   t.reshaped({1})})
                : t.reshaped({t.num_elements()}).clone();
        return beta == 1.0f ? v : evaluate("Mul", {v, Tensor::scalar<float>(beta)});
      });
      y = c.scope().op("BiasAdd", {y, bias}, {}, "bias");
    } else {
      Output cc = c.native(2);
      if (beta != 1.0f) cc = c.scope().op("Mul", {cc, ops::scalar(c.scope(), beta, "beta")}, {}, "beta");
      y = c.scope().op("Add", {y, cc}, {}, "Add");
    }
  }
  c.set_output(0, y);
}

// numpy matmul: 2-D x 2-D is MatMul; higher ranks batch with broadcasting
// (BatchMatMul); a 1-D operand gets a unit dimension that is removed after.
void map_matmul(NodeContext& c) {
  const int ra = c.rank(0), rb = c.rank(1);
  Output a = c.native(0);
  Output b = c.constant(1) && rb == 2 ? c.weight(1, [](const Tensor& t) { return t; }) : c.native(1);
  if (ra == 1) a = ops::expand_dims(c.scope(), a, 0, "a_row");
  if (rb == 1) b = ops::expand_dims(c.scope(), b, 1, "b_col");
  Output y = std::max(ra, rb) <= 2 ? c.scope().op("MatMul", {a, b}, {}, "MatMul")
                                   : c.scope().op("BatchMatMul", {a, b}, {}, "BatchMatMul");
  if (ra == 1) y = ops::squeeze(c.scope(), y, {-2}, "drop_row");
  if (rb == 1) y = ops::squeeze(c.scope(), y, {-1}, "drop_col");
  c.set_output(0, y);
}

// GridSample(X [N,C,H,W], grid [N,OH,OW,2]): hub's GridSample on NHWC.
void map_grid_sample(NodeContext& c) {
  if (c.rank(0) != 4) c.fail("only 4-D inputs (N,C,H,W) are supported, got " + c.shape(0).to_string());
  Attrs a;
  a.set("mode", c.attr_string("mode", "bilinear"))
      .set("padding_mode", c.attr_string("padding_mode", "zeros"))
      .set("align_corners", c.attr_int("align_corners", 0) != 0);
  c.set_output(0, c.scope().op("GridSample", {c.nhwc(0), c.native(1)}, a, "GridSample"), true);
}

// ---- RNN, GRU, LSTM ---------------------------------------------------------------------
//
// Unrolled over the (static) sequence: the input projection of every step in
// one MatMul, then per step the recurrent MatMul and the gates, as ONNX
// defines them (gate order LSTM i, o, f, c; GRU z, r, h). Weights become
// module variables, one per direction.

enum class Cell { kRnn, kGru, kLstm };

struct Recurrence {
  Cell cell;
  int gates;  // per hidden unit
  int64_t hidden, steps;
  bool batch_first;
};

// ONNX's default activations for the cell, the only ones hub maps.
void check_activations(NodeContext& c, Cell cell) {
  const std::vector<std::string> defaults = cell == Cell::kLstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                            : cell == Cell::kGru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                                 : std::vector<std::string>{"Tanh"};
  const std::vector<std::string> got = c.attr_strings("activations");
  if (got.empty()) return;
  std::vector<std::string> want = defaults;
  if (got.size() == 2 * defaults.size()) want.insert(want.end(), defaults.begin(), defaults.end());  // bidirectional
  if (got != want) {
    std::string text;
    for (const std::string& g : got) text += (text.empty() ? "" : ",") + g;
    c.fail_attr("activations", text, "only the defaults are supported");
  }
}

void map_recurrent(NodeContext& c) {
  const Cell cell = c.op() == "LSTM" ? Cell::kLstm : c.op() == "GRU" ? Cell::kGru : Cell::kRnn;
  Recurrence r{cell,
               cell == Cell::kLstm  ? 4
               : cell == Cell::kGru ? 3
                                    : 1,
               c.attr_int("hidden_size", 0), 0, c.attr_int("layout", 0) != 0};
  // Bounds before any arithmetic: hidden units, and the steps unrolled at import.
  constexpr int64_t kMaxHidden = int64_t{1} << 24, kMaxSteps = 8192;
  if (r.hidden < 1 || r.hidden > kMaxHidden)
    c.fail_attr("hidden_size", std::to_string(r.hidden), "must be in [1, 2^24]");
  check_activations(c, cell);
  if (c.has_attr("clip"))
    c.fail_attr("clip", std::to_string(c.attr_float("clip", 0)), "cell clipping is not supported");
  if (c.attr_int("input_forget", 0))
    c.fail_attr("input_forget", "1", "coupled input and forget gates are not supported");
  const std::string direction = c.attr_string("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    c.fail_attr("direction", direction, "expected forward, reverse or bidirectional");
  const int dirs = direction == "bidirectional" ? 2 : 1;
  if (c.rank(0) != 3) c.fail("X must have rank 3, got " + c.shape(0).to_string());
  const Shape x = c.shape(0);
  r.steps = x[r.batch_first ? 1 : 0];
  const int64_t input = x[2];
  if (r.steps < 1 || input < 0) c.fail("X " + x.to_string() + " needs a known sequence length and input size");
  if (r.steps > kMaxSteps)
    c.fail("a sequence of " + std::to_string(r.steps) + " steps is longer than the " + std::to_string(kMaxSteps) +
           " hub unrolls at import");
  const Shape w = c.shape(1);
  if (w.rank() != 3 || w[0] != dirs || w[1] != r.gates * r.hidden || w[2] != input)
    c.fail("W " + w.to_string() + " is not [" + std::to_string(dirs) + ", " + std::to_string(r.gates * r.hidden) +
           ", " + std::to_string(input) + "]");
  const int lens = 4, initial_h = 5, initial_c = 6, peepholes = 7;
  if (c.has_input(lens)) {
    std::optional<Tensor> l = c.constant(lens);
    if (!l) c.fail("sequence_lens (input 4) must be a constant equal to the sequence length");
    const Tensor all = evaluate("Cast", {*l}, Attrs().set("dtype", DType::kInt64));
    for (int64_t i = 0; i < all.num_elements(); ++i)
      if (all.data<int64_t>()[i] != r.steps)
        c.fail("sequence_lens (input 4) must all be the sequence length " + std::to_string(r.steps) +
               " (shorter sequences are not supported)");
  }
  const Scope& s = c.scope();
  // X as [steps, batch, input].
  Output xs = r.batch_first ? ops::transpose(s, c.native(0), {1, 0, 2}, "TimeMajor") : c.native(0);
  std::vector<Output> ys, last_h, last_c;
  for (int d = 0; d < dirs; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    const std::string tag = d ? "_backward" : "";
    auto part = [d](const Tensor& t) {  // direction d's slice of a [dirs, ...] tensor
      std::vector<int64_t> dims(t.shape().dims().begin() + 1, t.shape().dims().end());
      std::vector<int64_t> begin(t.shape().rank(), 0), size(t.shape().dims().begin(), t.shape().dims().end());
      begin[0] = d;
      size[0] = 1;
      return evaluate("Slice", {t}, Attrs().set("begin", begin).set("size", size)).reshaped(Shape(dims));
    };
    auto transposed_part = [&](const Tensor& t) {
      return evaluate("Transpose", {part(t)}, Attrs().set("perm", std::vector<int64_t>{1, 0}));
    };
    const Output wt = c.weight(1, transposed_part);  // [input, G*hidden]
    const bool lbr = cell == Cell::kGru && c.attr_int("linear_before_reset", 0) != 0;
    // R transposed, [hidden, G*hidden]. A GRU without linear_before_reset
    // multiplies the state by its z and r columns and the reset state by its
    // h columns: two weights, so no step computes columns it does not use.
    auto r_columns = [&](int64_t from, int64_t count) {
      return c.weight(2, [&, from, count](const Tensor& t) {
        return evaluate(
            "Slice", {transposed_part(t)},
            Attrs().set("begin", std::vector<int64_t>{0, from}).set("size", std::vector<int64_t>{r.hidden, count}));
      });
    };
    const bool split_r = cell == Cell::kGru && !lbr;
    const Output rt = split_r ? r_columns(0, 2 * r.hidden) : c.weight(2, transposed_part);
    const std::optional<Output> rt_h =
        split_r ? std::optional<Output>(r_columns(2 * r.hidden, r.hidden)) : std::nullopt;
    // Every step's input projection, plus both biases where given.
    Output xp = ops::reshape(
        s, ops::matmul(s, ops::reshape(s, xs, {-1, input}, "Flat" + tag), wt, false, false, "InputProjection" + tag),
        {r.steps, -1, r.gates * r.hidden}, "Steps" + tag);
    std::optional<Output> rb;  // GRU's recurrent bias of h, applied inside the reset (linear_before_reset)
    if (c.has_input(3)) {
      const int64_t g = r.gates * r.hidden;
      auto bias = [&](int64_t from, int64_t count) {
        return [=](const Tensor& t) {
          return evaluate("Slice", {part(t)},
                          Attrs().set("begin", std::vector<int64_t>{from}).set("size", std::vector<int64_t>{count}));
        };
      };
      xp = ops::add(s, xp, c.weight(3, bias(0, g)), "InputBias" + tag);
      if (lbr) {
        xp = ops::add(
            s, xp,
            c.weight(3,
                     [=](const Tensor& t) {
                       Tensor b =
                           evaluate("Slice", {part(t)},
                                    Attrs().set("begin", std::vector<int64_t>{g}).set("size", std::vector<int64_t>{g}));
                       std::fill(b.data<float>() + 2 * r.hidden, b.data<float>() + g, 0.0f);  // Rbh applies later
                       return b;
                     }),
            "RecurrentBias" + tag);
        rb = c.weight(3, bias(g + 2 * r.hidden, r.hidden));
      } else {
        xp = ops::add(s, xp, c.weight(3, bias(g, g)), "RecurrentBias" + tag);
      }
    }
    std::optional<Output> pi, po, pf;
    if (cell == Cell::kLstm && c.has_input(peepholes)) {
      auto peep = [&](int64_t k) {
        return c.weight(peepholes, [=](const Tensor& t) {
          return evaluate(
              "Slice", {part(t)},
              Attrs().set("begin", std::vector<int64_t>{k * r.hidden}).set("size", std::vector<int64_t>{r.hidden}));
        });
      };
      pi = peep(0), po = peep(1), pf = peep(2);
    }
    auto step_input = [&](int64_t t) {
      return ops::squeeze(s, ops::slice(s, xp, {t, 0, 0}, {1, -1, -1}, "Step" + tag), {0}, "StepInput" + tag);
    };
    auto gate = [&](Output all, int k) { return ops::slice(s, all, {0, k * r.hidden}, {-1, r.hidden}, "Gate" + tag); };
    auto initial = [&](int i, const std::string& name) {
      if (c.has_input(i))
        return ops::squeeze(s, ops::slice(s, c.native(i), {d, 0, 0}, {1, -1, -1}, name + "Slice" + tag), {0},
                            name + tag);
      return ops::zeros_like(s, gate(step_input(0), 0), name + tag);
    };
    Output h = initial(initial_h, "InitialH");
    Output cst = cell == Cell::kLstm ? initial(initial_c, "InitialC") : Output{};
    std::vector<Output> hs(static_cast<size_t>(r.steps));
    for (int64_t i = 0; i < r.steps; ++i) {
      const int64_t t = reverse ? r.steps - 1 - i : i;
      const Output xt = step_input(t);
      const Output hr = ops::matmul(s, h, rt, false, false, "Recurrent" + tag);
      if (cell == Cell::kRnn) {
        h = ops::tanh(s, ops::add(s, xt, hr), "H" + tag);
      } else if (cell == Cell::kLstm) {
        const Output all = ops::add(s, xt, hr, "Gates" + tag);
        Output ig = gate(all, 0), og = gate(all, 1), fg = gate(all, 2);
        if (pi) ig = ops::add(s, ig, ops::mul(s, *pi, cst));
        if (pf) fg = ops::add(s, fg, ops::mul(s, *pf, cst));
        cst = ops::add(s, ops::mul(s, ops::sigmoid(s, fg), cst),
                       ops::mul(s, ops::sigmoid(s, ig), ops::tanh(s, gate(all, 3))), "C" + tag);
        if (po) og = ops::add(s, og, ops::mul(s, *po, cst));
        h = ops::mul(s, ops::sigmoid(s, og), ops::tanh(s, cst), "H" + tag);
      } else {
        const Output z = ops::sigmoid(s, ops::add(s, gate(xt, 0), gate(hr, 0)), "Z" + tag);
        const Output rg = ops::sigmoid(s, ops::add(s, gate(xt, 1), gate(hr, 1)), "R" + tag);
        Output hh;
        if (lbr) {
          Output rec = gate(hr, 2);
          if (rb) rec = ops::add(s, rec, *rb);
          hh = ops::tanh(s, ops::add(s, gate(xt, 2), ops::mul(s, rg, rec)));
        } else {
          hh = ops::tanh(s, ops::add(s, gate(xt, 2), ops::matmul(s, ops::mul(s, rg, h), *rt_h)));
        }
        // (1 - z) * hh + z * h = hh + z * (h - hh)
        h = ops::add(s, hh, ops::mul(s, z, ops::sub(s, h, hh)), "H" + tag);
      }
      hs[static_cast<size_t>(t)] = ops::expand_dims(s, h, 0, "HStep" + tag);
    }
    ys.push_back(
        ops::expand_dims(s, ops::concat(s, hs, 0, "Hs" + tag), 1, "Direction" + tag));  // [steps, 1, batch, hidden]
    last_h.push_back(ops::expand_dims(s, h, 0, "LastH" + tag));
    if (cell == Cell::kLstm) last_c.push_back(ops::expand_dims(s, cst, 0, "LastC" + tag));
  }
  auto joined = [&](const std::vector<Output>& v, int64_t axis, const std::string& name) {
    return v.size() == 1 ? v[0] : ops::concat(s, v, axis, name);
  };
  Output y = joined(ys, 1, "Y");  // [steps, dirs, batch, hidden]
  Output yh = joined(last_h, 0, "Y_h"), yc = cell == Cell::kLstm ? joined(last_c, 0, "Y_c") : Output{};
  if (r.batch_first) {
    y = ops::transpose(s, y, {2, 0, 1, 3}, "BatchFirstY");
    yh = ops::transpose(s, yh, {1, 0, 2}, "BatchFirstY_h");
    if (cell == Cell::kLstm) yc = ops::transpose(s, yc, {1, 0, 2}, "BatchFirstY_c");
  }
  const int outputs = c.node().output_size();
  if (outputs > 0 && !c.node().output(0).empty()) c.set_output(0, y);
  if (outputs > 1 && !c.node().output(1).empty()) c.set_output(1, yh);
  if (outputs > 2 && !c.node().output(2).empty()) c.set_output(2, yc);
}

// ---- Einsum ------------------------------------------------------------------------------

// Einsum (hub/interop/einsum.h), its errors naming this node.
void map_einsum(NodeContext& c) {
  const std::string equation = c.attr_string("equation", "");
  std::vector<Output> inputs;
  for (int i = 0; i < c.num_inputs(); ++i) inputs.push_back(c.native(i));
  try {
    c.set_output(0, interop::einsum(c.scope(), equation, inputs));
  } catch (const Error& e) {
    if (e.code() == Code::kUnimplemented) c.fail_attr("equation", equation, e.message());
    c.fail(e.message());
  }
}
}  // namespace

void add_nn_mappers(std::map<std::string, OpMapper>& m) {
  const std::set<std::string> window_attrs{"auto_pad", "dilations", "kernel_shape", "pads", "strides"};
  auto with = [&](std::set<std::string> extra) {
    extra.insert(window_attrs.begin(), window_attrs.end());
    return extra;
  };
  m["Conv"] = {map_conv, with({"group"})};
  m["ConvTranspose"] = {map_conv_transpose, with({"group", "output_padding", "output_shape"})};
  m["MaxPool"] = {map_pool<true>, with({"ceil_mode", "storage_order"})};
  m["AveragePool"] = {map_pool<false>, with({"ceil_mode", "count_include_pad"})};
  m["GlobalAveragePool"] = {map_global_pool<false>, {}};
  m["GlobalMaxPool"] = {map_global_pool<true>, {}};
  m["BatchNormalization"] = {map_batch_norm, {"epsilon", "momentum", "training_mode"}};
  m["LRN"] = {map_lrn, {"alpha", "beta", "bias", "size"}};
  m["RoiAlign"] = {
      map_roi_align,
      {"coordinate_transformation_mode", "mode", "output_height", "output_width", "sampling_ratio", "spatial_scale"}};
  m["LayerNormalization"] = {map_layer_norm, {"axis", "epsilon", "stash_type"}};
  m["InstanceNormalization"] = {map_instance_norm, {"epsilon"}};
  m["DepthToSpace"] = {map_depth_space<true>, {"blocksize", "mode"}};
  m["SpaceToDepth"] = {map_depth_space<false>, {"blocksize"}};
  m["Resize"] = {map_resize,
                 {"coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside", "extrapolation_value", "mode",
                  "nearest_mode"}};
  m["Gemm"] = {map_gemm, {"alpha", "beta", "transA", "transB"}};
  m["MatMul"] = {map_matmul, {}};
  m["Einsum"] = {map_einsum, {"equation"}};
  const std::set<std::string> recurrent{"activation_alpha", "activation_beta", "activations", "clip",
                                        "direction",        "hidden_size",     "layout"};
  auto plus = [&](std::set<std::string> extra) {
    extra.insert(recurrent.begin(), recurrent.end());
    return extra;
  };
  m["RNN"] = {map_recurrent, recurrent};
  m["GRU"] = {map_recurrent, plus({"linear_before_reset"})};
  m["LSTM"] = {map_recurrent, plus({"input_forget"})};
  m["GridSample"] = {map_grid_sample, {"align_corners", "mode", "padding_mode"}};
}

}  // namespace hub::onnx_interop
