#include "hub/ops/elementwise.h"

#include "hub/ops/math.h"
#include "hub/ops/registry.h"

namespace hub {
namespace {

std::vector<TensorSpec> broadcast_shape_fn(const InferContext& c) {
  c.expect_same_dtypes();
  DType d = c.dtype(0);
  if (d != DType::kFloat32 && d != DType::kInt32 && d != DType::kInt64)
    c.fail("element-wise arithmetic needs float32, int32 or int64, got " + c.input(0).to_string());
  try {
    return {{d, broadcast_shapes(c.shape(0), c.shape(1))}};
  } catch (const Error& e) {
    c.fail(e.message());
  }
}

Output reduce(const GradContext& c, Output g, int input) {
  return ops::reduce_to_like(c.scope, g, c.inputs[input], "ReduceToLike" + std::to_string(input));
}

std::vector<Output> add_grad(const GradContext& c) { return {reduce(c, c.grads[0], 0), reduce(c, c.grads[0], 1)}; }
std::vector<Output> sub_grad(const GradContext& c) {
  return {reduce(c, c.grads[0], 0), reduce(c, ops::neg(c.scope, c.grads[0]), 1)};
}
std::vector<Output> mul_grad(const GradContext& c) {
  return {reduce(c, ops::mul(c.scope, c.grads[0], c.inputs[1]), 0),
          reduce(c, ops::mul(c.scope, c.grads[0], c.inputs[0]), 1)};
}
std::vector<Output> div_grad(const GradContext& c) {
  const Scope& s = c.scope;
  Output ga = ops::div(s, c.grads[0], c.inputs[1]);
  // -g * a / b^2 = -(g/b) * (a/b)
  Output gb = ops::neg(s, ops::mul(s, ga, ops::div(s, c.inputs[0], c.inputs[1])));
  return {reduce(c, ga, 0), reduce(c, gb, 1)};
}
GradFn select_grad(const char* grad_op) {
  return [grad_op](const GradContext& c) -> std::vector<Output> {
    auto gs = c.scope.op_n(grad_op, {c.grads[0], c.inputs[0], c.inputs[1]});
    return {reduce(c, gs[0], 0), reduce(c, gs[1], 1)};
  };
}

// y = a - q * b with the quotient q constant between its jumps: dy/da = 1,
// dy/db = -q = (y - a) / b.
std::vector<Output> mod_grad(const GradContext& c) {
  const Scope& s = c.scope;
  Output minus_q = ops::div(s, ops::sub(s, c.outputs[0], c.inputs[0]), c.inputs[1]);
  return {reduce(c, c.grads[0], 0), reduce(c, ops::mul(s, c.grads[0], minus_q), 1)};
}

std::vector<TensorSpec> pow_shape_fn(const InferContext& c) {
  c.expect_dtype(0, DType::kFloat32);
  c.expect_dtype(1, DType::kFloat32);
  return broadcast_shape_fn(c);
}

std::vector<Output> pow_grad(const GradContext& c) {
  auto gs = c.scope.op_n("PowGrad", {c.grads[0], c.inputs[0], c.inputs[1]});
  return {reduce(c, gs[0], 0), reduce(c, gs[1], 1)};
}

std::vector<TensorSpec> select_grad_shape_fn(const InferContext& c) {
  c.expect_same_dtypes();
  return {{c.dtype(0), c.shape(0)}, {c.dtype(0), c.shape(0)}};
}

}  // namespace

HUB_REGISTER_OP(Add).inputs(2).shape_fn(broadcast_shape_fn).grad(add_grad).doc("a + b, broadcasting.");
HUB_REGISTER_OP(Sub).inputs(2).shape_fn(broadcast_shape_fn).grad(sub_grad).doc("a - b, broadcasting.");
HUB_REGISTER_OP(Mul).inputs(2).shape_fn(broadcast_shape_fn).grad(mul_grad).doc("a * b, broadcasting.");
HUB_REGISTER_OP(Div)
    .inputs(2)
    .shape_fn(broadcast_shape_fn)
    .grad(div_grad)
    .doc("a / b, broadcasting; integers truncate, and an integer division by zero is an error.");
HUB_REGISTER_OP(Mod)
    .inputs(2)
    .attr("truncate", AttrType::kBool, false)
    .shape_fn(broadcast_shape_fn)
    .grad(mod_grad)
    .doc(
        "a mod b, broadcasting: the remainder with b's sign (Python's %, TF FloorMod), or with truncate the "
        "dividend's (C's fmod, TF TruncateMod); an integer b of 0 is an error.");
HUB_REGISTER_OP(Maximum)
    .inputs(2)
    .shape_fn(broadcast_shape_fn)
    .grad(select_grad("MaximumGrad"))
    .doc("max(a, b), broadcasting; ties send the gradient to a.");
HUB_REGISTER_OP(Minimum)
    .inputs(2)
    .shape_fn(broadcast_shape_fn)
    .grad(select_grad("MinimumGrad"))
    .doc("min(a, b), broadcasting; ties send the gradient to a.");
HUB_REGISTER_OP(Pow)
    .inputs(2)
    .shape_fn(pow_shape_fn)
    .grad(pow_grad)
    .doc("a^b (float32), broadcasting; std::pow semantics.");
HUB_REGISTER_OP(PowGrad)
    .inputs(3)
    .outputs(2)
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      for (int i = 0; i < 3; ++i) c.expect_dtype(i, DType::kFloat32);
      Shape ab;
      try {
        ab = broadcast_shapes(c.shape(1), c.shape(2));
      } catch (const Error& e) {
        c.fail(e.message());
      }
      if (!ab.compatible_with(c.shape(0)))
        c.fail("gradient " + c.input(0).to_string() + " does not have the broadcast shape " + ab.to_string() +
               " of a and b");
      return {c.input(0), c.input(0)};
    })
    .doc("(g, a, b) -> (g * b * a^(b-1), g * a^b * ln a where a > 0 else 0) at g's shape.")
    .no_gradient("a gradient op; second-order gradients are not supported");
