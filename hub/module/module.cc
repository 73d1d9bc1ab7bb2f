// Module: a ModuleSpec instantiated with its variables and a Session; export
// and application into another graph (hub/module/module.h).
#include "hub/module/module.h"

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "hub/core/fileio.h"
#include "hub/graph/optimize/optimize.h"
#include "hub/graph/session.h"
#include "hub/module/module_internal.h"
#include "hub/module/module_proto.h"
#include "hub/module/safetensors.h"

namespace fs = std::filesystem;

namespace hub {

using module_internal::join;
using module_internal::kAssetsDir;
using module_internal::keys;
using module_internal::kModuleFile;
using module_internal::kVariablesFile;

namespace {

// Copies src into a new graph, letting `edit` change each node's attributes.
Graph rebuild_graph(const Graph& src, const std::function<void(const Node&, Attrs&)>& edit) {
  Graph out;
  out.set_seed(src.seed());
  for (const Node& n : src.nodes()) {
    Attrs attrs = n.attrs;
    edit(n, attrs);
    out.add_node(n.op, n.name, n.inputs, attrs);
  }
  for (const auto& [key, names] : src.collections())
    for (const auto& name : names) out.add_to_collection(key, name);
  return out;
}

}  // namespace

// ---- variables ---------------------------------------------------------------------

const Tensor& VariableRef::value() const { return store_->at(name_); }

void VariableRef::assign(const Tensor& value) {
  try {
    copy_into(value, store_->at(name_));  // from or to a device too
  } catch (const Error& e) {
    throw e.with_context("variable '" + name_ + "'");
  }
}

void VariableRef::assign(float value) {
  const Tensor& cur = store_->at(name_);
  if (cur.dtype() != DType::kFloat32 || cur.num_elements() != 1)
    throw_error(Code::kInvalidArgument, "cannot assign a float scalar to variable '" + name_ + "' of " +
                                            cur.spec_string() + "; assign a tensor");
  assign(Tensor::from_vector<float>(cur.shape(), {value}));
}

VariableRef VariableMap::at(const std::string& name) const {
  if (!store_->contains(name)) {
    throw_error(Code::kNotFound, "no variable named '" + name + "' (variables: " + join(store_->names()) + ")");
  }
  return VariableRef(store_, name);
}

// ---- Module -----------------------------------------------------------------------

struct Module::Variant {
  std::unique_ptr<OptimizedGraph> graph;
  std::unique_ptr<Session> session;
};

struct Module::State {
  Graph graph;
  VariableStore variables;
  std::unique_ptr<Session> session;  // runs `graph`
  // Inference instances with the optimiser on: an optimised graph and the
  // session that runs it per activation layout in use (channel block, 0 for
  // NHWC; made when needed, again when stale); the layouts to try
  // (layout_candidates(), less a blocked one that came out the same as
  // NHWC), the contest of layouts per set of input shapes and the layout
  // the last call ran.
  bool optimize = false;
  std::map<int64_t, Variant> variants;
  std::vector<int64_t> layouts;
  std::map<std::string, Contest> contests;
  int64_t last_layout = -1;
};

Module::Module(ModuleSpec spec, TagSet tags, bool trainable)
    : spec_(std::move(spec)), tags_(std::move(tags)), trainable_(trainable), state_(std::make_unique<State>()) {
  const Graph& src = spec_.graph(tags_);
  state_->graph = trainable_ ? src : rebuild_graph(src, [](const Node& n, Attrs& a) {
    if (n.op == "Variable") a.set("trainable", false);
  });
  const TensorMap& weights = spec_.weights();
  for (int id : state_->graph.variables()) {
    const Node& n = state_->graph.node(id);
    auto it = weights.find(n.name);
    state_->variables.set(n.name, it != weights.end() ? it->second.clone() : initial_value(n, state_->graph.seed()));
  }
  state_->session = std::make_unique<Session>(state_->graph, &state_->variables);
  state_->optimize = !trainable_ && !tags_.count("train") && graph_optimization_enabled();
  if (state_->optimize) state_->layouts = layout_candidates(default_backend());
}

Module::~Module() = default;
Module::Module(Module&&) noexcept = default;

Graph& Module::graph() { return state_->graph; }

Module::Variant& Module::optimized(int64_t layout) {
  State& st = *state_;
  Variant& v = st.variants[layout];
  if (v.graph && !v.graph->stale(st.variables)) return v;
  std::vector<Output> keep;  // every signature's inputs and outputs
  for (const std::string& name : spec_.signature_names(tags_)) {
    const SignatureInfo& si = spec_.signature(name, tags_);
    for (const auto& [k, info] : si.inputs) keep.push_back(st.graph.tensor(info.tensor_name));
    for (const auto& [k, info] : si.outputs) keep.push_back(st.graph.tensor(info.tensor_name));
  }
  v.session.reset();
  v.graph.reset();
  OptimizeOptions options;
  options.block = layout;
  try {
    v.graph = std::make_unique<OptimizedGraph>(optimize_for_inference(st.graph, st.variables, keep, options));
  } catch (const Error& e) {
    st.variants.erase(layout);
    throw e.with_context("optimising the graph for inference (HUB_GRAPH_OPT=0 skips it)");
  }
  SessionOptions session_options;
  session_options.plan_memory = true;  // intermediates in one arena, laid out per set of input shapes
  v.session = std::make_unique<Session>(v.graph->graph(), &st.variables, session_options);
  return v;
}

std::vector<Tensor> Module::run(const FeedList& feeds, const std::vector<Output>& fetches) {
  State& st = *state_;
  if (!st.optimize) return st.session->run(feeds, fetches);
  auto run_in = [&](int64_t layout) {
    Variant& v = optimized(layout);
    FeedList f = feeds;
    for (auto& [o, t] : f) o = v.graph->tensor(o);
    std::vector<Output> out = fetches;
    for (Output& o : out) o = v.graph->tensor(o);
    st.last_layout = layout;
    return v.session->run(f, out);
  };
  std::string shapes;
  for (const auto& [o, t] : feeds) shapes += t.shape().to_string();
  Contest& contest = st.contests.try_emplace(shapes, st.layouts).first->second;
  if (contest.settled()) return run_in(contest.next());
  // A blocked graph with no _Relayout has no blocked convolution: it is the
  // NHWC one, and no contest needs to try it.
  const int64_t layout = contest.next();
  if (layout != 0 && optimized(layout).graph->stats().relayouts == 0) {
    std::erase(st.layouts, layout);
    for (auto& [k, c] : st.contests) c.drop(layout);
    st.variants.erase(layout);
    return run(feeds, fetches);
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<Tensor> result = run_in(layout);
  contest.record(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  if (contest.settled()) {  // keep only the layouts some contest still runs
    std::set<int64_t> used;
    for (const auto& [k, c] : st.contests)
      if (c.settled())
        used.insert(c.next());
      else
        used.insert(c.ways().begin(), c.ways().end());
    std::erase_if(st.variants, [&](const auto& v) { return !used.count(v.first); });
  }
  return result;
}

const Graph& Module::execution_graph() {
  State& st = *state_;
  if (!st.optimize) return st.graph;
  return optimized(st.last_layout >= 0 ? st.last_layout : st.layouts.front()).graph->graph();
}
VariableStore& Module::variables() { return state_->variables; }

TensorMap Module::operator()(const std::string& signature, const TensorMap& inputs) {
  const SignatureInfo& si = spec_.signature(signature, tags_);
  const std::string where = "module " + spec_.source() + ", signature '" + signature + "'";
  for (const auto& [k, t] : inputs)
    if (!si.inputs.count(k))
      throw_error(Code::kInvalidArgument, where + " has no input '" + k + "' (inputs: " + join(keys(si.inputs)) + ")");
  FeedList feeds;
  for (const auto& [k, info] : si.inputs) {
    auto it = inputs.find(k);
    if (it == inputs.end())
      throw_error(Code::kInvalidArgument, where + ": missing input '" + k + "' (" +
                                              std::string(dtype_name(info.dtype)) + info.shape.to_string() + ")");
    const Tensor& t = it->second;
    if (!t.defined() || t.dtype() != info.dtype || t.rank() != info.shape.rank() ||
        !t.shape().compatible_with(info.shape))
      throw_error(Code::kInvalidArgument, where + ": input '" + k + "' expects " + std::string(dtype_name(info.dtype)) +
                                              info.shape.to_string() + ", got " +
                                              (t.defined() ? t.spec_string() : "an undefined tensor"));
    feeds.emplace_back(state_->graph.tensor(info.tensor_name), t);
  }
  std::vector<Output> fetches;
  for (const auto& [k, info] : si.outputs) fetches.push_back(state_->graph.tensor(info.tensor_name));
  std::vector<Tensor> values;
  try {
    values = run(feeds, fetches);
  } catch (const Error& e) {
    throw e.with_context(where);
  }
  TensorMap out;
  size_t i = 0;
  for (const auto& [k, info] : si.outputs) out[k] = values[i++];
  return out;
}

Tensor Module::call_single(const std::string& signature, const Tensor& input) {
  const SignatureInfo& si = spec_.signature(signature, tags_);
  if (si.inputs.size() != 1)
    throw_error(Code::kInvalidArgument, "module " + spec_.source() + ", signature '" + signature + "' has " +
                                            std::to_string(si.inputs.size()) + " inputs (" + join(keys(si.inputs)) +
                                            "); pass a name->tensor map");
  TensorMap out = (*this)(signature, TensorMap{{si.inputs.begin()->first, input}});
  if (out.size() == 1) return out.begin()->second;
  auto it = out.find("default");
  if (it == out.end())
    throw_error(Code::kInvalidArgument, "module " + spec_.source() + ", signature '" + signature + "' has " +
                                            std::to_string(out.size()) + " outputs and none named 'default'");
  return it->second;
}

Tensor Module::operator()(const Tensor& input) { return call_single(kDefaultSignature, input); }

void Module::export_to(const std::string& dir, ExistingTarget existing) const {
  try {
    StagingDir staging(dir, existing);
    const fs::path tmp(staging.path());
    // Weights: this instance's current values; variables only in other tag
    // sets keep the spec's weights or their initial values.
    TensorMap weights;
    for (const VariableInfo& v : spec_.variables()) {
      if (state_->variables.contains(v.name)) {
        weights[v.name] = state_->variables.at(v.name);
      } else if (spec_.weights().count(v.name)) {
        weights[v.name] = spec_.weights().at(v.name);
      } else {
        for (const TagSet& tags : spec_.tag_sets()) {
          const Graph& g = spec_.graph(tags);
          if (auto id = g.find(v.name)) {
            weights[v.name] = initial_value(g.node(*id), g.seed());
            break;
          }
        }
      }
    }
    write_file_atomic((tmp / kModuleFile).string(), serialize_deterministic(spec_to_proto(spec_)));
    write_safetensors((tmp / kVariablesFile).string(), weights, {{"format", "hub"}});
    fs::create_directory(tmp / kAssetsDir);
    if (!spec_.assets_dir().empty()) fs::copy(spec_.assets_dir(), tmp / kAssetsDir, fs::copy_options::recursive);
    for (const auto& [name, contents] : spec_.asset_files())
      write_file_atomic((tmp / kAssetsDir / name).string(), contents);
    staging.commit();
  } catch (const fs::filesystem_error& e) {
    throw_error(Code::kIOError, std::string("export_to '") + dir + "': " + e.what());
  } catch (const Error& e) {
    throw e.with_context("export_to");
  }
}

namespace {
// A scope prefix no node of `g` uses yet: base, base_1, base_2, ...
std::string unused_prefix(const GraphBuilder& g, const std::string& base) {
  auto used = [&](const std::string& p) {
    for (int id = 0; id < g.num_nodes(); ++id) {
      const std::string& name = g.node(id).name;
      if (name == p || name.rfind(p + "/", 0) == 0) return true;
    }
    return false;
  };
  if (!used(base)) return base;
  for (int i = 1;; ++i)
    if (!used(base + "_" + std::to_string(i))) return base + "_" + std::to_string(i);
}
}  // namespace

OutputMap Module::apply(const Scope& scope, const OutputMap& inputs, const std::string& signature,
                        VariableStore* initial_values, const std::string& name) const {
  const Graph& src = spec_.graph(tags_);
  const SignatureInfo& si = spec_.signature(signature, tags_);
  GraphBuilder& dst = scope.graph();
  const std::string where = "applying module " + spec_.source() + ", signature '" + signature + "'";
  std::map<int, Output> remap;  // src node id of a signature input -> dst tensor
  for (const auto& [k, o] : inputs)
    if (!si.inputs.count(k))
      throw_error(Code::kInvalidArgument, where + ": no input '" + k + "' (inputs: " + join(keys(si.inputs)) + ")");
  for (const auto& [k, info] : si.inputs) {
    auto it = inputs.find(k);
    if (it == inputs.end()) throw_error(Code::kInvalidArgument, where + ": missing input '" + k + "'");
    if (!it->second.valid() || it->second.node >= dst.num_nodes())
      throw_error(Code::kInvalidArgument, where + ": input '" + k + "' is not a tensor of the target graph");
    const TensorSpec& s = dst.spec(it->second);
    if (s.dtype != info.dtype || s.shape.rank() != info.shape.rank() || !s.shape.compatible_with(info.shape))
      throw_error(Code::kInvalidArgument, where + ": input '" + k + "' expects " + std::string(dtype_name(info.dtype)) +
                                              info.shape.to_string() + ", got " + s.to_string());
    remap[src.tensor(info.tensor_name).node] = it->second;
  }
  const std::string prefix = unused_prefix(dst, scope.prefix().empty() ? name : scope.prefix() + "/" + name);
  std::map<int, int> node_map;  // src node id -> dst node id (copied nodes)
  auto map_output = [&](Output o) -> Output {
    auto r = remap.find(o.node);
    if (r != remap.end()) return r->second;  // placeholders have one output
    return Output{node_map.at(o.node), o.index};
  };
  try {
    for (const Node& n : src.nodes()) {
      if (remap.count(n.id)) continue;
      std::vector<Output> ins;
      for (const Output& in : n.inputs) ins.push_back(map_output(in));
      Attrs attrs = n.attrs;
      const std::string new_name = prefix + "/" + n.name;
      if (n.op == "Variable") {
        attrs.set("trainable", trainable_ && n.attrs.get_bool("trainable"));
        if (initial_values) initial_values->set(new_name, state_->variables.at(n.name).clone());
      }
      node_map[n.id] = dst.add_node(n.op, new_name, std::move(ins), attrs).node;
    }
  } catch (const Error& e) {
    throw e.with_context(where);
  }
  // Update ops and regularization losses only matter when the module trains.
  if (trainable_)
    for (const auto& [key, names] : src.collections())
      for (const auto& n : names) dst.add_to_collection(key, prefix + "/" + n);
  OutputMap out;
  for (const auto& [k, info] : si.outputs) out[k] = map_output(src.tensor(info.tensor_name));
  return out;
}

}  // namespace hub
