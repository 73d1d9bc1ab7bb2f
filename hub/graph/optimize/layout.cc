// Activation layouts between fused convolutions (optimize.h). A fused
// convolution is a candidate when the backend runs it with input, output and
// side input all in the channel-blocked layout (asked through place() with
// the node's blocked specs, batch 1 where unknown). Candidates run blocked;
// a candidate's input that another candidate made is used as is, any other
// goes through one _Relayout to the blocked form (shared by all candidates
// reading it); a candidate's output read by anything else, or kept, goes
// through one _Relayout back to NHWC. So blocked tensors only ever flow
// between nodes that declare their layout, and no reorder sits between two
// consecutive blocked convolutions.
#include <algorithm>
#include <map>

#include "hub/graph/optimize/passes.h"
#include "hub/ops/fused.h"

namespace hub::optimize {

namespace {

Shape known(const Shape& s) {
  std::vector<int64_t> d = s.dims();
  for (int64_t& v : d)
    if (v < 0) v = 1;
  return Shape(d);
}

// Whether `backend` runs conv node n with everything blocked.
bool runs_blocked(const Ir& ir, int n, int64_t block, const Backend& backend) {
  const INode& in = ir.nodes[n];
  if (in.op != "_FusedConv2D" || in.attrs.get_int("src_block") != 0 || in.attrs.get_int("dst_block") != 0) return false;
  const Shape x = ir.spec(in.inputs[0]).shape, w = ir.spec(in.inputs[1]).shape;
  if (x.rank() != 4 || x[3] < 0 || (w[2] != x[3] && !in.attrs.get_bool("depthwise"))) return false;
  Node probe;
  probe.name = in.name;
  probe.op = in.op;
  probe.attrs = in.attrs;
  probe.attrs.set("src_block", block).set("dst_block", block);
  std::vector<TensorSpec> specs{{DType::kFloat32, ops::blocked_shape(known(x), block)}};
  for (size_t i = 1; i < 3; ++i) specs.push_back({DType::kFloat32, known(ir.spec(in.inputs[i]).shape)});
  if (in.inputs.size() > 3)
    specs.push_back({DType::kFloat32, ops::blocked_shape(known(ir.spec(in.inputs[3]).shape), block)});
  try {
    InferContext ctx(probe.name, probe.op, specs, probe.attrs);
    OpRegistry::global().find(probe.op).shape_fn(ctx);
    return place(probe, specs, backend).backend == &backend;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

int assign_layouts(Ir& ir, int64_t block, const Backend& backend) {
  if (block <= 0) return 0;
  std::vector<int> candidates;
  for (size_t n = 0; n < ir.nodes.size(); ++n)
    if (!ir.nodes[n].dead && runs_blocked(ir, static_cast<int>(n), block, backend))
      candidates.push_back(static_cast<int>(n));
  std::sort(candidates.begin(), candidates.end(),
            [&](int a, int b) { return ir.nodes[a].position < ir.nodes[b].position; });
  std::vector<char> blocked(ir.nodes.size() + 1, 0);
  for (int c : candidates) blocked[c] = 1;
  int relayouts = 0;
  std::map<Output, Output> to_blocked;  // NHWC tensor -> its blocked copy
  auto relayout = [&](Output x, int64_t from, int64_t to, int64_t channels, int before) {
    INode r;
    r.op = "_Relayout";
    r.name = ir.unique_name(ir.nodes[x.node].name + (to > 0 ? "/to_blocked" : "/to_nhwc"));
    r.inputs = {x};
    r.attrs.set("from_block", from).set("to_block", to).set("channels", channels);
    ++relayouts;
    return Output{ir.add(std::move(r), before), 0};
  };
  // Inputs, in position order so a candidate's producers are final first.
  for (int c : candidates) {
    for (size_t i : {size_t{0}, size_t{3}}) {
      if (i >= ir.nodes[c].inputs.size()) continue;
      Output x = ir.nodes[c].inputs[i];
      if (x.node < static_cast<int>(blocked.size()) && blocked[x.node]) continue;
      auto it = to_blocked.find(x);
      if (it == to_blocked.end()) {
        int64_t channels = ir.spec(x).shape[3];
        it = to_blocked.emplace(x, relayout(x, 0, block, channels, c)).first;
        blocked.resize(ir.nodes.size() + 1, 0);
      }
      ir.nodes[c].inputs[i] = it->second;
    }
    ir.nodes[c].attrs.set("src_block", block).set("dst_block", block);
    ir.infer(c);
  }
  // Outputs read in NHWC.
  for (int c : candidates) {
    const Output out{c, 0};
    std::vector<std::pair<int, int>> nhwc;
    for (auto [n, i] : ir.consumers(out))
      if (!(n < static_cast<int>(blocked.size()) && blocked[n] && (i == 0 || i == 3))) nhwc.emplace_back(n, i);
    if (nhwc.empty() && !ir.kept(out)) continue;
    int first = nhwc.empty() ? -1 : nhwc[0].first;
    for (auto [n, i] : nhwc)
      if (ir.nodes[n].position < ir.nodes[first].position) first = n;
    // Just after c when only kept: before the node that follows c.
    int before = first;
    if (before < 0) {
      for (size_t n = 0; n < ir.nodes.size(); ++n)
        if (!ir.nodes[n].dead && ir.nodes[n].position > ir.nodes[c].position &&
            (before < 0 || ir.nodes[n].position < ir.nodes[before].position))
          before = static_cast<int>(n);
    }
    const int64_t channels = ir.spec(ir.nodes[c].inputs[2]).shape[0];
    Output r;
    if (before >= 0) {
      r = relayout(out, block, 0, channels, before);
    } else {  // c is last: append after it
      INode node;
      node.op = "_Relayout";
      node.name = ir.unique_name(ir.nodes[c].name + "/to_nhwc");
      node.inputs = {out};
      node.attrs.set("from_block", block).set("to_block", int64_t{0}).set("channels", channels);
      ir.nodes.push_back(std::move(node));
      ir.nodes.back().position = ir.nodes[c].position + 1;
      ir.infer(static_cast<int>(ir.nodes.size()) - 1);
      r = Output{static_cast<int>(ir.nodes.size()) - 1, 0};
      ++relayouts;
    }
    for (auto [n, i] : nhwc) ir.nodes[n].inputs[i] = r;
    ir.replace_kept(out, r);
  }
  return relayouts;
}

}  // namespace hub::optimize
