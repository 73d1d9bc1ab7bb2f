// ONNX -> hub: control flow (If, Loop, Scan) as hub's If and Loop, their graphs
// imported as subgraphs (NodeContext::subgraphs). An If whose condition is
// known at import is not mapped here: the importer imports the branch it
// takes in its place.
#include <limits>

#include "hub/interop/linear.h"
#include "hub/interop/onnx/convert.h"
#include "hub/ops/array.h"
#include "hub/ops/control_flow.h"
#include "hub/ops/elementwise.h"
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

// The body (attribute "body") as a Loop's subgraph, whose results 1 .. count
// are the carried values fed back as arguments 2 .. count + 1: a carried
// value whose shape the body changes (a sequence growing by one each
// iteration) is fed to the body with those dims unknown, and the body is
// imported again until its results fit its arguments.
NodeContext::Subgraphs carried_body(NodeContext& c, NodeContext::SubgraphFrame frame, size_t count) {
  for (int round = 0;; ++round) {
    NodeContext::Subgraphs sub = c.subgraphs({"body"}, {frame});
    const Subgraph& body = *sub.graphs[0];
    if (body.results.size() < 1 + count)
      c.fail("the body has " + std::to_string(body.results.size() - 1) + " outputs, fewer than its " +
             std::to_string(count) + " loop-carried values");
    bool relaxed = false;
    for (size_t k = 0; k < count; ++k) {
      const TensorSpec& result = body.spec(body.results[1 + k]);
      TensorSpec& argument = frame.arguments[2 + k];
      if (result.dtype != argument.dtype || result.shape.rank() != argument.shape.rank())
        c.fail("loop-carried value " + std::to_string(k) + " enters the body as " + argument.to_string() +
               " and leaves it as " + result.to_string());
      for (int d = 0; d < argument.shape.rank(); ++d)
        if (argument.shape[d] != kUnknownDim && argument.shape[d] != result.shape[d]) {
          argument.shape.set_dim(d, kUnknownDim);
          relaxed = true;
        }
    }
    if (!relaxed) return sub;
    HUB_CHECK(round < 64, "carried shapes keep changing");  // each round makes a dim unknown
  }
}

void set_outputs(NodeContext& c, const std::vector<Output>& out) {
  if (static_cast<int>(out.size()) != c.node().output_size())
    c.fail("the body gives " + std::to_string(out.size()) + " loop-carried and scan outputs, the node has " +
           std::to_string(c.node().output_size()));
  for (size_t i = 0; i < out.size(); ++i) c.set_output(static_cast<int>(i), out[i]);
}

// Loop(M, cond, v_initial...): a missing M is no limit, a missing cond true.
void map_loop(NodeContext& c) {
  const Scope s = c.scope();
  const Output trips =
      c.has_input(0) ? c.native(0)
                     : ops::constant(s, Tensor::scalar<int64_t>(std::numeric_limits<int64_t>::max()), "no_trip_limit");
  const Output cond = c.has_input(1) ? c.native(1) : ops::constant(s, Tensor::scalar<bool>(true), "no_condition");
  std::vector<Output> carried;
  NodeContext::SubgraphFrame frame;
  frame.arguments = {{DType::kInt64, Shape{}}, {DType::kBool, Shape{}}};
  for (int i = 2; i < c.num_inputs(); ++i) {
    if (!c.has_input(i)) c.fail("loop-carried input " + std::to_string(i) + " is missing");
    carried.push_back(c.native(i));
    frame.arguments.push_back(s.graph().spec(carried.back()));
  }
  const NodeContext::Subgraphs sub = carried_body(c, frame, carried.size());
  set_outputs(c, ops::loop(s, trips, cond, carried, sub.captured, sub.graphs[0], "Loop"));
}

