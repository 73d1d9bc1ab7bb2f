#include "hub/ops/math.h"

#include <algorithm>

#include "hub/ops/elementwise.h"
#include "hub/ops/reduction.h"
#include "hub/ops/registry.h"
#include "hub/ops/state.h"

namespace hub {
namespace {

bool is_arith(DType d) { return d == DType::kFloat32 || d == DType::kInt32 || d == DType::kInt64; }

std::vector<TensorSpec> arith_unary_shape_fn(const InferContext& c) {
  if (!is_arith(c.dtype(0))) c.fail("needs float32, int32 or int64, got " + c.input(0).to_string());
  return {c.input(0)};
}
std::vector<TensorSpec> float_unary_shape_fn(const InferContext& c) {
  if (c.dtype(0) != DType::kFloat32) c.fail("needs float32, got " + c.input(0).to_string());
  return {c.input(0)};
}

std::vector<TensorSpec> compare_shape_fn(const InferContext& c) {
  c.expect_same_dtypes();
  DType d = c.dtype(0);
  if (!is_arith(d) && d != DType::kUInt8)
    c.fail("comparison needs float32, int32, int64 or uint8, got " + c.input(0).to_string());
  try {
    return {{DType::kBool, broadcast_shapes(c.shape(0), c.shape(1))}};
  } catch (const Error& e) {
    c.fail(e.message());
  }
}

using Grad1 = std::vector<Output>;

Grad1 square_grad(const GradContext& c) {
  const Scope& s = c.scope;
  return {ops::mul(s, c.grads[0], ops::mul(s, c.inputs[0], ops::scalar(s, 2.0f)))};
}
Grad1 abs_grad(const GradContext& c) { return {ops::mul(c.scope, c.grads[0], ops::sign(c.scope, c.inputs[0]))}; }
Grad1 sqrt_grad(const GradContext& c) {
  const Scope& s = c.scope;
  return {ops::div(s, ops::mul(s, c.grads[0], ops::scalar(s, 0.5f)), c.outputs[0])};
}
Grad1 rsqrt_grad(const GradContext& c) {
  const Scope& s = c.scope;
  Output y = c.outputs[0];
  Output y3 = ops::mul(s, ops::square(s, y), y);
  return {ops::mul(s, ops::mul(s, c.grads[0], ops::scalar(s, -0.5f)), y3)};
}
Grad1 exp_grad(const GradContext& c) { return {ops::mul(c.scope, c.grads[0], c.outputs[0])}; }
Grad1 log_grad(const GradContext& c) { return {ops::div(c.scope, c.grads[0], c.inputs[0])}; }
Grad1 reciprocal_grad(const GradContext& c) {
  const Scope& s = c.scope;
  return {ops::neg(s, ops::mul(s, c.grads[0], ops::square(s, c.outputs[0])))};
}

}  // namespace

HUB_REGISTER_OP(Neg)
    .inputs(1)
    .shape_fn(arith_unary_shape_fn)
    .grad([](const GradContext& c) { return std::vector<Output>{ops::neg(c.scope, c.grads[0])}; })
    .doc("y = -x.");
HUB_REGISTER_OP(Square).inputs(1).shape_fn(arith_unary_shape_fn).grad(square_grad).doc("y = x^2.");
HUB_REGISTER_OP(Abs).inputs(1).shape_fn(arith_unary_shape_fn).grad(abs_grad).doc("y = |x|.");
HUB_REGISTER_OP(Sign)
    .inputs(1)
    .shape_fn(arith_unary_shape_fn)
    .grad([](const GradContext& c) { return std::vector<Output>{ops::zeros_like(c.scope, c.inputs[0])}; })
    .doc("y = -1, 0 or 1 by the sign of x.");
HUB_REGISTER_OP(Sqrt).inputs(1).shape_fn(float_unary_shape_fn).grad(sqrt_grad).doc("y = sqrt(x).");
HUB_REGISTER_OP(Rsqrt).inputs(1).shape_fn(float_unary_shape_fn).grad(rsqrt_grad).doc("y = 1/sqrt(x).");
HUB_REGISTER_OP(Exp).inputs(1).shape_fn(float_unary_shape_fn).grad(exp_grad).doc("y = e^x.");
HUB_REGISTER_OP(Log).inputs(1).shape_fn(float_unary_shape_fn).grad(log_grad).doc("y = ln(x).");
HUB_REGISTER_OP(Reciprocal).inputs(1).shape_fn(float_unary_shape_fn).grad(reciprocal_grad).doc("y = 1/x.");

HUB_REGISTER_OP(Cast)
    .inputs(1)
    .attr("dtype", AttrType::kDType)
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      return {{c.attrs().get_dtype("dtype"), c.shape(0)}};
    })
    .grad([](const GradContext& c) -> std::vector<Output> {
      const GraphBuilder& g = c.scope.graph();
      if (g.spec(c.inputs[0]).dtype == DType::kFloat32 && c.node.outputs[0].dtype == DType::kFloat32)
        return {c.grads[0]};
      return {Output{}};
    })
    .doc("y = x converted to dtype (static_cast semantics).");

