#include "hub/graph/session.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include "hub/core/random.h"
#include "hub/graph/optimize/optimize.h"
#include "hub/graph/step_fusion.h"

namespace hub {

namespace {

// Forwards to another allocator and remembers what it handed out (the
// recording run of a memory plan: which outputs did their kernel allocate).
class RecordingAllocator final : public Allocator {
 public:
  explicit RecordingAllocator(Allocator& base) : base_(base) {}
  std::shared_ptr<Storage> allocate(size_t bytes) override {
    auto s = base_.allocate(bytes);
    handed_out_.push_back(s);
    return s;
  }
  int64_t system_allocations() const override { return base_.system_allocations(); }
  int64_t bytes_held() const override { return base_.bytes_held(); }
  void trim() override { base_.trim(); }
  bool handed_out(const Storage* s) const {
    for (const auto& h : handed_out_)
      if (h.get() == s) return true;
    return false;
  }
  void clear() { handed_out_.clear(); }

 private:
  Allocator& base_;
  std::vector<std::shared_ptr<Storage>> handed_out_;
};

constexpr int64_t kArenaAlign = static_cast<int64_t>(kTensorAlignment);

}  // namespace

struct Session::Plan {
  struct Step {
    int node;
    const Node* run_as = nullptr;  // a fused node run in place of `node` (in `replaced`), or null
    // The node this step runs: `node` of g, or the fused node replacing it.
    const Node& to_run(const Graph& g) const { return run_as ? *run_as : g.node(node); }
    std::vector<int> input_slots;       // slot of each input tensor
    std::vector<int> output_slots;      // slot of each output (-1: unused)
    std::vector<int> release_after;     // slots whose last use is this step
    std::vector<size_t> fetches_ready;  // fetches computed by this step
    std::vector<TensorSpec> in_specs;   // last seen input specs
    std::vector<TensorSpec> out_specs;  // inferred for in_specs
    Placement placement;
    bool inferred = false;
    std::shared_ptr<void> kernel_state;  // KernelContext::state(), cleared with in_specs
    std::vector<int64_t> arena_offset;   // per output: offset in the arena, -1 if not planned
  };
  std::vector<Step> steps;
  std::map<Output, int> slot_of;  // tensor -> slot
  std::vector<int> feed_slots;    // per feed, its slot
  std::vector<int> fetch_slots;
  std::vector<int> last_use;                        // per slot: step index, -1 never used, -2 fetched
  std::vector<size_t> fetches_fed;                  // fetches no step computes
  std::vector<Tensor> values;                       // per slot
  std::map<int, StepFusion::Replacement> replaced;  // fused nodes (step_fusion.h), by source node

  // Memory plan (SessionOptions::plan_memory); none when a step's output
  // shapes follow from input values (OpDef::value_dependent_shape).
  bool plannable = true;
  std::vector<TensorSpec> planned_feeds;  // feed specs the layout was made for
  std::shared_ptr<Storage> arena;         // null: no layout yet
  int64_t arena_bytes = 0;
};

// One buffer of the recording run: made by step `def` (output `output`),
// used until step `end` by the tensors in it; `escapes` when fetched.
struct Session::Buffer {
  int def, output;
  int64_t bytes;
  int end;
  bool escapes = false;
  int64_t offset = -1;
};

class Session::Subgraphs final : public SubgraphRunner {
 public:
  Subgraphs(VariableStore* variables, const SessionOptions& options) : variables_(variables), options_(options) {
    options_.plan_memory = false;
    options_.profile = false;
    options_.fetch_to_host = true;
  }
  std::vector<Tensor> run(const Subgraph& graph, const std::vector<Tensor>& arguments) override {
    auto it = children_.find(&graph);
    if (it == children_.end()) {
      auto child = std::make_unique<Child>();
      child->graph = subgraph_graph(graph);
      child->session = std::make_unique<Session>(child->graph, variables_, options_);
      it = children_.emplace(&graph, std::move(child)).first;
    }
    HUB_CHECK(arguments.size() == graph.arguments.size(), "subgraph arguments");
    FeedList feeds;
    for (size_t a = 0; a < arguments.size(); ++a) feeds.emplace_back(graph.arguments[a], arguments[a]);
    return it->second->session->run(feeds, graph.results);
  }

