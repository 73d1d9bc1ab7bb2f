#include "hub/ops/reduction.h"

#include "hub/ops/elementwise.h"
#include "hub/ops/math.h"
#include "hub/ops/registry.h"
#include "hub/ops/state.h"

namespace hub {
namespace {

// Input `i` reduced over the node's axes (keep_dims as set).
Shape reduced_shape(const InferContext& c, int i) {
  const Shape& x = c.shape(i);
  std::vector<int> axes;
  try {
    axes = ops::normalize_axes(c.attrs().get_ints("axes"), x.rank(), "axes");
  } catch (const Error& e) {
    c.fail(e.message() + " of input " + c.input(i).to_string());
  }
  bool keep = c.attrs().get_bool("keep_dims");
  std::vector<int64_t> dims;
  size_t k = 0;
  for (int d = 0; d < x.rank(); ++d) {
    if (k < axes.size() && axes[k] == d) {
      ++k;
      if (keep) dims.push_back(1);
    } else {
      dims.push_back(x[d]);
    }
  }
  return Shape(dims);
}

std::vector<TensorSpec> reduce_shape_fn(const InferContext& c) {
  if (!is_arith(c.dtype(0))) c.fail("needs float32, int32 or int64, got " + c.input(0).to_string());
  return {{c.dtype(0), reduced_shape(c, 0)}};
}

// g (the reduced-shape gradient) re-expanded to x's shape.
Output expand(const GradContext& c, Output g) {
  const GraphBuilder& graph = c.scope.graph();
  if (c.node.attrs.get_bool("keep_dims")) return ops::broadcast_like(c.scope, g, c.inputs[0]);
  int rank = graph.spec(c.inputs[0]).shape.rank();
  std::vector<int> axes = ops::normalize_axes(c.node.attrs.get_ints("axes"), rank, "axes");
  return ops::broadcast_like(c.scope, g, c.inputs[0], std::vector<int64_t>(axes.begin(), axes.end()));
}

std::vector<Output> sum_grad(const GradContext& c) { return {expand(c, c.grads[0])}; }

std::vector<Output> mean_grad(const GradContext& c) {
  const Scope& s = c.scope;
  const Shape& x = s.graph().spec(c.inputs[0]).shape;
  std::vector<int> axes = ops::normalize_axes(c.node.attrs.get_ints("axes"), x.rank(), "axes");
  double n = 1;  // as a double: a static shape may declare more than an int64 counts
  bool known = true;
  for (int a : axes) {
    if (x[a] < 0)
      known = false;
    else
      n *= static_cast<double>(x[a]);
  }
  Output g = c.grads[0];
  if (known) {
    g = ops::mul(s, g, ops::scalar(s, n == 0 ? 0.0f : 1.0f / static_cast<float>(n)));
  } else {
    // N is only known at run time: count the reduced elements with the same reduction.
    Output count = ops::sum(s, ops::ones_like(s, c.inputs[0]), c.node.attrs.get_ints("axes"),
                            c.node.attrs.get_bool("keep_dims"), "Count");
    g = ops::div(s, g, count);
  }
  return {expand(c, g)};
}

// Max and Min: g to the elements equal to the result, split evenly among ties.
std::vector<Output> extreme_grad(const GradContext& c) {
  const Scope& s = c.scope;
  const Attrs& a = c.node.attrs;
  Output y = expand(c, c.outputs[0]);
  Output ind = ops::cast(s, ops::equal(s, y, c.inputs[0]), DType::kFloat32);
  Output count = ops::sum(s, ind, a.get_ints("axes"), a.get_bool("keep_dims"), "Count");
  return {ops::mul(s, ind, expand(c, ops::div(s, c.grads[0], count)))};
}

// ArgMax, ArgMin.
std::vector<TensorSpec> arg_extreme_shape_fn(const InferContext& c) {
  if (!is_arith(c.dtype(0))) c.fail("needs float32, int32 or int64, got " + c.input(0).to_string());
  const Shape& x = c.shape(0);
  int64_t axis = c.attrs().get_int("axis");
  if (x.rank() == 0 || axis < -x.rank() || axis >= x.rank())
    c.fail("axis " + std::to_string(axis) + " is outside the dims of " + c.input(0).to_string());
  if (axis < 0) axis += x.rank();
  if (x[static_cast<int>(axis)] == 0)
    c.fail("axis " + std::to_string(axis) + " of " + c.input(0).to_string() + " is empty");
  std::vector<int64_t> dims;
  for (int d = 0; d < x.rank(); ++d)
    if (d != axis) dims.push_back(x[d]);
  return {{DType::kInt64, Shape(dims)}};
}

}  // namespace

HUB_REGISTER_OP(Sum)
    .inputs(1)
    .attr("axes", AttrType::kInts, std::vector<int64_t>{})
    .attr("keep_dims", AttrType::kBool, false)
    .shape_fn(reduce_shape_fn)
    .grad(sum_grad)
    .doc("Sum over axes (empty: all).");
HUB_REGISTER_OP(Mean)
    .inputs(1)
    .attr("axes", AttrType::kInts, std::vector<int64_t>{})
    .attr("keep_dims", AttrType::kBool, false)
    .shape_fn(reduce_shape_fn)
    .grad(mean_grad)
    .doc("Mean over axes (empty: all).");
HUB_REGISTER_OP(Max)
    .inputs(1)
    .attr("axes", AttrType::kInts, std::vector<int64_t>{})
    .attr("keep_dims", AttrType::kBool, false)
    .shape_fn(reduce_shape_fn)
    .grad(extreme_grad)
    .doc("Maximum over axes (empty: all); the gradient is split evenly among ties.");

HUB_REGISTER_OP(Min)
    .inputs(1)
    .attr("axes", AttrType::kInts, std::vector<int64_t>{})
    .attr("keep_dims", AttrType::kBool, false)
    .shape_fn(reduce_shape_fn)
    .grad(extreme_grad)
    .doc("Minimum over axes (empty: all); the gradient is split evenly among ties.");
HUB_REGISTER_OP(Prod)
    .inputs(1)
    .attr("axes", AttrType::kInts, std::vector<int64_t>{})
    .attr("keep_dims", AttrType::kBool, false)
    .shape_fn(reduce_shape_fn)
    .grad([](const GradContext& c) {
      return std::vector<Output>{c.scope.op("ProdGrad", {c.grads[0], c.inputs[0]}, c.node.attrs)};
    })
    .doc("Product over axes (empty: all).");
HUB_REGISTER_OP(ProdGrad)
    .inputs(2)
    .attr("axes", AttrType::kInts, std::vector<int64_t>{})
    .attr("keep_dims", AttrType::kBool, false)
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      c.expect_dtype(0, DType::kFloat32);
      c.expect_dtype(1, DType::kFloat32);
      Shape want = reduced_shape(c, 1);
      if (!want.compatible_with(c.shape(0)) || want.rank() != c.shape(0).rank())
        c.fail("gradient " + c.input(0).to_string() + " is not x " + c.input(1).to_string() + " reduced (" +
               want.to_string() + ")");
      return {c.input(1)};
    })
    .no_gradient("a gradient op; second-order gradients are not supported")
    .doc("(g, x) -> g * (product of the other elements of x's group), at x's shape.");