HUB_REGISTER_OP(Equal)
    .inputs(2)
    .shape_fn(compare_shape_fn)
    .doc("a == b as bool, broadcasting.")
    .no_gradient("bool output");
HUB_REGISTER_OP(NotEqual)
    .inputs(2)
    .shape_fn(compare_shape_fn)
    .doc("a != b as bool, broadcasting.")
    .no_gradient("bool output");
HUB_REGISTER_OP(Greater)
    .inputs(2)
    .shape_fn(compare_shape_fn)
    .doc("a > b as bool, broadcasting.")
    .no_gradient("bool output");
HUB_REGISTER_OP(GreaterEqual)
    .inputs(2)
    .shape_fn(compare_shape_fn)
    .doc("a >= b as bool, broadcasting.")
    .no_gradient("bool output");
HUB_REGISTER_OP(Less)
    .inputs(2)
    .shape_fn(compare_shape_fn)
    .doc("a < b as bool, broadcasting.")
    .no_gradient("bool output");
HUB_REGISTER_OP(LessEqual)
    .inputs(2)
    .shape_fn(compare_shape_fn)
    .doc("a <= b as bool, broadcasting.")
    .no_gradient("bool output");

HUB_REGISTER_OP(BroadcastLike)
    .inputs(2)
    .attr("reduced_axes", AttrType::kInts, std::vector<int64_t>{})
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      const auto& axes_attr = c.attrs().get_ints("reduced_axes");
      Shape x = c.shape(0);
      const Shape& like = c.shape(1);
      if (!axes_attr.empty()) {
        std::vector<int> axes;
        try {
          axes = ops::normalize_axes(axes_attr, like.rank(), "reduced_axes");
        } catch (const Error& e) {
          c.fail(e.message());
        }
        if (x.rank() + static_cast<int>(axes.size()) != like.rank())
          c.fail("x " + c.input(0).to_string() + " is not like " + c.input(1).to_string() + " reduced over " +
                 std::to_string(axes.size()) + " axes");
        x = ops::insert_reduced_axes(x, axes);
      }
      Shape out;
      try {
        out = broadcast_shapes(x, like);
      } catch (const Error& e) {
        c.fail(e.message());
      }
      if (out.rank() != like.rank())
        c.fail("x " + c.input(0).to_string() + " has more dims than like " + c.input(1).to_string());
      for (int d = 0; d < out.rank(); ++d)
        if (like[d] >= 0 && out[d] != like[d])
          c.fail("x " + c.input(0).to_string() + " does not broadcast to like " + c.input(1).to_string());
      return {{c.dtype(0), like}};
    })
    .grad([](const GradContext& c) -> std::vector<Output> {
      const Scope& s = c.scope;
      Output g = c.grads[0];
      const auto& axes = c.node.attrs.get_ints("reduced_axes");
      if (!axes.empty()) g = ops::sum(s, g, axes, false);
      return {ops::reduce_to_like(s, g, c.inputs[0]), Output{}};
    })
    .doc("x broadcast to like's run-time shape (after re-inserting reduced_axes as size 1).");

