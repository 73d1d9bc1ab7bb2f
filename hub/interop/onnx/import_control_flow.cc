// ONNX -> hub: control flow (If, Loop) as hub's If and Loop, their graphs
// imported as subgraphs (NodeContext::subgraphs). An If whose condition is
// known at import is not mapped here: the importer imports the branch it
// takes in its place.
#include <limits>

#include "hub/interop/onnx/convert.h"
#include "hub/ops/control_flow.h"
#include "hub/ops/state.h"

namespace hub::onnx_interop {

namespace {

void map_if(NodeContext& c) {
  const Output cond = c.native(0);
  const NodeContext::Subgraphs sub = c.subgraphs({"then_branch", "else_branch"}, {{}, {}});
  const std::vector<Output> out = ops::if_(c.scope(), cond, sub.captured, sub.graphs[0], sub.graphs[1], "If");
  if (static_cast<int>(out.size()) != c.node().output_size())
    c.fail("the branches have " + std::to_string(out.size()) + " outputs, the node " +
           std::to_string(c.node().output_size()));
  for (size_t i = 0; i < out.size(); ++i) c.set_output(static_cast<int>(i), out[i]);
}

// Loop(M, cond, v_initial...): a missing M is no limit, a missing cond true.
// A carried value whose shape the body changes (a sequence growing by one
// each iteration) is fed to the body with those dims unknown: the body is
// imported again until its results fit its arguments.
void map_loop(NodeContext& c) {
  const Scope s = c.scope();
  const Output trips =
      c.has_input(0) ? c.native(0)
                     : ops::constant(s, Tensor::scalar<int64_t>(std::numeric_limits<int64_t>::max()), "no_trip_limit");
  const Output cond = c.has_input(1) ? c.native(1) : ops::constant(s, Tensor::scalar<bool>(true), "no_condition");
  std::vector<Output> carried;
  std::vector<TensorSpec> formal{{DType::kInt64, Shape{}}, {DType::kBool, Shape{}}};
  for (int i = 2; i < c.num_inputs(); ++i) {
    if (!c.has_input(i)) c.fail("loop-carried input " + std::to_string(i) + " is missing");
    carried.push_back(c.native(i));
    formal.push_back(s.graph().spec(carried.back()));
  }
  NodeContext::Subgraphs sub;
  for (int round = 0;; ++round) {
    sub = c.subgraphs({"body"}, {formal});
    const Subgraph& body = *sub.graphs[0];
    if (body.results.size() < 1 + carried.size())
      c.fail("the body has " + std::to_string(body.results.size()) + " outputs, fewer than the condition and " +
             std::to_string(carried.size()) + " loop-carried values");
    bool relaxed = false;
    for (size_t k = 0; k < carried.size(); ++k) {
      const TensorSpec& result = body.spec(body.results[1 + k]);
      TensorSpec& argument = formal[2 + k];
      if (result.dtype != argument.dtype || result.shape.rank() != argument.shape.rank())
        c.fail("loop-carried value " + std::to_string(k) + " enters the body as " + argument.to_string() +
               " and leaves it as " + result.to_string());
      for (int d = 0; d < argument.shape.rank(); ++d)
        if (argument.shape[d] != kUnknownDim && argument.shape[d] != result.shape[d]) {
          argument.shape.set_dim(d, kUnknownDim);
          relaxed = true;
        }
    }
    if (!relaxed) break;
    HUB_CHECK(round < 64, "Loop: carried shapes keep changing");  // each round makes a dim unknown
  }
  const std::vector<Output> out = ops::loop(s, trips, cond, carried, sub.captured, sub.graphs[0], "Loop");
  if (static_cast<int>(out.size()) != c.node().output_size())
    c.fail("the body gives " + std::to_string(out.size()) + " loop-carried and scan outputs, the node has " +
           std::to_string(c.node().output_size()));
  for (size_t i = 0; i < out.size(); ++i) c.set_output(static_cast<int>(i), out[i]);
}

}  // namespace

void add_control_flow_mappers(std::map<std::string, OpMapper>& m) {
  m["If"] = {map_if, {"then_branch", "else_branch"}, /*foldable=*/false};
  m["Loop"] = {map_loop, {"body"}, /*foldable=*/false};
}

}  // namespace hub::onnx_interop
