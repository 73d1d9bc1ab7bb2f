#include "hub/core/parallel.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>

namespace hub {
namespace {
int initial_threads() {
  if (const char* env = std::getenv("HUB_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n > 0) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}
struct PoolInit {
  PoolInit() { omp_set_num_threads(initial_threads()); }
} g_pool_init;
thread_local int t_serial_scopes = 0;
}  // namespace

SerialScope::SerialScope() { ++t_serial_scopes; }
SerialScope::~SerialScope() { --t_serial_scopes; }

void set_num_threads(int n) { omp_set_num_threads(std::max(1, n)); }
int num_threads() { return omp_get_max_threads(); }

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  int threads = std::min<int64_t>(num_threads(), n / grain);
  if (threads <= 1 || omp_in_parallel() || t_serial_scopes > 0) {
    fn(0, n);
    return;
  }
  std::exception_ptr error;
  std::mutex mu;
#pragma omp parallel num_threads(threads)
  {
    int t = omp_get_thread_num();
    int nt = omp_get_num_threads();
    int64_t chunk = (n + nt - 1) / nt;
    int64_t begin = std::min<int64_t>(n, t * chunk);
    int64_t end = std::min<int64_t>(n, begin + chunk);
    if (begin < end) {
      try {
        fn(begin, end);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace hub
