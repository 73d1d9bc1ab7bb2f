// MaxPool, AvgPool and their gradients (formulas in hub/ops/pool.h).
#include "hub/ops/pool.h"

#include <algorithm>
#include <optional>

#include "hub/ops/padding.h"
#include "hub/ops/registry.h"

namespace hub {
namespace {

// TF's output size and padding for one spatial dim (hub/ops/padding.h). in
// may be kUnknownDim (then out is unknown too). Throws via fail() when VALID
// leaves no output.
template <class Fail>
ops::WindowDim tf_padding(int64_t in, int64_t k, int64_t s, ops::Padding padding, const char* dim, Fail fail) {
  ops::WindowDim p = ops::window_dim(in, k, s, 1, padding);
  if (padding == ops::Padding::kValid && in != kUnknownDim && p.out < 1)
    fail(std::string("VALID padding needs input ") + dim + " >= window " + dim + ", got " +
         std::to_string(in) + " < " + std::to_string(k));
  return p;
}

// [a, b] or TF's [1, a, b, 1] -> {a, b}.
template <class Fail>
std::pair<int64_t, int64_t> window_attr(const Attrs& attrs, const char* name, Fail fail) {
  const std::vector<int64_t>& v = attrs.get_ints(name);
  int64_t a = 1, b = 1;
  if (v.size() == 2) {
    a = v[0], b = v[1];
  } else if (v.size() == 4 && v[0] == 1 && v[3] == 1) {
    a = v[1], b = v[2];
  } else {
    fail(std::string("attribute ") + name + " must be [h, w] or [1, h, w, 1], got " + attr_to_string(v));
  }
  if (a < 1 || b < 1) fail(std::string("attribute ") + name + " must be positive, got " + attr_to_string(v));
  return {a, b};
}

template <class Fail>
ops::PoolGeometry geometry(const Attrs& attrs, const Shape& in, Fail fail) {
  ops::PoolGeometry g;
  auto [kh, kw] = window_attr(attrs, "ksize", fail);
  auto [sh, sw] = window_attr(attrs, "strides", fail);
  const std::string& padding_text = attrs.get_string("padding");
  std::optional<ops::Padding> padding = ops::parse_padding(padding_text);
  if (!padding) fail("attribute padding must be \"SAME\" or \"VALID\", got \"" + padding_text + "\"");
  g.n = in[0], g.h = in[1], g.w = in[2], g.c = in[3];
  g.kh = kh, g.kw = kw, g.sh = sh, g.sw = sw;
  ops::WindowDim ph = tf_padding(g.h, kh, sh, *padding, "height", fail);
  ops::WindowDim pw = tf_padding(g.w, kw, sw, *padding, "width", fail);
  g.oh = ph.out, g.ow = pw.out;
  g.pad_top = ph.pad_before, g.pad_bottom = ph.pad_after;
  g.pad_left = pw.pad_before, g.pad_right = pw.pad_after;
  return g;
}

std::vector<TensorSpec> pool_shape_fn(const InferContext& c) {
  c.expect_rank(0, 4);
  c.expect_dtype(0, DType::kFloat32);
  ops::PoolGeometry g = geometry(c.attrs(), c.shape(0), [&](const std::string& m) { c.fail(m); });
  return {{DType::kFloat32, Shape{g.n, g.oh, g.ow, g.c}}};
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
      c.fail("input " + std::to_string(i) + " " + c.input(i).to_string() +
             " does not match the pooled shape " + out.to_string() + " of input 0 " +
             c.input(0).to_string());
  return {{DType::kFloat32, c.shape(0)}};
}

Attrs pool_attrs(const Node& n) {
  Attrs a;
  for (const char* k : {"ksize", "strides", "padding"}) a.set(k, n.attrs.get(k));
  return a;
}

// One pooling op: its input count, the shared window attributes and its shape function.
OpDefBuilder pool_op(const char* name, int inputs, ShapeFn shape_fn) {
  OpDefBuilder b(name);
  b.inputs(inputs)
      .attr("ksize", AttrType::kInts)
      .attr("strides", AttrType::kInts)
      .attr("padding", AttrType::kString)
      .shape_fn(std::move(shape_fn));
  return b;
}

const OpRegistrar max_pool_op =
    pool_op("MaxPool", 1, pool_shape_fn)
        .grad([](const GradContext& c) {
          return std::vector<Output>{c.scope.op("MaxPoolGrad", {c.inputs[0], c.outputs[0], c.grads[0]},
                                                pool_attrs(c.node))};
        })
        .doc("Max over each [kh,kw] window of NHWC x (TF SAME/VALID padding).");

const OpRegistrar avg_pool_op =
    pool_op("AvgPool", 1, pool_shape_fn)
        .grad([](const GradContext& c) {
          return std::vector<Output>{c.scope.op("AvgPoolGrad", {c.inputs[0], c.grads[0]}, pool_attrs(c.node))};
        })
        .doc("Mean over the in-bounds part of each [kh,kw] window of NHWC x.");

const OpRegistrar max_pool_grad_op =
    pool_op("MaxPoolGrad", 3, pool_grad_shape_fn)
        .doc("Gradient of MaxPool: grad routed to each window's first maximum.")
        .no_gradient("a gradient op; second-order gradients are not supported");

const OpRegistrar avg_pool_grad_op =
    pool_op("AvgPoolGrad", 2, pool_grad_shape_fn)
        .grad([](const GradContext& c) {
          return std::vector<Output>{Output{}, c.scope.op("AvgPool", {c.grads[0]}, pool_attrs(c.node))};
        })
        .doc("Gradient of AvgPool: grad / count spread over each window.");

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
              Attrs().set("ksize", std::move(ksize)).set("strides", std::move(strides)).set("padding", padding),
              name);
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