HUB_REGISTER_OP(BroadcastTo)
    .inputs(1)
    .attr("shape", AttrType::kInts)
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      const auto& shape = c.attrs().get_ints("shape");
      for (int64_t d : shape)
        if (d < 0) c.fail("shape " + attr_to_string(shape) + " has a negative dim");
      try {
        return {{c.dtype(0), broadcast_shapes(c.shape(0), Shape(shape))}};
      } catch (const Error& e) {
        c.fail(e.message());
      }
    })
    .grad([](const GradContext& c) {
      return std::vector<Output>{ops::reduce_to_like(c.scope, c.grads[0], c.inputs[0])};
    })
    .doc("x broadcast to broadcast(x.shape, shape) (NumPy rules; ONNX Expand, TF BroadcastTo).");

namespace ops {

std::vector<int> normalize_axes(const std::vector<int64_t>& axes, int rank, const std::string& what) {
  std::vector<int> out;
  if (axes.empty()) {
    for (int d = 0; d < rank; ++d) out.push_back(d);
    return out;
  }
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      throw_error(Code::kInvalidArgument, what + ": axis " + std::to_string(a) + " is outside [" +
                                              std::to_string(-rank) + ", " + std::to_string(rank) + ") for rank " +
                                              std::to_string(rank));
    out.push_back(static_cast<int>(a < 0 ? a + rank : a));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Shape insert_reduced_axes(const Shape& x, const std::vector<int>& axes) {
  const int rank = x.rank() + static_cast<int>(axes.size());
  std::vector<int64_t> dims;
  size_t k = 0;
  int xi = 0;
  for (int d = 0; d < rank; ++d) {
    if (k < axes.size() && axes[k] == d) {
      dims.push_back(1);
      ++k;
    } else {
      dims.push_back(x[xi++]);
    }
  }
  return Shape(std::move(dims));
}

Output neg(const Scope& s, Output x, const std::string& name) { return s.op("Neg", {x}, {}, name); }
Output square(const Scope& s, Output x, const std::string& name) { return s.op("Square", {x}, {}, name); }
Output abs(const Scope& s, Output x, const std::string& name) { return s.op("Abs", {x}, {}, name); }
Output sign(const Scope& s, Output x, const std::string& name) { return s.op("Sign", {x}, {}, name); }
Output sqrt(const Scope& s, Output x, const std::string& name) { return s.op("Sqrt", {x}, {}, name); }
Output rsqrt(const Scope& s, Output x, const std::string& name) { return s.op("Rsqrt", {x}, {}, name); }
Output exp(const Scope& s, Output x, const std::string& name) { return s.op("Exp", {x}, {}, name); }
Output log(const Scope& s, Output x, const std::string& name) { return s.op("Log", {x}, {}, name); }
Output reciprocal(const Scope& s, Output x, const std::string& name) { return s.op("Reciprocal", {x}, {}, name); }
Output cast(const Scope& s, Output x, DType dtype, const std::string& name) {
  return s.op("Cast", {x}, Attrs().set("dtype", dtype), name);
}
Output equal(const Scope& s, Output a, Output b, const std::string& name) { return s.op("Equal", {a, b}, {}, name); }
Output not_equal(const Scope& s, Output a, Output b, const std::string& name) {
  return s.op("NotEqual", {a, b}, {}, name);
}
Output greater(const Scope& s, Output a, Output b, const std::string& name) {
  return s.op("Greater", {a, b}, {}, name);
}
Output greater_equal(const Scope& s, Output a, Output b, const std::string& name) {
  return s.op("GreaterEqual", {a, b}, {}, name);
}
Output less(const Scope& s, Output a, Output b, const std::string& name) { return s.op("Less", {a, b}, {}, name); }
Output less_equal(const Scope& s, Output a, Output b, const std::string& name) {
  return s.op("LessEqual", {a, b}, {}, name);
}
Output broadcast_to(const Scope& s, Output x, const std::vector<int64_t>& shape, const std::string& name) {
  return s.op("BroadcastTo", {x}, Attrs().set("shape", shape), name);
}
Output broadcast_like(const Scope& s, Output x, Output like, const std::vector<int64_t>& reduced_axes,
                      const std::string& name) {
  return s.op("BroadcastLike", {x, like}, Attrs().set("reduced_axes", reduced_axes), name);
}

}  // namespace ops
}  // namespace hub
