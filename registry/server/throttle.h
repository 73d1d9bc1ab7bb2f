// FailureThrottle: a per-client budget of failures (a token bucket per client
// key), used to slow down guessing of publish tokens.
//
// Each client starts with `burst` failures to spend and regains one every
// `refill_ms`, up to `burst`. While a client has less than one failure left,
// retry_after_s() says how long it must wait, and the caller refuses it
// (429 with Retry-After) before looking at what it sent.
//
// Memory: at most `max_clients` keys are tracked (~100 bytes each); when full,
// clients whose budget is whole again are forgotten, and if none is, a new
// client is not tracked (it is let through) and a warning is logged, so an
// attacker with very many addresses can only weaken throttling, not exhaust
// memory. Thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

namespace hub::registry {

class FailureThrottle {
 public:
  FailureThrottle(int burst, int refill_ms, size_t max_clients = 100000);

  // Seconds (>= 1) the client must wait before its next attempt, or 0 when it may try now.
  int retry_after_s(const std::string& client);
  // Spends one failure of the client's budget.
  void record_failure(const std::string& client);

 private:
  using Clock = std::chrono::steady_clock;
  struct Bucket {
    double left;  // failures left
    Clock::time_point updated;
  };
  // Brings the bucket up to date with the time passed.
  void refill(Bucket& b, Clock::time_point now) const;

  const double burst_;
  const int refill_ms_;
  const size_t max_clients_;
  std::mutex mu_;
  std::unordered_map<std::string, Bucket> buckets_;
};

}  // namespace hub::registry
