// The one intra-op thread pool.
//
// oneDNN (Debian's build) and Eigen's matrix products both run on OpenMP, so
// hub uses the same OpenMP pool for its own kernels instead of a second pool
// that would oversubscribe the cores. Its size is set_num_threads(n), or
// $HUB_NUM_THREADS, or the number of cores.
#pragma once

#include <cstdint>
#include <functional>

namespace hub {

void set_num_threads(int n);
int num_threads();

// Calls fn(begin, end) on disjoint chunks covering [0, n), in parallel when
// n >= 2 * grain. fn must be safe to call concurrently on disjoint ranges.
// Exceptions thrown by fn are rethrown (the first one) on the calling thread.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& fn);

// While one is alive, parallel_for called on this thread runs fn(0, n) inline:
// for a background thread that must keep to one core while the pool works
// for another (retrain decodes the next batch while the module runs).
class SerialScope {
 public:
  SerialScope();
  ~SerialScope();
  SerialScope(const SerialScope&) = delete;
  SerialScope& operator=(const SerialScope&) = delete;
};

}  // namespace hub
