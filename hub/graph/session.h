// Session: runs the part of a graph needed for the requested fetches.
//
// For each distinct (feeds, fetches, targets) a plan is made once and cached:
// the needed nodes in topological order and, for every tensor, how many
// consumers it has, so an intermediate is released as soon as its last
// consumer ran. Buffers come from the session's PoolAllocator, so a
// steady-state run (same shapes as the previous one) takes no memory from the
// system. Runs are deterministic for a fixed graph seed: random kernels get
// seed mix(graph seed, node id, run number).
//
// Not thread-safe: one run at a time per Session.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hub/backend/backend.h"
#include "hub/graph/graph.h"
#include "hub/graph/variables.h"
#include "hub/tensor/allocator.h"

namespace hub {

struct SessionOptions {
  Backend backend = default_backend();
};

using FeedList = std::vector<std::pair<Output, Tensor>>;

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
  std::vector<Tensor> run(const FeedList& feeds, const std::vector<Output>& fetches,
                          const std::vector<Output>& targets = {});
  Tensor run_one(const FeedList& feeds, Output fetch) { return run(feeds, {fetch})[0]; }

  Backend backend() const { return options_.backend; }
  const PoolAllocator& allocator() const { return alloc_; }
  // Which backend ran each node in the last run (node name -> backend).
  std::map<std::string, Backend> last_kernels() const;
  // Restarts the run counter (so random ops repeat their sequence).
  void reset_run_counter(uint64_t value = 0) { run_counter_ = value; }

 private:
  struct Plan;
  Plan& plan_for(const FeedList& feeds, const std::vector<Output>& fetches,
                 const std::vector<Output>& targets);

  const Graph& graph_;
  VariableStore* variables_;
  SessionOptions options_;
  PoolAllocator alloc_;
  std::map<std::string, std::unique_ptr<Plan>> plans_;
  Plan* last_plan_ = nullptr;
  uint64_t run_counter_ = 0;
};

}  // namespace hub