 private:
  struct Child {
    Graph graph;
    std::unique_ptr<Session> session;
  };
  VariableStore* variables_;
  SessionOptions options_;
  std::map<const Subgraph*, std::unique_ptr<Child>> children_;
};

Session::Session(const Graph& graph, VariableStore* variables, SessionOptions options)
    : subgraphs_(std::make_unique<Subgraphs>(variables, options)),
      graph_(graph),
      variables_(variables),
      backend_(options.backend ? options.backend : &default_backend()),
      plan_memory_(options.plan_memory),
      profile_(options.profile),
      fetch_to_host_(options.fetch_to_host),
      fuse_(options.fuse && graph_optimization_enabled()) {
  allocators_[Device::kCPU] = std::make_unique<PoolAllocator>();
}

const Backend& Session::backend_of(Device device) const {
  auto it = device_backends_.find(device);
  return it != device_backends_.end() ? *it->second : backend_for_device(device);
}

Allocator& Session::allocator_for(Device device, const Backend* owner) {
  auto& a = allocators_[device];
  if (!a) {
    const Backend& maker = owner ? *owner : backend_of(device);
    a = maker.make_allocator();
    device_backends_.emplace(device, &maker);
  }
  return *a;
}

Tensor Session::on_device(const Tensor& t, Device device) {
  if (t.device() == device) return t;
  const Backend& copier = backend_of(device == Device::kCPU ? t.device() : device);
  Tensor out(t.dtype(), t.shape(), allocator_for(device).allocate(t.nbytes()));
  copier.copy(t, out);
  ++last_copies_;
  return out;
}

Session::~Session() = default;

size_t Session::num_plans() const { return plans_.size(); }

int64_t Session::last_arena_bytes() const { return last_plan_ && last_plan_->arena ? last_plan_->arena_bytes : 0; }

Session::Plan& Session::plan_for(const FeedList& feeds, const std::vector<Output>& fetches,
                                 const std::vector<Output>& targets) {
  std::string key;
  auto add_key = [&](char tag, Output o) { key += tag + std::to_string(o.node) + ":" + std::to_string(o.index) + ","; };
  for (auto& [o, t] : feeds) add_key('f', o);
  for (Output o : fetches) add_key('o', o);
  for (Output o : targets) add_key('t', o);
  if (plan_memory_) {
    // One plan per set of feed shapes (its kernels' states and its arena),
    // the kShapePlans most recently used per feeds and fetches.
    const std::string base = key;
    for (auto& [o, t] : feeds) key += t.shape().to_string();
    std::vector<std::string>& recent = shape_plans_[base];
    auto r = std::find(recent.begin(), recent.end(), key);
    if (r != recent.end()) recent.erase(r);
    recent.insert(recent.begin(), key);
    if (recent.size() > kShapePlans) {
      if (last_plan_ == plans_[recent.back()].get()) last_plan_ = nullptr;
      plans_.erase(recent.back());
      recent.pop_back();
    }
  }
  auto it = plans_.find(key);
  if (it != plans_.end()) return *it->second;

  auto plan = std::make_unique<Plan>();
  int n = graph_.num_nodes();
  std::vector<char> fed_node(n, 0), needed(n, 0);
  for (auto& [o, t] : feeds) {
    if (o.node < 0 || o.node >= n) throw_error(Code::kInvalidArgument, "feed of a tensor not in the graph");
    fed_node[o.node] = 1;
  }
  std::vector<int> stack;
  for (Output o : fetches) {
    if (o.node < 0 || o.node >= n) throw_error(Code::kInvalidArgument, "fetch of a tensor not in the graph");
    stack.push_back(o.node);
  }
  for (Output o : targets) {
    if (o.node < 0 || o.node >= n) throw_error(Code::kInvalidArgument, "target not in the graph");
    stack.push_back(o.node);
  }
  while (!stack.empty()) {
    int id = stack.back();
    stack.pop_back();
    if (needed[id]) continue;
    needed[id] = 1;
    if (fed_node[id]) continue;
    for (const Output& in : graph_.node(id).inputs) stack.push_back(in.node);
  }
  auto slot = [&](Output o) {
    auto [pos, inserted] = plan->slot_of.emplace(o, static_cast<int>(plan->slot_of.size()));
    return pos->second;
  };
  for (auto& [o, t] : feeds) plan->feed_slots.push_back(slot(o));
  std::vector<char> runs(n, 0);
  for (int id = 0; id < n; ++id) {
    if (!needed[id] || fed_node[id]) continue;
    const Node& node = graph_.node(id);
    if (node.op == "Placeholder")
      throw_error(Code::kInvalidArgument,
                  "placeholder '" + node.name + "' (" + node.outputs[0].to_string() + ") must be fed");
    for (const Output& in : node.inputs)
      if (fed_node[in.node] && !plan->slot_of.count(in))
        throw_error(Code::kInvalidArgument, "node '" + node.name + "' needs output " + std::to_string(in.index) +
                                                " of '" + graph_.node(in).name + "', which is fed only in part");
    runs[id] = 1;
  }
  // The fused kernels are host kernels: fuse only where the nodes run on the host.
  StepFusion fusion;
  if (fuse_ && backend_->device() == Device::kCPU) fusion = fuse_steps(graph_, runs, fetches);
  plan->replaced = std::move(fusion.replaced);
  for (int id = 0; id < n; ++id) {
    if (!runs[id] || fusion.skipped.count(id)) continue;
    Plan::Step step;
    step.node = id;
    auto r = plan->replaced.find(id);
    if (r != plan->replaced.end()) step.run_as = &r->second.node;
    for (const Output& in : step.to_run(graph_).inputs) step.input_slots.push_back(slot(in));
    if (step.run_as)
      for (Output o : r->second.produces) step.output_slots.push_back(slot(o));
    else
      for (int i = 0; i < static_cast<int>(graph_.node(id).outputs.size()); ++i)
        step.output_slots.push_back(slot({id, i}));
    if (OpRegistry::global().find(step.to_run(graph_).op).value_dependent_shape) plan->plannable = false;
    plan->steps.push_back(std::move(step));
  }
  for (Output o : fetches) plan->fetch_slots.push_back(slot(o));
  std::map<int, int> producer;  // slot -> step computing it
  for (int s = 0; s < static_cast<int>(plan->steps.size()); ++s)
    for (int out : plan->steps[s].output_slots) producer[out] = s;
  for (size_t i = 0; i < fetches.size(); ++i) {
    auto p = producer.find(plan->fetch_slots[i]);
    if (p == producer.end())
      plan->fetches_fed.push_back(i);
    else
      plan->steps[p->second].fetches_ready.push_back(i);
  }
  // Last use of each slot: fetched slots are never released early.
  std::vector<int>& last_use = plan->last_use;
  last_use.assign(plan->slot_of.size(), -1);
  for (int s = 0; s < static_cast<int>(plan->steps.size()); ++s)
    for (int in : plan->steps[s].input_slots) last_use[in] = s;
  for (int f : plan->fetch_slots) last_use[f] = -2;
  for (int slot_id = 0; slot_id < static_cast<int>(last_use.size()); ++slot_id)
    if (last_use[slot_id] >= 0) plan->steps[last_use[slot_id]].release_after.push_back(slot_id);
  plan->values.resize(plan->slot_of.size());
  Plan& ref = *plan;
  plans_[key] = std::move(plan);
  return ref;
}

// Lays out the buffers of a recording run in one arena: in-place takeovers
// first (an output joins its input's buffer), then greedy by size, each
// buffer at the lowest offset clear of every placed buffer whose lifetime
// overlaps its own.
void Session::lay_out(Plan& plan, std::vector<Buffer>& buffers, const std::vector<int>& buffer_of_output,
                      const std::vector<int>& slot_buffer, const std::vector<char>& slot_whole) {
  const int num_steps = static_cast<int>(plan.steps.size());
  for (Plan::Step& step : plan.steps) step.arena_offset.assign(step.output_slots.size(), -1);
  // buffer_of_output: per step, per output, flattened; -1 when not planned.
  std::vector<int> first_output(num_steps + 1, 0);
  for (int s = 0; s < num_steps; ++s)
    first_output[s + 1] = first_output[s] + static_cast<int>(plan.steps[s].output_slots.size());
  std::vector<int> owner(buffers.size());  // buffer -> the buffer whose bytes it uses
  for (size_t b = 0; b < buffers.size(); ++b) owner[b] = static_cast<int>(b);
  for (int s = 0; s < num_steps; ++s) {
    const Plan::Step& step = plan.steps[s];
    for (const auto& [in, out] : OpRegistry::global().find(step.to_run(graph_).op).in_place) {
      if (in >= static_cast<int>(step.input_slots.size()) || out >= static_cast<int>(step.output_slots.size()))
        continue;
      const int src = slot_buffer[step.input_slots[in]];
      const int dst = buffer_of_output[first_output[s] + out];
      if (src < 0 || dst < 0 || buffers[dst].def != s || !slot_whole[step.input_slots[in]] ||
          !slot_whole[step.output_slots[out]] || buffers[src].bytes != buffers[dst].bytes)
        continue;
      bool shared = false;  // another input of this step in the same bytes
      for (size_t j = 0; j < step.input_slots.size(); ++j)
        if (static_cast<int>(j) != in && slot_buffer[step.input_slots[j]] >= 0 &&
            owner[slot_buffer[step.input_slots[j]]] == owner[src])
          shared = true;
      Buffer& a = buffers[owner[src]];
      if (shared || a.escapes || a.end != s || a.bytes < buffers[dst].bytes || buffers[dst].escapes) continue;
      a.end = buffers[dst].end;  // dst's bytes are src's from here on
      owner[dst] = owner[src];
    }
  }
  std::vector<int> order;
  for (size_t b = 0; b < buffers.size(); ++b)
    if (owner[b] == static_cast<int>(b) && !buffers[b].escapes) order.push_back(static_cast<int>(b));
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return buffers[x].bytes > buffers[y].bytes; });
  std::vector<int> placed;
  int64_t total = 0;
  for (int b : order) {
    Buffer& me = buffers[b];
    std::vector<std::pair<int64_t, int64_t>> busy;  // [offset, end) of overlapping placed buffers
    for (int p : placed)
      if (buffers[p].def <= me.end && me.def <= buffers[p].end)
        busy.emplace_back(buffers[p].offset, buffers[p].offset + buffers[p].bytes);
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (const auto& [lo, hi] : busy) {
      if (offset + me.bytes <= lo) break;
      offset = std::max(offset, (hi + kArenaAlign - 1) / kArenaAlign * kArenaAlign);
    }
    me.offset = offset;
    total = std::max(total, offset + me.bytes);
    placed.push_back(b);
  }
  for (int s = 0; s < num_steps; ++s)
    for (size_t i = 0; i < plan.steps[s].output_slots.size(); ++i) {
      const int b = buffer_of_output[first_output[s] + static_cast<int>(i)];
      if (b >= 0 && buffers[b].def == s && !buffers[owner[b]].escapes)
        plan.steps[s].arena_offset[i] = buffers[owner[b]].offset;
    }
  plan.arena = total > 0 ? allocator_for(Device::kCPU).allocate(static_cast<size_t>(total)) : nullptr;
  plan.arena_bytes = total;
}

