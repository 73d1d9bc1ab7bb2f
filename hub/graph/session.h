// Session: runs the part of a graph needed for the requested fetches.
//
// Placement: each node runs on the backend place() picks (hub/backend): the
// session's preferred backend if it has a kernel for the node, else that
// backend's fallback. Outputs are allocated on the running backend's device;
// an input living on another device is copied across first (once per run and
// device), and fetched tensors are returned on the host (or where they were
// computed: SessionOptions::fetch_to_host).
//
// For each distinct (feeds, fetches, targets) a plan is made once and cached:
// the needed nodes in topological order and, for every tensor, how many
// consumers it has, so an intermediate is released as soon as its last
// consumer ran. Buffers come from the session's PoolAllocator, so a
// steady-state run (same shapes as the previous one) takes no memory from the
// system (one pool per device). Runs are deterministic for a fixed graph seed: random kernels get
// seed mix(graph seed, node id, run number).
//
// With SessionOptions::plan_memory, each set of feed shapes has its own plan
// (the kShapePlans most recently used are kept), so alternating batch sizes
// keeps each one's kernel states (oneDNN primitives, reordered weights) and
// arena. The first run of a plan records where each output lives: in a buffer its kernel
// allocated (planned), in an earlier tensor's buffer (an alias: Reshape,
// Identity), or elsewhere (constants, variables, feeds: left alone). Buffers
// that are not fetched then get fixed offsets in one arena, each buffer's
// lifetime running from the step that makes it to the last use of any tensor
// in it, so buffers with disjoint lifetimes share bytes (greedy by size); an
// output whose op allows it (OpDef::in_place) takes over the buffer of an
// input whose last use is that step. Later runs of the plan hand each kernel its output already placed in the arena: no
// allocation at all beyond what kernels take for scratch (from the pool) and the fetched outputs. Only host (CPU) plans
// are laid out; a plan with another device, or with an op whose output shape follows from its input values
// (OpDef::value_dependent_shape: NonZero, Unique, NonMaxSuppression), runs as without the option.
//
// Control-flow nodes (If, Loop: hub/ops/control_flow.h) run their subgraphs
// through the session: each subgraph gets a session of its own (same backend,
// variables and fusion; no memory plan), made on the first call and kept.
//
// Kernels may keep per-node state between runs (KernelContext::state()); the
// session clears a node's state when its input shapes change.
//
// Not thread-safe: one run at a time per Session.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hub/backend/backend.h"
#include "hub/graph/graph.h"
#include "hub/ops/variables.h"
#include "hub/tensor/allocator.h"