// Scan(states..., sequences...): hub's Loop over the scan axis. Its body
// takes the states and each sequence's element at step i (Gather along the
// sequence's axis at i, or at length - 1 - i for a reversed one) and returns
// the condition true, the states and the scan elements; the stacked scan
// outputs are then reversed and moved to their axis as the attributes ask.
// The first sequence's length is the number of steps.
void map_scan(NodeContext& c) {
  const int64_t m = c.attr_int("num_scan_inputs", 0);
  const int n = c.num_inputs() - static_cast<int>(m);
  if (m < 1 || n < 0) c.fail_attr("num_scan_inputs", std::to_string(m), "must be in [1, inputs]");
  const std::vector<int64_t> in_axes = c.attr_ints("scan_input_axes", std::vector<int64_t>(m, 0));
  const std::vector<int64_t> in_reversed = c.attr_ints("scan_input_directions", std::vector<int64_t>(m, 0));
  if (static_cast<int64_t>(in_axes.size()) != m || static_cast<int64_t>(in_reversed.size()) != m)
    c.fail("scan_input_axes and scan_input_directions need one entry per scan input");
  const Scope s = c.scope();
  std::vector<Output> states, sequences;
  std::vector<int> axes;
  NodeContext::SubgraphFrame frame;
  frame.arguments = {{DType::kInt64, Shape{}}, {DType::kBool, Shape{}}};
  for (int i = 0; i < n; ++i) {
    states.push_back(c.native(i));
    frame.arguments.push_back(s.graph().spec(states.back()));
  }
  for (int j = 0; j < m; ++j) {
    sequences.push_back(c.native(n + j));
    axes.push_back(static_cast<int>(normalize_axis(c, in_axes[j], c.rank(n + j), "scan_input_axes")));
    frame.arguments.push_back(s.graph().spec(sequences.back()));
  }
  frame.inputs = [&](const Scope& b, const std::vector<Output>& a) {
    std::vector<Output> in(a.begin() + 2, a.begin() + 2 + n);
    for (int j = 0; j < m; ++j) {
      const Output sequence = a[static_cast<size_t>(2 + n + j)];
      Output at = a[0];
      if (in_reversed[static_cast<size_t>(j)])
        at = ops::sub(b, interop::run_time_dim(b, sequence, axes[static_cast<size_t>(j)], -1), at, "reversed_step");
      in.push_back(ops::gather(b, sequence, at, axes[static_cast<size_t>(j)], 0, "element"));
    }
    return in;
  };
  frame.results = [](const Scope& b, const std::vector<Output>& outputs) {
    std::vector<Output> r{ops::constant(b, Tensor::scalar<bool>(true), "go")};
    r.insert(r.end(), outputs.begin(), outputs.end());
    return r;
  };
  const NodeContext::Subgraphs sub = carried_body(c, frame, states.size());
  std::vector<Output> invariant = sequences;
  invariant.insert(invariant.end(), sub.captured.begin(), sub.captured.end());
  const Output steps =
      s.graph().spec(sequences[0]).shape[axes[0]] >= 0
          ? ops::constant(s, Tensor::scalar<int64_t>(s.graph().spec(sequences[0]).shape[axes[0]]), "steps")
          : interop::run_time_dim(s, sequences[0], axes[0], 0);
  std::vector<Output> out =
      ops::loop(s, steps, ops::constant(s, Tensor::scalar<bool>(true), "go"), states, invariant, sub.graphs[0], "Scan");
  const size_t k = out.size() - static_cast<size_t>(n);
  const std::vector<int64_t> out_axes = c.attr_ints("scan_output_axes", std::vector<int64_t>(k, 0));
  const std::vector<int64_t> out_reversed = c.attr_ints("scan_output_directions", std::vector<int64_t>(k, 0));
  if (out_axes.size() != k || out_reversed.size() != k)
    c.fail("scan_output_axes and scan_output_directions need one entry per scan output");
  for (size_t j = 0; j < k; ++j) {
    Output& y = out[static_cast<size_t>(n) + j];
    const int rank = s.graph().spec(y).shape.rank();
    if (out_reversed[j]) {
      // Steps last to first: (n - 1) - [0, 1, ..., n - 1], n the number of steps (the first sequence's
      // length). (Not a Range counting down to -1: ONNX Runtime turns a Gather of a Range into a Slice,
      // which reads an end of -1 as the last index.)
      const Output steps_up = s.op("DynamicRange", {sequences[0]},
                                   Attrs()
                                       .set("start", int64_t{0})
                                       .set("limit", int64_t{0})
                                       .set("delta", int64_t{1})
                                       .set("dtype", DType::kInt64)
                                       .set("from", std::vector<int64_t>{})
                                       .set("terms", std::vector<int64_t>{1, 0, axes[0], 1}),
                                   "steps_up");
      const Output order = ops::sub(s, interop::run_time_dim(s, sequences[0], axes[0], -1), steps_up, "reversed_order");
      y = ops::gather(s, y, order, 0, 0, "reversed");
    }
    const int axis = static_cast<int>(normalize_axis(c, out_axes[j], rank, "scan_output_axes"));
    if (axis != 0) {
      std::vector<int64_t> perm;
      for (int d = 1; d < rank; ++d) {
        if (d - 1 == axis) perm.push_back(0);
        perm.push_back(d);
      }
      if (axis == rank - 1) perm.push_back(0);
      y = ops::transpose(s, y, perm, "to_axis");
    }
  }
  set_outputs(c, out);
}

}  // namespace

void add_control_flow_mappers(std::map<std::string, OpMapper>& m) {
  m["If"] = {map_if, {"then_branch", "else_branch"}, /*foldable=*/false};
  m["Loop"] = {map_loop, {"body"}, /*foldable=*/false};
  m["Scan"] = {map_scan,
               {"body", "num_scan_inputs", "scan_input_axes", "scan_input_directions", "scan_output_axes",
                "scan_output_directions"},
               /*foldable=*/false};
}

}  // namespace hub::onnx_interop