std::vector<Tensor> Session::run(const FeedList& feeds, const std::vector<Output>& fetches,
                                 const std::vector<Output>& targets, const FetchReady& ready) {
  last_profile_.clear();
  Plan& plan = plan_for(feeds, fetches, targets);
  last_plan_ = &plan;
  uint64_t run_number = run_counter_++;
  std::vector<TensorSpec> feed_specs;
  for (size_t i = 0; i < feeds.size(); ++i) {
    const auto& [o, t] = feeds[i];
    const TensorSpec& spec = graph_.spec(o);
    const std::string what = graph_.node(o).op == "Placeholder" ? "placeholder" : "tensor";
    if (!t.defined())
      throw_error(Code::kInvalidArgument, "feed for " + what + " '" + graph_.tensor_name(o) + "' is undefined");
    if (t.dtype() != spec.dtype || !t.shape().compatible_with(spec.shape))
      throw_error(Code::kInvalidArgument, "feed for " + what + " '" + graph_.tensor_name(o) + "': expected " +
                                              spec.to_string() + ", got " + t.spec_string());
    plan.values[plan.feed_slots[i]] = t;
    feed_specs.push_back({t.dtype(), t.shape()});
  }
  // Memory plan: use the layout when the feed shapes are those it was made
  // for (every shape in the run follows from them), else record this run.
  bool use_arena = plan_memory_ && plan.plannable && plan.arena && plan.planned_feeds == feed_specs;
  bool recording = plan_memory_ && plan.plannable && !use_arena;
  if (recording) {
    plan.arena = nullptr;
    plan.arena_bytes = 0;
    for (Plan::Step& step : plan.steps) step.arena_offset.clear();
  }
  std::vector<Buffer> buffers;
  std::vector<int> buffer_of_output;             // flattened per step and output
  std::unordered_map<const Storage*, int> live;  // storage of a live planned tensor -> buffer
  std::vector<int> slot_buffer(recording ? plan.values.size() : 0, -1);
  std::vector<char> slot_whole(recording ? plan.values.size() : 0, 0);  // the tensor is its whole buffer
  RecordingAllocator recorder(allocator_for(Device::kCPU));

  last_copies_ = 0;
  std::vector<const Tensor*> inputs;
  std::vector<Tensor> moved;  // inputs copied to the running backend's device
  // Copies made this run, by (slot, device), so consumers share one copy.
  std::map<std::pair<int, Device>, Tensor> copies;
  try {
    if (ready)
      for (size_t f : plan.fetches_fed) ready(f, on_device(plan.values[plan.fetch_slots[f]], Device::kCPU));
    for (size_t step_index = 0; step_index < plan.steps.size(); ++step_index) {
      Plan::Step& step = plan.steps[step_index];
      const Node& node = step.to_run(graph_);
      inputs.clear();
      bool same = step.inferred && step.in_specs.size() == step.input_slots.size();
      for (size_t i = 0; i < step.input_slots.size(); ++i) {
        const Tensor& t = plan.values[step.input_slots[i]];
        HUB_CHECK(t.defined(), "input " + std::to_string(i) + " of " + node.name + " not computed");
        inputs.push_back(&t);
        if (same && (step.in_specs[i].dtype != t.dtype() || step.in_specs[i].shape != t.shape())) same = false;
      }
      if (!same) {
        // Output shapes follow from input shapes and attributes (in a plan
        // with no value-dependent op), so equal feed shapes mean equal shapes.
        HUB_CHECK(!use_arena, "node '" + node.name + "': input shapes changed under a memory plan");
        step.in_specs.clear();
        for (const Tensor* t : inputs) step.in_specs.push_back({t->dtype(), t->shape()});
        InferContext ictx(node.name, node.op, step.in_specs, node.attrs);
        const OpDef& def = OpRegistry::global().find(node.op);
        step.out_specs = def.shape_fn(ictx);
        for (const TensorSpec& s : step.out_specs)
          if (!s.shape.is_fully_defined() && !def.value_dependent_shape)
            throw_error(Code::kInternal,
                        "node '" + node.name + "': output shape " + s.to_string() + " unknown at run time");
        step.placement = place(node, step.in_specs, *backend_);
        step.inferred = true;
        step.kernel_state.reset();
      }
      const Backend& backend = *step.placement.backend;
      const Device device = backend.device();
      const bool timed_on_device = profile_ && device != Device::kCPU;
      if (timed_on_device) backend.synchronize();  // the node's time, not what was queued before it
      const auto start = profile_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
      if (recording && device != Device::kCPU) recording = false;  // host plans only
      Allocator& device_alloc = allocator_for(device, &backend);   // before any copy there: its backend copies
      moved.clear();
      moved.reserve(inputs.size());
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (inputs[i]->device() == device) continue;
        auto key = std::make_pair(step.input_slots[i], device);
        auto it = copies.find(key);
        if (it == copies.end()) it = copies.emplace(key, on_device(*inputs[i], device)).first;
        moved.push_back(it->second);
        inputs[i] = &moved.back();
      }
      Allocator& alloc = recording ? static_cast<Allocator&>(recorder) : device_alloc;
      KernelContext ctx(node, inputs, step.out_specs, alloc, variables_,
                        mix_seed(mix_seed(graph_.seed(), static_cast<uint64_t>(step.node)), run_number));
      ctx.set_state_slot(&step.kernel_state);
      ctx.set_subgraph_runner(subgraphs_.get());
      if (use_arena)
        for (size_t i = 0; i < step.output_slots.size(); ++i)
          if (step.arena_offset[i] >= 0)
            ctx.outputs()[i] = Tensor(step.out_specs[i].dtype, step.out_specs[i].shape, plan.arena,
                                      static_cast<size_t>(step.arena_offset[i]));
      try {
        backend.run(*step.placement.kernel, ctx);
      } catch (const Error& e) {
        throw e.with_context("node '" + node.name + "' (" + node.op + ") on " + backend.name());
      }
      if (timed_on_device) backend.synchronize();
      if (profile_)
        last_profile_.push_back({node.name, node.op, backend.name(),
                                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()});
      for (size_t i = 0; i < step.output_slots.size(); ++i) {
        Tensor& out = ctx.outputs()[i];
        if (!out.defined()) out = ctx.output(static_cast<int>(i));  // kernel wrote nothing: allocated zero-size
        // (An output may be a view of an earlier one in the arena, e.g.
        // Reshape's: the recording run counted its uses in that buffer's
        // lifetime. A kernel that set a tensor of its own instead of the
        // placed one is merely unplanned.)
        plan.values[step.output_slots[i]] = std::move(out);
      }
      if (recording) {
        // Where each output lives: a buffer this step's kernel allocated, an
        // earlier planned buffer (alias), or elsewhere (not planned).
        const int s = static_cast<int>(step_index);
        for (size_t i = 0; i < step.output_slots.size(); ++i) {
          const int slot_id = step.output_slots[i];
          const Tensor& t = plan.values[slot_id];
          int b = -1;
          auto it = live.find(t.storage().get());
          if (it != live.end()) {
            b = it->second;  // an alias of an earlier buffer
          } else if (recorder.handed_out(t.storage().get()) && t.offset() == 0) {
            b = static_cast<int>(buffers.size());
            buffers.push_back({s, static_cast<int>(i), static_cast<int64_t>(t.storage()->bytes), s});
            live[t.storage().get()] = b;
          }
          buffer_of_output.push_back(b >= 0 && buffers[b].def == s ? b : -1);
          slot_buffer[slot_id] = b;
          slot_whole[slot_id] = b >= 0 && t.offset() == 0 && static_cast<int64_t>(t.nbytes()) == buffers[b].bytes;
          if (b >= 0) {
            const int last = plan.last_use[slot_id];
            if (last == -2) buffers[b].escapes = true;
            buffers[b].end = std::max(buffers[b].end, last);
          }
        }
        recorder.clear();
      }
      if (ready)
        for (size_t f : step.fetches_ready) ready(f, on_device(plan.values[plan.fetch_slots[f]], Device::kCPU));
      for (int s : step.release_after) {
        // Forget a storage when its last holder goes (its address may be reused).
        if (recording && slot_buffer[s] >= 0 && plan.values[s].storage().use_count() == 1)
          live.erase(plan.values[s].storage().get());
        plan.values[s] = Tensor();
        for (auto it = copies.begin(); it != copies.end();)
          it = it->first.first == s ? copies.erase(it) : std::next(it);
      }
    }
  } catch (...) {
    for (Tensor& t : plan.values) t = Tensor();
    last_profile_.clear();  // a partial profile would read as a whole run
    throw;
  }
  std::vector<Tensor> out;
  out.reserve(fetches.size());
  for (int s : plan.fetch_slots)
    out.push_back(fetch_to_host_ ? on_device(plan.values[s], Device::kCPU) : plan.values[s]);
  for (Tensor& t : plan.values) t = Tensor();
  if (recording) {
    lay_out(plan, buffers, buffer_of_output, slot_buffer, slot_whole);
    plan.planned_feeds = feed_specs;
  }
  return out;
}

std::map<std::string, std::string> Session::last_kernels() const {
  std::map<std::string, std::string> out;
  if (!last_plan_) return out;
  for (const auto& step : last_plan_->steps)
    if (step.placement.backend) out[graph_.node(step.node).name] = step.placement.backend->name();
  return out;
}

}  // namespace hub