HUB_REGISTER_OP(ArgMax)
    .inputs(1)
    .attr("axis", AttrType::kInt)
    .attr("select_last", AttrType::kBool, false)
    .shape_fn(arg_extreme_shape_fn)
    .doc("Index (int64) of the largest value along axis; the first on ties (the last with select_last).")
    .no_gradient("integer output");
HUB_REGISTER_OP(ArgMin)
    .inputs(1)
    .attr("axis", AttrType::kInt)
    .attr("select_last", AttrType::kBool, false)
    .shape_fn(arg_extreme_shape_fn)
    .doc("Index (int64) of the smallest value along axis; the first on ties (the last with select_last).")
    .no_gradient("integer output");

HUB_REGISTER_OP(CumSum)
    .inputs(1)
    .attr("axis", AttrType::kInt)
    .attr("exclusive", AttrType::kBool, false)
    .attr("reverse", AttrType::kBool, false)
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      if (!is_arith(c.dtype(0))) c.fail("needs float32, int32 or int64, got " + c.input(0).to_string());
      const int64_t axis = c.attrs().get_int("axis");
      if (axis < -c.shape(0).rank() || axis >= c.shape(0).rank())
        c.fail("axis " + std::to_string(axis) + " is outside the dims of " + c.input(0).to_string());
      return {c.input(0)};
    })
    .grad([](const GradContext& c) {
      // Each input adds to the outputs after it (before it, reversed): the
      // gradient is the same sum taken the other way.
      Attrs a = c.node.attrs;
      a.set("reverse", !a.get_bool("reverse"));
      return std::vector<Output>{c.scope.op("CumSum", {c.grads[0]}, a, "CumSumGrad")};
    })
    .doc(
        "Running sum along axis (ONNX CumSum, TF Cumsum); exclusive leaves each element out of its own sum, "
        "reverse sums from the end.");

HUB_REGISTER_OP(TopK)
    .inputs(1)
    .outputs(2)
    .attr("k", AttrType::kInt)
    .attr("sorted", AttrType::kBool, true)
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      if (!is_arith(c.dtype(0))) c.fail("needs float32, int32 or int64, got " + c.input(0).to_string());
      const Shape& x = c.shape(0);
      int64_t k = c.attrs().get_int("k");
      if (x.rank() < 1) c.fail("needs rank >= 1, got " + c.input(0).to_string());
      if (k < 0) c.fail("k = " + std::to_string(k) + " must be >= 0");
      int64_t last = x[x.rank() - 1];
      if (last >= 0 && last < k)
        c.fail("k = " + std::to_string(k) + " exceeds the last dim of " + c.input(0).to_string());
      Shape out = x;
      out.set_dim(x.rank() - 1, k);
      return {{c.dtype(0), out}, {DType::kInt32, out}};
    })
    .grad([](const GradContext& c) -> std::vector<Output> {
      if (!c.grads[0].valid()) return {Output{}};
      return {c.scope.op("TopKGrad", {c.grads[0], c.outputs[1], c.inputs[0]})};
    })
    .doc(
        "k largest values along the last axis and their int32 indices; ties: lower index first; NaN ranks above "
        "every number.");
