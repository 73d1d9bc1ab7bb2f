// MaxPool, AvgPool and their gradients (formulas in hub/ops/pool.h).
#include "hub/ops/pool.h"

#include <algorithm>

namespace hub {
namespace {

struct Padded {
  int64_t out = kUnknownDim;
  int64_t before = 0;
  int64_t after = 0;
};

// TF's output size and padding for one spatial dim. in may be kUnknownDim
// (then out is unknown too). Throws via fail() when VALID leaves no output.
template <class Fail>
Padded tf_padding(int64_t in, int64_t k, int64_t s, bool same, const char* dim, Fail fail) {
  Padded p;
  if (in == kUnknownDim) return p;
  if (same) {
    p.out = (in + s - 1) / s;
    int64_t total = std::max<int64_t>((p.out - 1) * s + k - in, 0);
    p.before = total / 2;
    p.after = total - p.before;
  } else {
    if (in < k)
      fail(std::string("VALID padding needs input ") + dim + " >= window " + dim + ", got " +
           std::to_string(in) + " < " + std::to_string(k));
    p.out = (in - k + s) / s;
  }
  return p;
}

// [a, b] or TF's [1, a, b, 1] -> {a, b}.
template <class Fail>
std::pair<int64_t, int64_t> window_attr(const Attrs& attrs, const char* name, Fail fail) {
  const std::vector<int64_t>& v = attrs.get_ints(name);
  auto show = [&] {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) s += ',';
      s += std::to_string(v[i]);
    }
    s += ']';
    return s;
  };
  int64_t a = 1, b = 1;
  if (v.size() == 2) {
    a = v[0], b = v[1];
  } else if (v.size() == 4 && v[0] == 1 && v[3] == 1) {
    a = v[1], b = v[2];
  } else {
    fail(std::string("attribute ") + name + " must be [h, w] or [1, h, w, 1], got " + show());
  }
  if (a < 1 || b < 1) fail(std::string("attribute ") + name + " must be positive, got " + show());
  return {a, b};
}

template <class Fail>
ops::PoolGeometry geometry(const Attrs& attrs, const Shape& in, Fail fail) {
  ops::PoolGeometry g;
  auto [kh, kw] = window_attr(attrs, "ksize", fail);
  auto [sh, sw] = window_attr(attrs, "strides", fail);
  const std::string& padding = attrs.get_string("padding");
  if (padding != "SAME" && padding != "VALID")
    fail("attribute padding must be \"SAME\" or \"VALID\", got \"" + padding + "\"");
  bool same = padding == "SAME";
  g.n = in[0], g.h = in[1], g.w = in[2], g.c = in[3];
  g.kh = kh, g.kw = kw, g.sh = sh, g.sw = sw;
  Padded ph = tf_padding(g.h, kh, sh, same, "height", fail);
  Padded pw = tf_padding(g.w, kw, sw, same, "width", fail);
  g.oh = ph.out, g.ow = pw.out;
  g.pad_top = ph.before, g.pad_bottom = ph.after;
  g.pad_left = pw.before, g.pad_right = pw.after;
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

}  // namespace

HUB_REGISTER_OP(MaxPool)
    .inputs(1)
    .attr("ksize", AttrType::kInts)
    .attr("strides", AttrType::kInts)
    .attr("padding", AttrType::kString)
    .shape_fn(pool_shape_fn)
    .grad([](const GradContext& c) {
      return std::vector<Output>{c.scope.op("MaxPoolGrad", {c.inputs[0], c.outputs[0], c.grads[0]},
                                            pool_attrs(c.node))};
    })
    .doc("Max over each [kh,kw] window of NHWC x (TF SAME/VALID padding).");

HUB_REGISTER_OP(AvgPool)
    .inputs(1)
    .attr("ksize", AttrType::kInts)
    .attr("strides", AttrType::kInts)
    .attr("padding", AttrType::kString)
    .shape_fn(pool_shape_fn)
    .grad([](const GradContext& c) {
      return std::vector<Output>{c.scope.op("AvgPoolGrad", {c.inputs[0], c.grads[0]}, pool_attrs(c.node))};
    })
    .doc("Mean over the in-bounds part of each [kh,kw] window of NHWC x.");

HUB_REGISTER_OP(MaxPoolGrad)
    .inputs(3)
    .attr("ksize", AttrType::kInts)
    .attr("strides", AttrType::kInts)
    .attr("padding", AttrType::kString)
    .shape_fn(pool_grad_shape_fn)
    .doc("Gradient of MaxPool: grad routed to each window's first maximum.");

HUB_REGISTER_OP(AvgPoolGrad)
    .inputs(2)
    .attr("ksize", AttrType::kInts)
    .attr("strides", AttrType::kInts)
    .attr("padding", AttrType::kString)
    .shape_fn(pool_grad_shape_fn)
    .grad([](const GradContext& c) {
      return std::vector<Output>{Output{}, c.scope.op("AvgPool", {c.grads[0]}, pool_attrs(c.node))};
    })
    .doc("Gradient of AvgPool: grad / count spread over each window.");

namespace ops {

PoolGeometry pool_geometry(const Attrs& attrs, const Shape& input, const std::string& node) {
  return geometry(attrs, input, [&](const std::string& m) -> void {
    throw_error(Code::kInvalidArgument, "pooling node '" + node + "': " + m);
  });
}

Output max_pool(const Scope& s, Output x, std::vector<int64_t> ksize, std::vector<int64_t> strides,
                const std::string& padding, const std::string& name) {
  return s.op("MaxPool", {x},
              Attrs().set("ksize", std::move(ksize)).set("strides", std::move(strides)).set("padding", padding),
              name);
}

Output avg_pool(const Scope& s, Output x, std::vector<int64_t> ksize, std::vector<int64_t> strides,
                const std::string& padding, const std::string& name) {
  return s.op("AvgPool", {x},
              Attrs().set("ksize", std::move(ksize)).set("strides", std::move(strides)).set("padding", padding),
              name);
}

}  // namespace ops
}  // namespace hub