HUB_REGISTER_OP(MaximumGrad)
    .inputs(3)
    .outputs(2)
    .shape_fn(select_grad_shape_fn)
    .doc("(g*[a>=b], g*[a<b]) at g's shape.")
    .no_gradient("a gradient op; second-order gradients are not supported");
HUB_REGISTER_OP(MinimumGrad)
    .inputs(3)
    .outputs(2)
    .shape_fn(select_grad_shape_fn)
    .doc("(g*[a<=b], g*[a>b]) at g's shape.")
    .no_gradient("a gradient op; second-order gradients are not supported");

HUB_REGISTER_OP(AddN)
    .inputs(1, -1)
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      c.expect_same_dtypes();
      Shape s = c.shape(0);
      for (int i = 1; i < c.num_inputs(); ++i) {
        if (!c.shape(i).compatible_with(s))
          c.fail("input " + std::to_string(i) + " " + c.input(i).to_string() + " differs from input 0 " +
                 c.input(0).to_string());
        for (int d = 0; d < s.rank(); ++d)
          if (s[d] < 0) s.set_dim(d, c.shape(i)[d]);
      }
      return {{c.dtype(0), s}};
    })
    .grad([](const GradContext& c) { return std::vector<Output>(c.inputs.size(), c.grads[0]); })
    .doc("Sum of same-shaped tensors.");

HUB_REGISTER_OP(ReduceToLike)
    .inputs(2)
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      return {{c.dtype(0), c.shape(1)}};
    })
    .doc("Sums input 0 over the dimensions along which input 1 was broadcast.")
    .no_gradient("a gradient op; second-order gradients are not supported");

HUB_REGISTER_OP(Identity)
    .inputs(1)
    .shape_fn(same_as_input0)
    .grad([](const GradContext& c) { return std::vector<Output>{c.grads[0]}; })
    .doc("y = x.");
HUB_REGISTER_OP(StopGradient)
    .inputs(1)
    .shape_fn(same_as_input0)
    .doc("y = x; no gradient flows back.")
    .no_gradient("stops gradients by definition");
HUB_REGISTER_OP(ZerosLike)
    .inputs(1)
    .shape_fn(same_as_input0)
    .doc("Zeros of x's dtype and shape.")
    .no_gradient("does not depend on the values of x");
HUB_REGISTER_OP(OnesLike)
    .inputs(1)
    .shape_fn(same_as_input0)
    .doc("Ones of x's dtype and shape.")
    .no_gradient("does not depend on the values of x");

namespace ops {

Output add(const Scope& s, Output a, Output b, const std::string& name) { return s.op("Add", {a, b}, {}, name); }
Output sub(const Scope& s, Output a, Output b, const std::string& name) { return s.op("Sub", {a, b}, {}, name); }
Output mul(const Scope& s, Output a, Output b, const std::string& name) { return s.op("Mul", {a, b}, {}, name); }
Output div(const Scope& s, Output a, Output b, const std::string& name) { return s.op("Div", {a, b}, {}, name); }
Output mod(const Scope& s, Output a, Output b, bool truncate, const std::string& name) {
  return s.op("Mod", {a, b}, Attrs().set("truncate", truncate), name);
}
Output maximum(const Scope& s, Output a, Output b, const std::string& name) {
  return s.op("Maximum", {a, b}, {}, name);
}
Output minimum(const Scope& s, Output a, Output b, const std::string& name) {
  return s.op("Minimum", {a, b}, {}, name);
}
Output pow(const Scope& s, Output a, Output b, const std::string& name) { return s.op("Pow", {a, b}, {}, name); }
Output add_n(const Scope& s, const std::vector<Output>& xs, const std::string& name) {
  return xs.size() == 1 ? xs[0] : s.op("AddN", xs, {}, name);
}
Output reduce_to_like(const Scope& s, Output x, Output like, const std::string& name) {
  const GraphBuilder& g = s.graph();
  if (g.spec(x).shape == g.spec(like).shape && g.spec(x).shape.is_fully_defined()) return x;
  return s.op("ReduceToLike", {x, like}, {}, name);
}
Output identity(const Scope& s, Output x, const std::string& name) { return s.op("Identity", {x}, {}, name); }
Output stop_gradient(const Scope& s, Output x, const std::string& name) { return s.op("StopGradient", {x}, {}, name); }
Output zeros_like(const Scope& s, Output x, const std::string& name) { return s.op("ZerosLike", {x}, {}, name); }
Output ones_like(const Scope& s, Output x, const std::string& name) { return s.op("OnesLike", {x}, {}, name); }

}  // namespace ops
}  // namespace hub
