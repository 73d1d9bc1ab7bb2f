#include "hub/ops/matmul.h"

#include "hub/ops/elementwise.h"
#include "hub/ops/registry.h"

namespace hub {
namespace {

std::vector<TensorSpec> matmul_shape_fn(const InferContext& c) {
  c.expect_dtype(0, DType::kFloat32);
  c.expect_dtype(1, DType::kFloat32);
  c.expect_rank(0, 2);
  c.expect_rank(1, 2);
  bool ta = c.attrs().get_bool("transpose_a"), tb = c.attrs().get_bool("transpose_b");
  const Shape& a = c.shape(0);
  const Shape& b = c.shape(1);
  int64_t m = ta ? a[1] : a[0], ka = ta ? a[0] : a[1];
  int64_t kb = tb ? b[1] : b[0], n = tb ? b[0] : b[1];
  if (ka >= 0 && kb >= 0 && ka != kb)
    c.fail("inner dimensions differ: a " + c.input(0).to_string() + (ta ? " (transposed)" : "") + ", b " +
           c.input(1).to_string() + (tb ? " (transposed)" : ""));
  return {{DType::kFloat32, Shape{m, n}}};
}

std::vector<Output> matmul_grad(const GradContext& c) {
  bool ta = c.node.attrs.get_bool("transpose_a"), tb = c.node.attrs.get_bool("transpose_b");
  const Scope& s = c.scope;
  Output a = c.inputs[0], b = c.inputs[1], g = c.grads[0];
  if (!ta && !tb) return {ops::matmul(s, g, b, false, true), ops::matmul(s, a, g, true, false)};
  if (!ta && tb) return {ops::matmul(s, g, b, false, false), ops::matmul(s, g, a, true, false)};
  if (ta && !tb) return {ops::matmul(s, b, g, false, true), ops::matmul(s, a, g, false, false)};
  return {ops::matmul(s, b, g, true, true), ops::matmul(s, g, a, true, true)};
}

std::vector<TensorSpec> batch_matmul_shape_fn(const InferContext& c) {
  c.expect_dtype(0, DType::kFloat32);
  c.expect_dtype(1, DType::kFloat32);
  const Shape& x = c.shape(0);
  const Shape& y = c.shape(1);
  if (x.rank() < 2 || y.rank() < 2)
    c.fail("x " + c.input(0).to_string() + " and y " + c.input(1).to_string() + " need rank >= 2");
  bool ax = c.attrs().get_bool("adj_x"), ay = c.attrs().get_bool("adj_y");
  int64_t m = x.dim(ax ? -1 : -2), kx = x.dim(ax ? -2 : -1);
  int64_t ky = y.dim(ay ? -1 : -2), n = y.dim(ay ? -2 : -1);
  if (kx >= 0 && ky >= 0 && kx != ky)
    c.fail("inner dimensions differ: x " + c.input(0).to_string() + (ax ? " (adjoint)" : "") + ", y " +
           c.input(1).to_string() + (ay ? " (adjoint)" : ""));
  Shape out;
  try {
    out = broadcast_shapes(Shape(std::vector<int64_t>(x.dims().begin(), x.dims().end() - 2)),
                           Shape(std::vector<int64_t>(y.dims().begin(), y.dims().end() - 2)));
  } catch (const Error& e) {
    c.fail("batch dims of x " + c.input(0).to_string() + " and y " + c.input(1).to_string() +
           " do not broadcast: " + e.message());
  }
  out.push_back(m);
  out.push_back(n);
  return {{DType::kFloat32, out}};
}

std::vector<Output> batch_matmul_grad(const GradContext& c) {
  bool ax = c.node.attrs.get_bool("adj_x"), ay = c.node.attrs.get_bool("adj_y");
  const Scope& s = c.scope;
  Output x = c.inputs[0], y = c.inputs[1], g = c.grads[0];
  // The MatMul table, per batch.
  Output dx = !ax ? ops::batch_matmul(s, g, y, false, !ay) : ops::batch_matmul(s, y, g, ay, true);
  Output dy = !ay ? ops::batch_matmul(s, x, g, !ax, false) : ops::batch_matmul(s, g, x, true, ax);
  return {ops::reduce_to_like(s, dx, x, "ReduceToLike0"), ops::reduce_to_like(s, dy, y, "ReduceToLike1")};
}

}  // namespace

HUB_REGISTER_OP(BatchMatMul)
    .inputs(2)
    .attr("adj_x", AttrType::kBool, false)
    .attr("adj_y", AttrType::kBool, false)
    .shape_fn(batch_matmul_shape_fn)
    .grad(batch_matmul_grad)
    .doc("op(x) op(y) per batch (float32, rank >= 2); leading batch dims broadcast; op transposes when adj_*.");

HUB_REGISTER_OP(MatMul)
    .inputs(2)
    .attr("transpose_a", AttrType::kBool, false)
    .attr("transpose_b", AttrType::kBool, false)
    .shape_fn(matmul_shape_fn)
    .grad(matmul_grad)
    .doc("op(a) op(b) of 2-D float32 matrices; op transposes when asked.");

HUB_REGISTER_OP(BiasAdd)
    .inputs(2)
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      c.expect_dtype(0, DType::kFloat32);
      c.expect_dtype(1, DType::kFloat32);
      c.expect_rank(1, 1);
      if (c.shape(0).rank() < 1) c.fail("value must have rank >= 1, got " + c.input(0).to_string());
      int64_t cv = c.shape(0).dim(-1), cb = c.shape(1)[0];
      if (cv >= 0 && cb >= 0 && cv != cb)
        c.fail("bias " + c.input(1).to_string() + " does not match the last dim of value " + c.input(0).to_string());
      Shape out = c.shape(0);
      if (cv < 0) out.set_dim(out.rank() - 1, cb);
      return {{DType::kFloat32, out}};
    })
    .grad([](const GradContext& c) {
      return std::vector<Output>{c.grads[0], ops::bias_add_grad(c.scope, c.grads[0])};
    })
    .doc("value + bias along the last dim (channels-last).");

HUB_REGISTER_OP(BiasAddGrad)
    .inputs(1)
    .shape_fn([](const InferContext& c) -> std::vector<TensorSpec> {
      c.expect_dtype(0, DType::kFloat32);
      if (c.shape(0).rank() < 1) c.fail("needs rank >= 1, got " + c.input(0).to_string());
      return {{DType::kFloat32, Shape{c.shape(0).dim(-1)}}};
    })
    .grad([](const GradContext& c) {
      return std::vector<Output>{ops::bias_add(c.scope, ops::zeros_like(c.scope, c.inputs[0]), c.grads[0])};
    })
    .doc("Sum over all but the last dim (the bias gradient).");

namespace ops {

Output matmul(const Scope& s, Output a, Output b, bool transpose_a, bool transpose_b, const std::string& name) {
  return s.op("MatMul", {a, b}, Attrs().set("transpose_a", transpose_a).set("transpose_b", transpose_b), name);
}
Output batch_matmul(const Scope& s, Output x, Output y, bool adj_x, bool adj_y, const std::string& name) {
  return s.op("BatchMatMul", {x, y}, Attrs().set("adj_x", adj_x).set("adj_y", adj_y), name);
}
Output bias_add(const Scope& s, Output value, Output bias, const std::string& name) {
  return s.op("BiasAdd", {value, bias}, {}, name);
}
Output bias_add_grad(const Scope& s, Output grad, const std::string& name) {
  return s.op("BiasAddGrad", {grad}, {}, name);
}

}  // namespace ops
}  // namespace hub
