#include "hub/ops/control_flow.h"

#include <optional>

#include "hub/ops/registry.h"

namespace hub {

namespace {

// The spec both a and b satisfy: their dtype and rank (which must agree),
// each dim where they agree and unknown where they do not.
std::optional<TensorSpec> merge(const TensorSpec& a, const TensorSpec& b) {
  if (a.dtype != b.dtype || a.shape.rank() != b.shape.rank()) return std::nullopt;
  TensorSpec m = a;
  for (int d = 0; d < a.shape.rank(); ++d)
    if (a.shape[d] != b.shape[d]) m.shape.set_dim(d, kUnknownDim);
  return m;
}

bool fits(const TensorSpec& value, const TensorSpec& argument) {
  return value.dtype == argument.dtype && value.shape.rank() == argument.shape.rank() &&
         value.shape.compatible_with(argument.shape);
}

void expect_one_element(const InferContext& c, int i, DType dtype, const char* what) {
  c.expect_dtype(i, dtype);
  const Shape& s = c.shape(i);
  if (s.is_fully_defined() && s.num_elements() != 1)
    c.fail(std::string(what) + " must hold one element, got " + c.input(i).to_string());
}

// Input `input` of the node feeds argument `argument` of `graph`.
void expect_fits(const InferContext& c, int input, const Subgraph& graph, int argument, const char* graph_name) {
  const TensorSpec& a = graph.spec(graph.arguments[argument]);
  if (!fits(c.input(input), a))
    c.fail("input " + std::to_string(input) + " " + c.input(input).to_string() + " does not fit argument " +
           std::to_string(argument) + " " + a.to_string() + " of " + graph_name);
}

std::vector<TensorSpec> if_shape(const InferContext& c) {
  expect_one_element(c, 0, DType::kBool, "cond");
  const Subgraph& then_branch = c.attrs().get_graph("then_branch");
  const Subgraph& else_branch = c.attrs().get_graph("else_branch");
  const int args = c.num_inputs() - 1;
  for (const auto& [branch, name] : {std::pair{&then_branch, "then_branch"}, std::pair{&else_branch, "else_branch"}}) {
    if (static_cast<int>(branch->arguments.size()) != args)
      c.fail(std::string(name) + " takes " + std::to_string(branch->arguments.size()) + " arguments, given " +
             std::to_string(args));
    for (int a = 0; a < args; ++a) expect_fits(c, a + 1, *branch, a, name);
  }
  if (then_branch.results.size() != else_branch.results.size())
    c.fail("then_branch returns " + std::to_string(then_branch.results.size()) + " results, else_branch " +
           std::to_string(else_branch.results.size()));
  if (then_branch.results.empty()) c.fail("the branches return nothing");
  std::vector<TensorSpec> out;
  for (size_t r = 0; r < then_branch.results.size(); ++r) {
    const TensorSpec &t = then_branch.spec(then_branch.results[r]), &e = else_branch.spec(else_branch.results[r]);
    std::optional<TensorSpec> m = merge(t, e);
    if (!m)
      c.fail("result " + std::to_string(r) + " is " + t.to_string() + " in then_branch but " + e.to_string() +
             " in else_branch");
    out.push_back(*m);
  }
  return out;
}

std::vector<TensorSpec> loop_shape(const InferContext& c) {
  expect_one_element(c, 0, DType::kInt64, "max_trips");
  expect_one_element(c, 1, DType::kBool, "cond");
  const Subgraph& body = c.attrs().get_graph("body");
  const int64_t carried = c.attrs().get_int("num_carried");
  if (carried < 0 || carried > c.num_inputs() - 2)
    c.fail("num_carried " + std::to_string(carried) + " is outside [0, " + std::to_string(c.num_inputs() - 2) + "]");
  if (static_cast<int>(body.arguments.size()) != c.num_inputs())
    c.fail("body takes " + std::to_string(body.arguments.size()) + " arguments (iteration, cond, carried..., " +
           "invariant...), given " + std::to_string(c.num_inputs()));
  if (!fits({DType::kInt64, Shape{}}, body.spec(body.arguments[0])))
    c.fail("body's argument 0 (the iteration) must be an int64 scalar, is " + body.spec(body.arguments[0]).to_string());
  if (!fits({DType::kBool, Shape{}}, body.spec(body.arguments[1])))
    c.fail("body's argument 1 (cond) must be a bool scalar, is " + body.spec(body.arguments[1]).to_string());
  for (int a = 2; a < c.num_inputs(); ++a) expect_fits(c, a, body, a, "body");
  if (static_cast<int64_t>(body.results.size()) < 1 + carried)
    c.fail("body returns " + std::to_string(body.results.size()) + " results, fewer than cond and " +
           std::to_string(carried) + " carried values");
  const TensorSpec& cond = body.spec(body.results[0]);
  if (!fits(cond, {DType::kBool, Shape{}}) && !fits(cond, {DType::kBool, Shape{1}}))
    c.fail("body's result 0 (cond) must be a bool of one element, is " + cond.to_string());
  std::vector<TensorSpec> out;
  for (int64_t k = 0; k < carried; ++k) {
    const TensorSpec& argument = body.spec(body.arguments[2 + k]);
    const TensorSpec& result = body.spec(body.results[1 + k]);
    if (!fits(result, argument))
      c.fail("body's result " + std::to_string(1 + k) + " " + result.to_string() + " does not fit its argument " +
             std::to_string(2 + k) + " " + argument.to_string() + " (a carried value)");
    out.push_back(*merge(*merge(c.input(2 + static_cast<int>(k)), result), argument));
  }
  for (size_t r = 1 + carried; r < body.results.size(); ++r) {
    TensorSpec scan = body.spec(body.results[r]);
    std::vector<int64_t> dims{kUnknownDim};
    dims.insert(dims.end(), scan.shape.dims().begin(), scan.shape.dims().end());
    out.push_back({scan.dtype, Shape(std::move(dims))});
  }
  return out;
}

// If's gradient: an If on the same condition whose branches are the
// branches' gradients (each recomputes its branch and differentiates it),
// fed the arguments and the outputs' gradients; each float32 argument gets
// its gradient from it.
std::vector<Output> if_grad(const GradContext& c) {
  HUB_CHECK(c.subgraphs != nullptr, "If's gradient needs a subgraph differentiator");
  std::vector<Output> inputs = c.inputs;
  std::vector<bool> has_grad;
  for (const Output& g : c.grads) {
    has_grad.push_back(g.valid());
    if (g.valid()) inputs.push_back(g);
  }
  std::vector<int> wrt;
  for (size_t a = 1; a < c.inputs.size(); ++a)
    if (c.scope.graph().spec(c.inputs[a]).dtype == DType::kFloat32) wrt.push_back(static_cast<int>(a) - 1);
  std::vector<Output> grads(c.inputs.size());
  if (wrt.empty()) return grads;
  const Attrs attrs =
      Attrs()
          .set("then_branch", c.subgraphs->gradient(c.node.attrs.get_graph("then_branch"), has_grad, wrt))
          .set("else_branch", c.subgraphs->gradient(c.node.attrs.get_graph("else_branch"), has_grad, wrt));
  const std::vector<Output> out = c.scope.op_n("If", inputs, attrs, "IfGrad");
  for (size_t j = 0; j < wrt.size(); ++j) grads[static_cast<size_t>(wrt[j]) + 1] = out[j];
  return grads;
}

}  // namespace

HUB_REGISTER_OP(If)
    .inputs(1, -1)
    .variadic_outputs()
    .attr("then_branch", AttrType::kGraph)
    .attr("else_branch", AttrType::kGraph)
    .value_dependent_shape()
    .shape_fn(if_shape)
    .grad(if_grad)
    .doc("Runs then_branch or else_branch (subgraphs) on the arguments as a bool decides (ONNX If).");

HUB_REGISTER_OP(Loop)
    .inputs(2, -1)
    .variadic_outputs()
    .attr("body", AttrType::kGraph)
    .attr("num_carried", AttrType::kInt)
    .value_dependent_shape()
    .shape_fn(loop_shape)
    .no_gradient("a loop's gradient would need every iteration's values kept (inference only)")
    .doc(
        "Runs a body subgraph while a trip count and a condition allow, carrying values and stacking scans "
        "(ONNX Loop).");

namespace ops {

std::vector<Output> if_(const Scope& s, Output cond, const std::vector<Output>& args, SubgraphPtr then_branch,
                        SubgraphPtr else_branch, const std::string& name) {
  std::vector<Output> inputs{cond};
  inputs.insert(inputs.end(), args.begin(), args.end());
  return s.op_n("If", std::move(inputs),
                Attrs().set("then_branch", std::move(then_branch)).set("else_branch", std::move(else_branch)), name);
}

std::vector<Output> loop(const Scope& s, Output max_trips, Output cond, const std::vector<Output>& carried,
                         const std::vector<Output>& invariant, SubgraphPtr body, const std::string& name) {
  std::vector<Output> inputs{max_trips, cond};
  inputs.insert(inputs.end(), carried.begin(), carried.end());
  inputs.insert(inputs.end(), invariant.begin(), invariant.end());
  return s.op_n("Loop", std::move(inputs),
                Attrs().set("body", std::move(body)).set("num_carried", static_cast<int64_t>(carried.size())), name);
}

}  // namespace ops
}  // namespace hub
