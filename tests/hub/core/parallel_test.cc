// hub/core/parallel.h: parallel_for covers [0, n) once in disjoint chunks,
// rethrows, and runs inline on a thread inside a SerialScope.
#include "hub/core/parallel.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

using namespace hub;

namespace {
// The chunks parallel_for hands out for n, with the threads that ran them.
std::vector<std::pair<int64_t, int64_t>> chunks(int64_t n, std::vector<std::thread::id>* threads = nullptr) {
  std::vector<std::pair<int64_t, int64_t>> out;
  std::mutex mu;
  parallel_for(n, 1, [&](int64_t b, int64_t e) {
    std::lock_guard<std::mutex> lock(mu);
    out.push_back({b, e});
    if (threads) threads->push_back(std::this_thread::get_id());
  });
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace

TEST_CASE("parallel_for: disjoint chunks covering [0, n), split over the pool") {
  const int saved = num_threads();
  set_num_threads(2);
  auto c = chunks(1000);
  REQUIRE(c.size() == 2);
  CHECK(c[0] == std::pair<int64_t, int64_t>{0, 500});
  CHECK(c[1] == std::pair<int64_t, int64_t>{500, 1000});
  CHECK(chunks(1) == std::vector<std::pair<int64_t, int64_t>>{{0, 1}});
  CHECK(chunks(0).empty());
  CHECK_THROWS_AS(parallel_for(100, 1,
                               [](int64_t b, int64_t) {
                                 if (b > 0) throw std::runtime_error("second chunk");
                               }),
                  std::runtime_error);
  set_num_threads(saved);
}

TEST_CASE("parallel_for: inline on the calling thread inside a SerialScope, nested scopes included") {
  const int saved = num_threads();
  set_num_threads(2);
  std::vector<std::thread::id> threads;
  {
    SerialScope outer;
    {
      SerialScope inner;
      CHECK(chunks(1000, &threads) == std::vector<std::pair<int64_t, int64_t>>{{0, 1000}});
    }
    CHECK(chunks(1000, &threads) == std::vector<std::pair<int64_t, int64_t>>{{0, 1000}});
  }
  CHECK(threads == std::vector<std::thread::id>(2, std::this_thread::get_id()));
  CHECK(chunks(1000).size() == 2);  // the scope ended
  // A scope is per thread: another thread's parallel_for still splits.
  SerialScope here;
  std::vector<std::pair<int64_t, int64_t>> other;
  std::thread t([&] {
    set_num_threads(2);
    other = chunks(1000);
  });
  t.join();
  CHECK(other.size() == 2);
  set_num_threads(saved);
}