namespace hub {

struct SessionOptions {
  // The preferred backend; default_backend() ($HUB_BACKEND, else onednn).
  const Backend* backend = nullptr;
  // Static memory plan (see below): intermediates of host backends live in
  // one arena per plan, laid out once per set of feed shapes.
  bool plan_memory = false;
  // Times every node of each run (last_profile()). Costs two clock reads per
  // node, and on a device a wait for its stream before and after each node;
  // for finding where a run's time goes, not for production runs.
  bool profile = false;
  // Fetched tensors come back on the host (copied, waiting for the device).
  // When false, each stays on the device that computed it: a training loop
  // on a GPU hands the gradients to the optimizer there (hub::to_host reads
  // one on the host). The `ready` callback of run() always gets host values.
  bool fetch_to_host = true;
  // Exact fusions of the nodes a plan runs on a host backend (training-mode
  // batch norm with the Relu / Relu6 after it, and their gradients: fewer
  // passes over memory, same results within float rounding; step_fusion.h).
  // The graph is not changed. Off when false or when $HUB_GRAPH_OPT is "0"
  // (for debugging, as for modules' inference optimiser).
  bool fuse = true;
};

// One node of a profiled run (SessionOptions::profile): wall time of its
// kernel call, including input copies across devices, excluding shape
// inference and planning; on a device, until its work there is done.
struct NodeTime {
  std::string node, op, backend;
  double seconds = 0;
};

using FeedList = std::vector<std::pair<Output, Tensor>>;
// Told by Session::run that fetch `index` (its position in the fetch list) is
// computed, with its value on the host.
using FetchReady = std::function<void(size_t index, const Tensor& value)>;

class Session {
 public:
  // `variables` may be null for graphs without variables. Both must outlive
  // the session; the graph may grow (new nodes are planned on demand).
  Session(const Graph& graph, VariableStore* variables, SessionOptions options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Feeds replace the values of the given tensors (usually placeholders).
  // Throws InvalidArgument naming the placeholder when a fed tensor's dtype or
  // shape does not match, or a needed placeholder is not fed.
  //
  // `ready`, when given, is called once per fetch as soon as the node
  // computing it has run, while the nodes after it still wait (a fed fetch:
  // before the first node runs), in the order the nodes run: the order of
  // their ids. Data parallelism uses it to start reducing a gradient while
  // the backward pass goes on. The value stays valid after the call (it is
  // also returned); an exception from `ready` ends the run and propagates.
  std::vector<Tensor> run(const FeedList& feeds, const std::vector<Output>& fetches,
                          const std::vector<Output>& targets = {}, const FetchReady& ready = {});
  Tensor run_one(const FeedList& feeds, Output fetch) { return run(feeds, {fetch})[0]; }

  const Backend& backend() const { return *backend_; }
  // The host allocator (intermediates of host backends come from it).
  const Allocator& allocator() const { return *allocators_.at(Device::kCPU); }
  // Which backend ran each node in the last run (node name -> backend name).
  std::map<std::string, std::string> last_kernels() const;
  // With SessionOptions::profile, the nodes the last run ran, in the order
  // they ran, with their times; empty otherwise (and after a run that threw).
  const std::vector<NodeTime>& last_profile() const { return last_profile_; }
  // Tensors copied between devices in the last run.
  int64_t last_copies() const { return last_copies_; }
  // Bytes of the memory-plan arena used by the last run (0 without one).
  int64_t last_arena_bytes() const;
  // Plans held: one per feeds/fetches/targets, and with plan_memory one per
  // set of feed shapes too (at most kShapePlans of them, most recent kept).
  size_t num_plans() const;
  static constexpr size_t kShapePlans = 4;
  // Restarts the run counter (so random ops repeat their sequence).
  void reset_run_counter(uint64_t value = 0) { run_counter_ = value; }

 private:
  struct Plan;
  Plan& plan_for(const FeedList& feeds, const std::vector<Output>& fetches, const std::vector<Output>& targets);

  struct Buffer;
  // The memory plan's layout from a recording run (session.cc).
  void lay_out(Plan& plan, std::vector<Buffer>& buffers, const std::vector<int>& buffer_of_output,
               const std::vector<int>& slot_buffer, const std::vector<char>& slot_whole);
  // The allocator of `device`, made on first use by `owner` (the backend
  // about to run a kernel there) or else by backend_of(); that backend then
  // makes the session's copies to and from the device.
  Allocator& allocator_for(Device device, const Backend* owner = nullptr);
  // The backend that made `device`'s allocator, else backend_for_device().
  const Backend& backend_of(Device device) const;
  // `t` on `device`: t itself, or a copy made by the backend owning the
  // non-host side (counted in last_copies()).
  Tensor on_device(const Tensor& t, Device device);

  // Runs the subgraphs of control-flow nodes (If, Loop): one session per
  // subgraph, made on first use (session.cc).
  class Subgraphs;
  std::unique_ptr<Subgraphs> subgraphs_;

  const Graph& graph_;
  VariableStore* variables_;
  const Backend* backend_;
  bool plan_memory_;
  bool profile_;
  bool fetch_to_host_;
  bool fuse_;
  std::vector<NodeTime> last_profile_;
  std::map<Device, std::unique_ptr<Allocator>> allocators_;
  std::map<Device, const Backend*> device_backends_;  // who made each allocator
  int64_t last_copies_ = 0;
  std::map<std::string, std::unique_ptr<Plan>> plans_;
  std::map<std::string, std::vector<std::string>> shape_plans_;  // plan_memory: most recent first
  Plan* last_plan_ = nullptr;
  uint64_t run_counter_ = 0;
};

}  // namespace hub
