// MaxPool, AvgPool and their gradients (formulas in hub/ops/pool.h).
#include "hub/ops/pool.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <tuple>

#include "hub/ops/padding.h"
#include "hub/ops/registry.h"

namespace hub {
namespace ops {

PoolTaps pool_taps(int64_t o, int64_t in, int64_t k, int64_t s, int64_t d, int64_t pad_before, int64_t pad_after) {
  PoolTaps t;
  const int64_t start = o * s - pad_before;
  const int64_t skip = start < 0 ? (-start + d - 1) / d : 0;           // taps before position 0
  const int64_t fit = start <= in - 1 ? (in - 1 - start) / d + 1 : 0;  // taps before position in
  t.first = start + skip * d;
  t.count = std::max<int64_t>(0, std::min(k, fit) - skip);
  t.extent = std::min(k, (in + pad_after - start + d - 1) / d);  // start >= -pad_before
  return t;
}

PoolTaps PoolGeometry::row_taps(int64_t i) const { return pool_taps(i, h, kh, sh, dh, pad_top, pad_bottom); }
PoolTaps PoolGeometry::col_taps(int64_t j) const { return pool_taps(j, w, kw, sw, dw, pad_left, pad_right); }

}  // namespace ops

namespace {

// [a, b] or TF's [1, a, b, 1] -> {a, b}, each >= 1.
template <class Fail>
std::pair<int64_t, int64_t> window_attr(const Attrs& attrs, const char* name, Fail fail) {
  const std::vector<int64_t>& v = attrs.get_ints(name);
  auto pair = ops::spatial_pair(v);
  if (!pair) fail(std::string("attribute ") + name + " must be [h, w] or [1, h, w, 1], got " + attr_to_string(v));
  if (pair->first < 1 || pair->second < 1)
    fail(std::string("attribute ") + name + " must be positive, got " + attr_to_string(v));
  return *pair;
}

// Output size and padding along one dim; fails when the window does not fit
// or (known sizes) some window has no in-bounds tap.
template <class Fail>
ops::WindowDim resolve_dim(int64_t in, int64_t k, int64_t s, int64_t d, ops::Padding padding, int64_t before,
                           int64_t after, bool ceil_mode, const char* dim, Fail fail) {
  ops::WindowDim r = ops::window_dim(in, k, s, d, padding, before, after, ceil_mode);
  if (in == kUnknownDim) return r;
  const int64_t span = (k - 1) * d + 1;
  if (r.out < 1)
    fail("input " + std::string(dim) + " " + std::to_string(in) + " plus padding " +
         std::to_string(r.pad_before + r.pad_after) + " is smaller than the (dilated) window " + std::to_string(span));
  // A window that starts inside the input has a tap there, and so do none
  // that start past it (the last ones); one that starts before it has its first
  // in-bounds candidate at (start mod d), periodic in o with period
  // d / gcd(s, d), and fewer taps skipped the later it starts. So the first
  // period and the last position decide, however large the output.
  const int64_t period = d / std::gcd(s, d);
  auto empty = [&](int64_t o) { return ops::pool_taps(o, in, k, s, d, r.pad_before, r.pad_after).count == 0; };
  std::optional<int64_t> bad;
  for (int64_t o = 0; o < std::min(r.out, period) && !bad; ++o)
    if (empty(o)) bad = o;
  const int64_t past = (in + r.pad_before + s - 1) / s;  // the first window starting past the input
  if (!bad && past < r.out) bad = past;
  if (bad)
    fail("output " + std::string(dim) + " position " + std::to_string(*bad) + " pools only padding (input " +
         std::to_string(in) + ", window " + std::to_string(span) + ", pads " + std::to_string(r.pad_before) + "+" +
         std::to_string(r.pad_after) + ")");
  return r;
}

template <class Fail>
ops::PoolGeometry geometry(const Attrs& attrs, const Shape& in, Fail fail) {
  ops::PoolGeometry g;
  auto [kh, kw] = window_attr(attrs, "ksize", fail);
  auto [sh, sw] = window_attr(attrs, "strides", fail);
  int64_t dh = 1, dw = 1;
  if (attrs.has("dilations")) std::tie(dh, dw) = window_attr(attrs, "dilations", fail);
  ops::Padding padding;
  ops::Pads2D pads;
  std::string error = ops::padding_attrs(attrs, &padding, &pads);
  if (!error.empty()) fail("attribute " + error);
  const bool ceil_mode = attrs.get_bool("ceil_mode");
  if (ceil_mode && padding != ops::Padding::kExplicit)
    fail("attribute ceil_mode needs padding \"EXPLICIT\", got \"" + attrs.get_string("padding") + "\"");
  g.n = in[0], g.h = in[1], g.w = in[2], g.c = in[3];
  g.kh = kh, g.kw = kw, g.sh = sh, g.sw = sw, g.dh = dh, g.dw = dw;
  g.count_include_pad = attrs.has("count_include_pad") && attrs.get_bool("count_include_pad");
  ops::WindowDim ph = resolve_dim(g.h, kh, sh, dh, padding, pads.top, pads.bottom, ceil_mode, "height", fail);
  ops::WindowDim pw = resolve_dim(g.w, kw, sw, dw, padding, pads.left, pads.right, ceil_mode, "width", fail);
  g.oh = ph.out, g.ow = pw.out;
  g.pad_top = ph.pad_before, g.pad_bottom = ph.pad_after;
  g.pad_left = pw.pad_before, g.pad_right = pw.pad_after;
  return g;
}

std::vector<TensorSpec> pool_shape_fn(const InferContext& c) {
  c.expect_rank(0, 4);
  const DType t = c.dtype(0);
  if (t != DType::kFloat32 && !is_8bit(t))
    c.fail("input " + c.input(0).to_string() + " must be float32, uint8 or int8");
  ops::PoolGeometry g = geometry(c.attrs(), c.shape(0), [&](const std::string& m) { c.fail(m); });
  return {{t, Shape{g.n, g.oh, g.ow, g.c}}};
}

// Grad ops: input 0 is the forward input; the last input is the output-shaped grad.
std::vector<TensorSpec> pool_grad_shape_fn(const InferContext& c) {
  for (int i = 0; i < c.num_inputs(); ++i) {
    c.expect_rank(i, 4);
    c.expect_dtype(i, DType::kFloat32);
  }
  ops::PoolGeometry g = geometry(c.attrs(), c.shape(0), [&](const std::string& m) { c.fail(m); });
  Shape out{g.n, g.oh, g.ow, g.c};
  for (int i = 1; i < c.num_inputs(); ++i)
    if (!c.shape(i).compatible_with(out))
      c.fail("input " + std::to_string(i) + " " + c.input(i).to_string() + " does not match the pooled shape " +
             out.to_string() + " of input 0 " + c.input(0).to_string());
  return {{DType::kFloat32, c.shape(0)}};
}

enum class Kind { kMax, kAvg };

// One pooling op: its input count, its attributes (shared ones plus its
// kind's) and its shape function. A gradient op carries exactly its forward
// op's attributes.
OpDefBuilder pool_op(const char* name, Kind kind, int inputs, ShapeFn shape_fn) {
  OpDefBuilder b(name);
  b.inputs(inputs)
      .attr("ksize", AttrType::kInts)
      .attr("strides", AttrType::kInts)
      .attr("padding", AttrType::kString)
      .attr("explicit_paddings", AttrType::kInts, std::vector<int64_t>{})
      .attr("ceil_mode", AttrType::kBool, false)
      .shape_fn(std::move(shape_fn));
  if (kind == Kind::kMax)
    b.attr("dilations", AttrType::kInts, std::vector<int64_t>{1, 1});
  else
    b.attr("count_include_pad", AttrType::kBool, false);
  return b;
}

const OpRegistrar max_pool_op =
    pool_op("MaxPool", Kind::kMax, 1, pool_shape_fn)
        .grad([](const GradContext& c) {
          return std::vector<Output>{c.scope.op("MaxPoolGrad", {c.inputs[0], c.outputs[0], c.grads[0]}, c.node.attrs)};
        })
        .doc(
            "Max over each (dilated) [kh,kw] window of NHWC x; SAME/VALID/EXPLICIT padding "
            "(pads are -inf), ceil_mode.");

const OpRegistrar avg_pool_op =
    pool_op("AvgPool", Kind::kAvg, 1, pool_shape_fn)
        .grad([](const GradContext& c) {
          return std::vector<Output>{c.scope.op("AvgPoolGrad", {c.inputs[0], c.grads[0]}, c.node.attrs)};
        })
        .doc(
            "Mean over each [kh,kw] window of NHWC x, divided by its in-bounds count (or, with "
            "count_include_pad, by its size within the padding).");

const OpRegistrar max_pool_grad_op = pool_op("MaxPoolGrad", Kind::kMax, 3, pool_grad_shape_fn)
                                         .doc("Gradient of MaxPool: grad routed to each window's first maximum.")
                                         .no_gradient("a gradient op; second-order gradients are not supported");

const OpRegistrar avg_pool_grad_op =
    pool_op("AvgPoolGrad", Kind::kAvg, 2, pool_grad_shape_fn)
        .grad([](const GradContext& c) {
          return std::vector<Output>{Output{}, c.scope.op("AvgPool", {c.grads[0]}, c.node.attrs)};
        })
        .doc("Gradient of AvgPool: grad / divisor spread over each window's in-bounds taps.");

}  // namespace

namespace ops {

PoolGeometry pool_geometry(const Attrs& attrs, const Shape& input, const std::string& node) {
  return geometry(attrs, input, [&](const std::string& m) -> void {
    throw_error(Code::kInvalidArgument, "pooling node '" + node + "': " + m);
  });
}

namespace {
Output pool(const Scope& s, const char* op, Output x, std::vector<int64_t> ksize, std::vector<int64_t> strides,
            const std::string& padding, const std::string& name) {
  return s.op(op, {x},
              Attrs().set("ksize", std::move(ksize)).set("strides", std::move(strides)).set("padding", padding), name);
}
}  // namespace

Output max_pool(const Scope& s, Output x, std::vector<int64_t> ksize, std::vector<int64_t> strides,
                const std::string& padding, const std::string& name) {
  return pool(s, "MaxPool", x, std::move(ksize), std::move(strides), padding, name);
}

Output avg_pool(const Scope& s, Output x, std::vector<int64_t> ksize, std::vector<int64_t> strides,
                const std::string& padding, const std::string& name) {
  return pool(s, "AvgPool", x, std::move(ksize), std::move(strides), padding, name);
}

}  // namespace ops
}  // namespace hub
