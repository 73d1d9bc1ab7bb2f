#include "hub/graph/optimize/optimize.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "hub/graph/optimize/passes.h"

namespace hub {

Output OptimizedGraph::tensor(Output source) const {
  auto it = tensors_.find(source);
  if (it == tensors_.end())
    throw_error(Code::kInvalidArgument, "tensor " + std::to_string(source.node) + ":" + std::to_string(source.index) +
                                            " was not kept when the graph was optimised");
  return it->second;
}

bool OptimizedGraph::stale(const VariableStore& variables) const {
  for (const Source& s : sources_) {
    if (!variables.contains(s.name)) return true;
    const std::shared_ptr<Storage> now = s.storage.lock();
    if (!now || now != variables.at(s.name).storage() || now->generation.load() != s.generation) return true;
  }
  return false;
}

OptimizedGraph optimize_for_inference(const Graph& graph, const VariableStore& variables,
                                      const std::vector<Output>& keep, const OptimizeOptions& options) {
  const Backend& backend = options.backend ? *options.backend : default_backend();
  OptimizedGraph result;
  optimize::Ir ir(graph, keep);
  ir.drop_unused();
  OptimizeStats& st = result.stats_;
  // Control flow's subgraphs (a loop body runs once per iteration) are
  // optimised the same way, each on its own: its arguments and results kept.
  for (optimize::INode& n : ir.nodes) {
    if (n.dead) continue;
    for (const auto& [name, value] : n.attrs.items()) {
      if (attr_type(value) != AttrType::kGraph) continue;
      const Subgraph& sub = *std::get<SubgraphPtr>(value);
      std::vector<Output> sub_keep = sub.arguments;
      sub_keep.insert(sub_keep.end(), sub.results.begin(), sub.results.end());
      const OptimizedGraph opt = optimize_for_inference(subgraph_graph(sub), variables, sub_keep, options);
      std::vector<Output> arguments, results;
      for (Output a : sub.arguments) arguments.push_back(opt.tensor(a));
      for (Output r : sub.results) results.push_back(opt.tensor(r));
      n.attrs.set(name, make_subgraph(opt.graph(), arguments, results));
      result.sources_.insert(result.sources_.end(), opt.sources_.begin(), opt.sources_.end());
      st.constants_folded += opt.stats().constants_folded;
      st.fused += opt.stats().fused;
      st.batch_norms_folded += opt.stats().batch_norms_folded;
      st.post_ops += opt.stats().post_ops;
    }
  }
  std::vector<optimize::FrozenVariable> frozen;
  optimize::freeze_variables(ir, variables, &frozen);
  for (const auto& f : frozen) result.sources_.push_back({f.name, f.storage, f.generation});
  optimize::bypass_identities(ir);
  st.nodes_before = graph.num_nodes();
  st.constants_folded += optimize::fold_constants(ir, true);
  optimize::FuseCounts fc = optimize::fuse(ir);
  // Quantized weights no quantized convolution took run dequantized once.
  ir.drop_unused();
  st.constants_folded += optimize::fold_constants(ir, false);
  st.fused += fc.fused;
  st.batch_norms_folded += fc.batch_norms;
  st.post_ops += fc.absorbed;
  st.block = options.block >= 0 ? options.block : OpRegistry::global().activation_blocks(backend.name()).front();
  st.relayouts = optimize::assign_layouts(ir, st.block, backend);
  ir.drop_unused();
  result.graph_ = ir.emit(&result.tensors_);
  st.nodes_after = result.graph_.num_nodes();
  return result;
}

bool graph_optimization_enabled() {
  const char* env = std::getenv("HUB_GRAPH_OPT");
  return !(env && std::strcmp(env, "0") == 0);
}

std::vector<int64_t> layout_candidates(const Backend& backend) {
  const std::vector<int64_t> offered = OpRegistry::global().activation_blocks(backend.name());
  const char* env = std::getenv("HUB_GRAPH_LAYOUT");
  const std::string mode = env ? env : "auto";
  if (mode == "auto" || mode.empty()) return offered;
  if (mode == "nhwc") return {0};
  if (mode == "blocked") {
    for (int64_t b : offered)
      if (b > 0) return {b};
    return {0};
  }
  throw_error(Code::kInvalidArgument, "HUB_GRAPH_LAYOUT='" + mode + "': expected auto, nhwc or blocked");
}

Contest::Contest(std::vector<int64_t> ways, int rounds)
    : ways_(std::move(ways)),
      calls_(ways_.size(), 0),
      best_(ways_.size(), std::numeric_limits<double>::infinity()),
      rounds_(rounds) {
  if (ways_.empty()) throw_error(Code::kInvalidArgument, "a contest needs at least one way");
}

bool Contest::settled() const { return ways_.size() == 1 || *std::min_element(calls_.begin(), calls_.end()) > rounds_; }

size_t Contest::next_index() const {
  if (settled()) return static_cast<size_t>(std::min_element(best_.begin(), best_.end()) - best_.begin());
  return static_cast<size_t>(std::min_element(calls_.begin(), calls_.end()) - calls_.begin());
}

int64_t Contest::next() const { return ways_[next_index()]; }

void Contest::record(double seconds) {
  if (settled()) return;
  const size_t i = next_index();
  if (calls_[i]++ > 0) best_[i] = std::min(best_[i], seconds);
}

void Contest::drop(int64_t way) {
  auto it = std::find(ways_.begin(), ways_.end(), way);
  if (it == ways_.end() || ways_.size() == 1) return;
  const auto i = it - ways_.begin();
  ways_.erase(it);
  calls_.erase(calls_.begin() + i);
  best_.erase(best_.begin() + i);
}

}  // namespace hub