HUB_REGISTER_OP(DynamicTopK)
    .inputs(2)
    .outputs(2)
    .attr("sorted", AttrType::kBool, true)
    .value_dependent_shape()
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      if (!is_arith(c.dtype(0))) c.fail("needs float32, int32 or int64, got " + c.input(0).to_string());
      if ((c.dtype(1) != DType::kInt32 && c.dtype(1) != DType::kInt64) || c.shape(1).num_elements() > 1)
        c.fail("k must be one int32 or int64, got " + c.input(1).to_string());
      const Shape& x = c.shape(0);
      if (x.rank() < 1) c.fail("needs rank >= 1, got " + c.input(0).to_string());
      Shape out = x;
      if (x[x.rank() - 1] != 0) out.set_dim(x.rank() - 1, kUnknownDim);  // k is read at run time
      return {{c.dtype(0), out}, {DType::kInt32, out}};
    })
    .grad([](const GradContext& c) -> std::vector<Output> {
      if (!c.grads[0].valid()) return {Output{}, Output{}};
      return {c.scope.op("TopKGrad", {c.grads[0], c.outputs[1], c.inputs[0]}), Output{}};
    })
    .doc("TopK with k read at each run from input 1 (a count computed by the graph: min(k, boxes left)).");

HUB_REGISTER_OP(TopKGrad)
    .inputs(3)
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      c.expect_dtype(1, DType::kInt32);
      if (c.dtype(0) != c.dtype(2))
        c.fail("gradient " + c.input(0).to_string() + " and x " + c.input(2).to_string() + " differ in dtype");
      if (c.shape(0).rank() != c.shape(2).rank() || !c.shape(0).compatible_with(c.shape(1)))
        c.fail("gradient " + c.input(0).to_string() + ", indices " + c.input(1).to_string() + " and x " +
               c.input(2).to_string() + " do not match");
      return {c.input(2)};
    })
    .doc("(g [...,k], indices [...,k], x [...,n]) -> g scattered into x's shape along the last axis.")
    .no_gradient("a gradient op; second-order gradients are not supported");

HUB_REGISTER_OP(L2Loss)
    .inputs(1)
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      c.expect_dtype(0, DType::kFloat32);
      return {{DType::kFloat32, Shape{}}};
    })
    .grad([](const GradContext& c) { return std::vector<Output>{ops::mul(c.scope, c.inputs[0], c.grads[0])}; })
    .doc("sum(x^2) / 2.");

namespace ops {

namespace {
Attrs reduce_attrs(const std::vector<int64_t>& axes, bool keep_dims) {
  return Attrs().set("axes", axes).set("keep_dims", keep_dims);
}
}  // namespace

Output sum(const Scope& s, Output x, const std::vector<int64_t>& axes, bool keep_dims, const std::string& name) {
  return s.op("Sum", {x}, reduce_attrs(axes, keep_dims), name);
}
Output mean(const Scope& s, Output x, const std::vector<int64_t>& axes, bool keep_dims, const std::string& name) {
  return s.op("Mean", {x}, reduce_attrs(axes, keep_dims), name);
}
Output max(const Scope& s, Output x, const std::vector<int64_t>& axes, bool keep_dims, const std::string& name) {
  return s.op("Max", {x}, reduce_attrs(axes, keep_dims), name);
}
Output min(const Scope& s, Output x, const std::vector<int64_t>& axes, bool keep_dims, const std::string& name) {
  return s.op("Min", {x}, reduce_attrs(axes, keep_dims), name);
}
Output prod(const Scope& s, Output x, const std::vector<int64_t>& axes, bool keep_dims, const std::string& name) {
  return s.op("Prod", {x}, reduce_attrs(axes, keep_dims), name);
}
Output arg_max(const Scope& s, Output x, int64_t axis, const std::string& name) {
  return s.op("ArgMax", {x}, Attrs().set("axis", axis), name);
}
Output cum_sum(const Scope& s, Output x, int64_t axis, bool exclusive, bool reverse, const std::string& name) {
  return s.op("CumSum", {x}, Attrs().set("axis", axis).set("exclusive", exclusive).set("reverse", reverse), name);
}
Output arg_min(const Scope& s, Output x, int64_t axis, const std::string& name) {
  return s.op("ArgMin", {x}, Attrs().set("axis", axis), name);
}
TopKResult top_k(const Scope& s, Output x, int64_t k, bool sorted, const std::string& name) {
  auto outs = s.op_n("TopK", {x}, Attrs().set("k", k).set("sorted", sorted), name);
  return {outs[0], outs[1]};
}
Output l2_loss(const Scope& s, Output x, const std::string& name) { return s.op("L2Loss", {x}, {}, name); }

}  // namespace ops
}  // namespace hub
