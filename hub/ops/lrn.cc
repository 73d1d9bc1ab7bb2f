// LRN and LRNGrad (formulas in hub/ops/lrn.h).
#include "hub/ops/lrn.h"

#include "hub/ops/registry.h"

namespace hub {
namespace {

void check_attrs(const InferContext& c) {
  if (c.attrs().get_int("depth_radius") < 0)
    c.fail("depth_radius must be >= 0, got " + std::to_string(c.attrs().get_int("depth_radius")));
}

std::vector<TensorSpec> lrn_shape_fn(const InferContext& c) {
  c.expect_rank(0, 4);
  c.expect_dtype(0, DType::kFloat32);
  check_attrs(c);
  return {c.input(0)};
}

std::vector<TensorSpec> lrn_grad_shape_fn(const InferContext& c) {
  for (int i = 0; i < 3; ++i) {
    c.expect_rank(i, 4);
    c.expect_dtype(i, DType::kFloat32);
    if (!c.shape(i).compatible_with(c.shape(0)))
      c.fail("input " + std::to_string(i) + " " + c.input(i).to_string() + " does not match grads " +
             c.input(0).to_string());
  }
  check_attrs(c);
  return {c.input(0)};
}

Attrs lrn_attrs(const Attrs& from) {
  Attrs a;
  for (const char* k : {"depth_radius", "bias", "alpha", "beta"}) a.set(k, from.get(k));
  return a;
}

// LRN or LRNGrad: the input count, the shared attributes (TF's defaults) and the shape function.
OpDefBuilder lrn_op(const char* name, int inputs, ShapeFn shape_fn) {
  OpDefBuilder b(name);
  b.inputs(inputs)
      .attr("depth_radius", AttrType::kInt, int64_t{5})
      .attr("bias", AttrType::kFloat, 1.0)
      .attr("alpha", AttrType::kFloat, 1.0)
      .attr("beta", AttrType::kFloat, 0.5)
      .shape_fn(std::move(shape_fn));
  return b;
}

const OpRegistrar lrn_registration =
    lrn_op("LRN", 1, lrn_shape_fn)
        .grad([](const GradContext& c) {
          return std::vector<Output>{
              c.scope.op("LRNGrad", {c.grads[0], c.inputs[0], c.outputs[0]}, lrn_attrs(c.node.attrs))};
        })
        .doc("x / (bias + alpha * sum of x^2 over channels d-r..d+r)^beta (TF's LRN).");

const OpRegistrar lrn_grad_registration = lrn_op("LRNGrad", 3, lrn_grad_shape_fn)
                                              .doc("Gradient of LRN: (grads, input, output) -> d input.")
                                              .no_gradient("a gradient op; second-order gradients are not supported");

}  // namespace

namespace ops {
Output lrn(const Scope& s, Output x, const LrnOptions& o, const std::string& name) {
  return s.op("LRN", {x},
              Attrs().set("depth_radius", o.depth_radius).set("bias", o.bias).set("alpha", o.alpha).set("beta", o.beta),
              name);
}
}  // namespace ops
}  // namespace hub
