#include "hub/ops/math.h"

#include <algorithm>

#include "hub/ops/array.h"
#include "hub/ops/elementwise.h"
#include "hub/ops/reduction.h"
#include "hub/ops/registry.h"
#include "hub/ops/state.h"

namespace hub {
namespace {

std::vector<TensorSpec> arith_unary_shape_fn(const InferContext& c) {
  if (!is_arith(c.dtype(0))) c.fail("needs float32, int32 or int64, got " + c.input(0).to_string());
  return {c.input(0)};
}
std::vector<TensorSpec> float_unary_shape_fn(const InferContext& c) {
  if (c.dtype(0) != DType::kFloat32) c.fail("needs float32, got " + c.input(0).to_string());
  return {c.input(0)};
}

// Comparisons: float32, int32, int64 or uint8 operands, and bool for the
// equality ops (kEquality), broadcast to a bool result.
template <bool kEquality>
std::vector<TensorSpec> compare_shape_fn(const InferContext& c) {
  c.expect_same_dtypes();
  DType d = c.dtype(0);
  if (!is_arith(d) && d != DType::kUInt8 && !(kEquality && d == DType::kBool))
    c.fail("comparison needs float32, int32, int64 or uint8" + std::string(kEquality ? " or bool" : "") + ", got " +
           c.input(0).to_string());
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
Grad1 zero_grad(const GradContext& c) { return {ops::zeros_like(c.scope, c.inputs[0])}; }
Grad1 erf_grad(const GradContext& c) {
  const Scope& s = c.scope;
  Output slope = ops::exp(s, ops::neg(s, ops::square(s, c.inputs[0])));
  return {ops::mul(s, c.grads[0], ops::mul(s, slope, ops::scalar(s, 1.1283791670955126f)))};  // 2/sqrt(pi)
}
Grad1 sin_grad(const GradContext& c) { return {ops::mul(c.scope, c.grads[0], ops::cos(c.scope, c.inputs[0]))}; }
Grad1 cos_grad(const GradContext& c) {
  return {ops::neg(c.scope, ops::mul(c.scope, c.grads[0], ops::sin(c.scope, c.inputs[0])))};
}
Grad1 tan_grad(const GradContext& c) {
  const Scope& s = c.scope;
  return {ops::mul(s, c.grads[0], ops::add(s, ops::square(s, c.outputs[0]), ops::scalar(s, 1.0f)))};
}
Grad1 sinh_grad(const GradContext& c) { return {ops::mul(c.scope, c.grads[0], ops::cosh(c.scope, c.inputs[0]))}; }
Grad1 cosh_grad(const GradContext& c) { return {ops::mul(c.scope, c.grads[0], ops::sinh(c.scope, c.inputs[0]))}; }
// g * sign / sqrt(a + b x^2): the inverse sine, cosine and hyperbolic ones.
template <int kSign, int kA, int kB>
Grad1 inverse_sqrt_grad(const GradContext& c) {
  const Scope& s = c.scope;
  Output x2 = ops::square(s, c.inputs[0]);
  Output r = ops::rsqrt(s, ops::add(s, ops::mul(s, x2, ops::scalar(s, float{kB})), ops::scalar(s, float{kA})));
  return {ops::mul(s, c.grads[0], ops::mul(s, r, ops::scalar(s, float{kSign})))};
}
// g / (a + b x^2): Atan and Atanh.
template <int kB>
Grad1 inverse_square_grad(const GradContext& c) {
  const Scope& s = c.scope;
  Output x2 = ops::square(s, c.inputs[0]);
  return {ops::div(s, c.grads[0], ops::add(s, ops::mul(s, x2, ops::scalar(s, float{kB})), ops::scalar(s, 1.0f)))};
}

std::vector<TensorSpec> logical_shape_fn(const InferContext& c) {
  for (int i = 0; i < c.num_inputs(); ++i)
    if (c.dtype(i) != DType::kBool) c.fail("needs bool inputs, got " + c.input(i).to_string());
  if (c.num_inputs() == 1) return {c.input(0)};
  try {
    return {{DType::kBool, broadcast_shapes(c.shape(0), c.shape(1))}};
  } catch (const Error& e) {
    c.fail(e.message());
  }
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
HUB_REGISTER_OP(Erf).inputs(1).shape_fn(float_unary_shape_fn).grad(erf_grad).doc("y = erf(x), the error function.");
HUB_REGISTER_OP(Floor).inputs(1).shape_fn(float_unary_shape_fn).grad(zero_grad).doc("y = floor(x).");
HUB_REGISTER_OP(Ceil).inputs(1).shape_fn(float_unary_shape_fn).grad(zero_grad).doc("y = ceil(x).");
HUB_REGISTER_OP(Round)
    .inputs(1)
    .shape_fn(float_unary_shape_fn)
    .grad(zero_grad)
    .doc("y = x rounded to the nearest integer, halves to even.");
HUB_REGISTER_OP(Sin).inputs(1).shape_fn(float_unary_shape_fn).grad(sin_grad).doc("y = sin(x).");
HUB_REGISTER_OP(Cos).inputs(1).shape_fn(float_unary_shape_fn).grad(cos_grad).doc("y = cos(x).");
HUB_REGISTER_OP(Tan).inputs(1).shape_fn(float_unary_shape_fn).grad(tan_grad).doc("y = tan(x).");
HUB_REGISTER_OP(Asin).inputs(1).shape_fn(float_unary_shape_fn).grad(inverse_sqrt_grad<1, 1, -1>).doc("y = asin(x).");
HUB_REGISTER_OP(Acos).inputs(1).shape_fn(float_unary_shape_fn).grad(inverse_sqrt_grad<-1, 1, -1>).doc("y = acos(x).");
HUB_REGISTER_OP(Atan).inputs(1).shape_fn(float_unary_shape_fn).grad(inverse_square_grad<1>).doc("y = atan(x).");
HUB_REGISTER_OP(Sinh).inputs(1).shape_fn(float_unary_shape_fn).grad(sinh_grad).doc("y = sinh(x).");
HUB_REGISTER_OP(Cosh).inputs(1).shape_fn(float_unary_shape_fn).grad(cosh_grad).doc("y = cosh(x).");
HUB_REGISTER_OP(Asinh).inputs(1).shape_fn(float_unary_shape_fn).grad(inverse_sqrt_grad<1, 1, 1>).doc("y = asinh(x).");
HUB_REGISTER_OP(Acosh).inputs(1).shape_fn(float_unary_shape_fn).grad(inverse_sqrt_grad<1, -1, 1>).doc("y = acosh(x).");
HUB_REGISTER_OP(Atanh).inputs(1).shape_fn(float_unary_shape_fn).grad(inverse_square_grad<-1>).doc("y = atanh(x).");

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
    .shape_fn(compare_shape_fn<true>)
    .doc("a == b as bool, broadcasting.")
    .no_gradient("bool output");
HUB_REGISTER_OP(NotEqual)
    .inputs(2)
    .shape_fn(compare_shape_fn<true>)
    .doc("a != b as bool, broadcasting.")
    .no_gradient("bool output");
HUB_REGISTER_OP(Greater)
    .inputs(2)
    .shape_fn(compare_shape_fn<false>)
    .doc("a > b as bool, broadcasting.")
    .no_gradient("bool output");
HUB_REGISTER_OP(GreaterEqual)
    .inputs(2)
    .shape_fn(compare_shape_fn<false>)
    .doc("a >= b as bool, broadcasting.")
    .no_gradient("bool output");
HUB_REGISTER_OP(Less)
    .inputs(2)
    .shape_fn(compare_shape_fn<false>)
    .doc("a < b as bool, broadcasting.")
    .no_gradient("bool output");
HUB_REGISTER_OP(LessEqual)
    .inputs(2)
    .shape_fn(compare_shape_fn<false>)
    .doc("a <= b as bool, broadcasting.")
    .no_gradient("bool output");

HUB_REGISTER_OP(LogicalNot).inputs(1).shape_fn(logical_shape_fn).doc("y = !x (bool).").no_gradient("bool output");
HUB_REGISTER_OP(LogicalAnd)
    .inputs(2)
    .shape_fn(logical_shape_fn)
    .doc("a && b (bool), broadcasting.")
    .no_gradient("bool output");
HUB_REGISTER_OP(LogicalOr)
    .inputs(2)
    .shape_fn(logical_shape_fn)
    .doc("a || b (bool), broadcasting.")
    .no_gradient("bool output");

HUB_REGISTER_OP(Select)
    .inputs(3)
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      c.expect_dtype(0, DType::kBool);
      if (c.dtype(1) != c.dtype(2))
        c.fail("x " + c.input(1).to_string() + " and y " + c.input(2).to_string() + " differ in dtype");
      try {
        return {{c.dtype(1), broadcast_shapes(broadcast_shapes(c.shape(0), c.shape(1)), c.shape(2))}};
      } catch (const Error& e) {
        c.fail(e.message());
      }
    })
    .grad([](const GradContext& c) -> std::vector<Output> {
      const Scope& s = c.scope;
      Output zeros = ops::zeros_like(s, c.grads[0]);
      return {Output{}, ops::reduce_to_like(s, ops::select(s, c.inputs[0], c.grads[0], zeros), c.inputs[1]),
              ops::reduce_to_like(s, ops::select(s, c.inputs[0], zeros, c.grads[0]), c.inputs[2])};
    })
    .doc("z = cond ? x : y element-wise, broadcasting (NumPy rules).");

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
    .inputs(1, -1)
    .attr("shape", AttrType::kInts)
    .attr("from", AttrType::kInts, std::vector<int64_t>{})
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      std::vector<int64_t> shape = c.attrs().get_ints("shape");
      for (int64_t d : shape)
        if (d < 0) c.fail("shape " + attr_to_string(shape) + " has a negative dim");
      // Entries read at run time from the reference inputs' dims.
      std::vector<char> named;
      const std::vector<std::optional<int64_t>> refs = ops::reference_dims(c, shape.size(), &named);
      for (size_t i = 0; i < shape.size(); ++i)
        if (named[i]) shape[i] = refs[i].value_or(kUnknownDim);
      try {
        return {{c.dtype(0), broadcast_shapes(c.shape(0), Shape(shape))}};
      } catch (const Error& e) {
        c.fail(e.message());
      }
    })
    .grad([](const GradContext& c) {
      std::vector<Output> grads(c.inputs.size());  // (the references are read for their shapes only)
      grads[0] = ops::reduce_to_like(c.scope, c.grads[0], c.inputs[0]);
      return grads;
    })
    .doc(
        "x broadcast to broadcast(x.shape, shape) (NumPy rules; ONNX Expand, TF BroadcastTo); shape entries at "
        "the `from` positions (position, input, dim) are dims of reference inputs, read at each run.");

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
Output erf(const Scope& s, Output x, const std::string& name) { return s.op("Erf", {x}, {}, name); }
Output floor(const Scope& s, Output x, const std::string& name) { return s.op("Floor", {x}, {}, name); }
Output ceil(const Scope& s, Output x, const std::string& name) { return s.op("Ceil", {x}, {}, name); }
Output round(const Scope& s, Output x, const std::string& name) { return s.op("Round", {x}, {}, name); }
Output sin(const Scope& s, Output x, const std::string& name) { return s.op("Sin", {x}, {}, name); }
Output cos(const Scope& s, Output x, const std::string& name) { return s.op("Cos", {x}, {}, name); }
Output tan(const Scope& s, Output x, const std::string& name) { return s.op("Tan", {x}, {}, name); }
Output asin(const Scope& s, Output x, const std::string& name) { return s.op("Asin", {x}, {}, name); }
Output acos(const Scope& s, Output x, const std::string& name) { return s.op("Acos", {x}, {}, name); }
Output atan(const Scope& s, Output x, const std::string& name) { return s.op("Atan", {x}, {}, name); }
Output sinh(const Scope& s, Output x, const std::string& name) { return s.op("Sinh", {x}, {}, name); }
Output cosh(const Scope& s, Output x, const std::string& name) { return s.op("Cosh", {x}, {}, name); }
Output asinh(const Scope& s, Output x, const std::string& name) { return s.op("Asinh", {x}, {}, name); }
Output acosh(const Scope& s, Output x, const std::string& name) { return s.op("Acosh", {x}, {}, name); }
Output atanh(const Scope& s, Output x, const std::string& name) { return s.op("Atanh", {x}, {}, name); }
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
Output logical_not(const Scope& s, Output x, const std::string& name) { return s.op("LogicalNot", {x}, {}, name); }
Output logical_and(const Scope& s, Output a, Output b, const std::string& name) {
  return s.op("LogicalAnd", {a, b}, {}, name);
}
Output logical_or(const Scope& s, Output a, Output b, const std::string& name) {
  return s.op("LogicalOr", {a, b}, {}, name);
}
Output select(const Scope& s, Output cond, Output x, Output y, const std::string& name) {
  return s.op("Select", {cond, x, y}, {}, name);
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
