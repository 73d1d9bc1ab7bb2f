#include "hub/graph/session.h"

#include "hub/core/random.h"

namespace hub {

struct Session::Plan {
  struct Step {
    int node;
    std::vector<int> input_slots;          // slot of each input tensor
    std::vector<int> output_slots;         // slot of each output (-1: unused)
    std::vector<int> release_after;        // slots whose last use is this step
    std::vector<size_t> fetches_ready;     // fetches computed by this step
    std::vector<TensorSpec> in_specs;      // last seen input specs
    std::vector<TensorSpec> out_specs;     // inferred for in_specs
    Placement placement;
    bool inferred = false;
  };
  std::vector<Step> steps;
  std::map<Output, int> slot_of;           // tensor -> slot
  std::vector<int> feed_slots;             // per feed, its slot
  std::vector<int> fetch_slots;
  std::vector<size_t> fetches_fed;         // fetches no step computes
  std::vector<Tensor> values;              // per slot
};

Session::Session(const Graph& graph, VariableStore* variables, SessionOptions options)
    : graph_(graph), variables_(variables), backend_(options.backend ? options.backend : &default_backend()) {
  allocators_[Device::kCPU] = std::make_unique<PoolAllocator>();
}

Allocator& Session::allocator_for(Device device) {
  auto& a = allocators_[device];
  if (!a) a = backend_for_device(device).make_allocator();
  return *a;
}

Tensor Session::on_device(const Tensor& t, Device device) {
  if (t.device() == device) return t;
  const Backend& copier = backend_for_device(device == Device::kCPU ? t.device() : device);
  Tensor out(t.dtype(), t.shape(), allocator_for(device).allocate(t.nbytes()));
  copier.copy(t, out);
  ++last_copies_;
  return out;
}

Session::~Session() = default;

Session::Plan& Session::plan_for(const FeedList& feeds, const std::vector<Output>& fetches,
                                 const std::vector<Output>& targets) {
  std::string key;
  auto add_key = [&](char tag, Output o) {
    key += tag + std::to_string(o.node) + ":" + std::to_string(o.index) + ",";
  };
  for (auto& [o, t] : feeds) add_key('f', o);
  for (Output o : fetches) add_key('o', o);
  for (Output o : targets) add_key('t', o);
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
  std::vector<int> uses;
  for (int id = 0; id < n; ++id) {
    if (!needed[id] || fed_node[id]) continue;
    const Node& node = graph_.node(id);
    if (node.op == "Placeholder")
      throw_error(Code::kInvalidArgument, "placeholder '" + node.name + "' (" +
                                              node.outputs[0].to_string() + ") must be fed");
    Plan::Step step;
    step.node = id;
    for (const Output& in : node.inputs) {
      if (fed_node[in.node] && !plan->slot_of.count(in))
        throw_error(Code::kInvalidArgument, "node '" + node.name + "' needs output " +
                                                std::to_string(in.index) + " of '" +
                                                graph_.node(in).name + "', which is fed only in part");
      step.input_slots.push_back(slot(in));
    }
    for (int i = 0; i < static_cast<int>(node.outputs.size()); ++i) step.output_slots.push_back(slot({id, i}));
    plan->steps.push_back(std::move(step));
  }
  for (Output o : fetches) plan->fetch_slots.push_back(slot(o));
  std::map<int, int> producer;  // slot -> step computing it
  for (int s = 0; s < static_cast<int>(plan->steps.size()); ++s)
    for (int out : plan->steps[s].output_slots) producer[out] = s;
  for (size_t i = 0; i < fetches.size(); ++i) {
    auto p = producer.find(plan->fetch_slots[i]);
    if (p == producer.end()) plan->fetches_fed.push_back(i);
    else plan->steps[p->second].fetches_ready.push_back(i);
  }
  // Last use of each slot: fetched slots are never released early.
  std::vector<int> last_use(plan->slot_of.size(), -1);
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

std::vector<Tensor> Session::run(const FeedList& feeds, const std::vector<Output>& fetches,
                                 const std::vector<Output>& targets, const FetchReady& ready) {
  Plan& plan = plan_for(feeds, fetches, targets);
  last_plan_ = &plan;
  uint64_t run_number = run_counter_++;
  for (size_t i = 0; i < feeds.size(); ++i) {
    const auto& [o, t] = feeds[i];
    const TensorSpec& spec = graph_.spec(o);
    const std::string what = graph_.node(o).op == "Placeholder" ? "placeholder" : "tensor";
    if (!t.defined())
      throw_error(Code::kInvalidArgument, "feed for " + what + " '" + graph_.tensor_name(o) + "' is undefined");
    if (t.dtype() != spec.dtype || !t.shape().compatible_with(spec.shape))
      throw_error(Code::kInvalidArgument, "feed for " + what + " '" + graph_.tensor_name(o) +
                                              "': expected " + spec.to_string() + ", got " +
                                              t.spec_string());
    plan.values[plan.feed_slots[i]] = t;
  }
  last_copies_ = 0;
  std::vector<const Tensor*> inputs;
  std::vector<Tensor> moved;  // inputs copied to the running backend's device
  // Copies made this run, by (slot, device), so consumers share one copy.
  std::map<std::pair<int, Device>, Tensor> copies;
  try {
    if (ready)
      for (size_t f : plan.fetches_fed) ready(f, on_device(plan.values[plan.fetch_slots[f]], Device::kCPU));
    for (Plan::Step& step : plan.steps) {
      const Node& node = graph_.node(step.node);
      inputs.clear();
      bool same = step.inferred && step.in_specs.size() == step.input_slots.size();
      for (size_t i = 0; i < step.input_slots.size(); ++i) {
        const Tensor& t = plan.values[step.input_slots[i]];
        HUB_CHECK(t.defined(), "input " + std::to_string(i) + " of " + node.name + " not computed");
        inputs.push_back(&t);
        if (same && (step.in_specs[i].dtype != t.dtype() || step.in_specs[i].shape != t.shape()))
          same = false;
      }
      if (!same) {
        step.in_specs.clear();
        for (const Tensor* t : inputs) step.in_specs.push_back({t->dtype(), t->shape()});
        InferContext ictx(node.name, node.op, step.in_specs, node.attrs);
        step.out_specs = OpRegistry::global().find(node.op).shape_fn(ictx);
        for (const TensorSpec& s : step.out_specs)
          if (!s.shape.is_fully_defined())
            throw_error(Code::kInternal, "node '" + node.name + "': output shape " + s.to_string() +
                                             " unknown at run time");
        step.placement = place(node, step.in_specs, *backend_);
        step.inferred = true;
      }
      const Backend& backend = *step.placement.backend;
      const Device device = backend.device();
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
      KernelContext ctx(node, inputs, step.out_specs, allocator_for(device), variables_,
                        mix_seed(mix_seed(graph_.seed(), static_cast<uint64_t>(step.node)), run_number));
      try {
        backend.run(*step.placement.kernel, ctx);
      } catch (const Error& e) {
        throw e.with_context("node '" + node.name + "' (" + node.op + ") on " + backend.name());
      }
      for (size_t i = 0; i < step.output_slots.size(); ++i) {
        Tensor& out = ctx.outputs()[i];
        if (!out.defined()) out = ctx.output(static_cast<int>(i));  // kernel wrote nothing: allocated zero-size
        plan.values[step.output_slots[i]] = std::move(out);
      }
      if (ready)
        for (size_t f : step.fetches_ready) ready(f, on_device(plan.values[plan.fetch_slots[f]], Device::kCPU));
      for (int s : step.release_after) {
        plan.values[s] = Tensor();
        for (auto it = copies.begin(); it != copies.end();)
          it = it->first.first == s ? copies.erase(it) : std::next(it);
      }
    }
  } catch (...) {
    for (Tensor& t : plan.values) t = Tensor();
    throw;
  }
  std::vector<Tensor> out;
  out.reserve(fetches.size());
  for (int s : plan.fetch_slots) out.push_back(on_device(plan.values[s], Device::kCPU));
  for (Tensor& t : plan.values) t = Tensor();
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
