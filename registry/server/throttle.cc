#include "registry/server/throttle.h"

#include <algorithm>
#include <cmath>

#include "hub/core/logging.h"

namespace hub::registry {

FailureThrottle::FailureThrottle(int burst, int refill_ms, size_t max_clients)
    : burst_(std::max(1, burst)), refill_ms_(std::max(1, refill_ms)), max_clients_(max_clients) {}

void FailureThrottle::refill(Bucket& b, Clock::time_point now) const {
  double ms = std::chrono::duration<double, std::milli>(now - b.updated).count();
  b.left = std::min(burst_, b.left + ms / refill_ms_);
  b.updated = now;
}

int FailureThrottle::retry_after_s(const std::string& client) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = buckets_.find(client);
  if (it == buckets_.end()) return 0;
  refill(it->second, Clock::now());
  if (it->second.left >= 1.0) return 0;
  double wait_ms = (1.0 - it->second.left) * refill_ms_;
  return std::max(1, static_cast<int>(std::ceil(wait_ms / 1000.0)));
}

void FailureThrottle::record_failure(const std::string& client) {
  std::lock_guard<std::mutex> lock(mu_);
  auto now = Clock::now();
  auto it = buckets_.find(client);
  if (it == buckets_.end()) {
    if (buckets_.size() >= max_clients_) {
      for (auto b = buckets_.begin(); b != buckets_.end();) {
        refill(b->second, now);
        b = b->second.left >= burst_ ? buckets_.erase(b) : std::next(b);
      }
      if (buckets_.size() >= max_clients_) {
        HUB_LOG(Warning) << "registry: failed-authentication throttle is tracking " << buckets_.size()
                         << " clients; not tracking " << client;
        return;
      }
    }
    it = buckets_.emplace(client, Bucket{burst_, now}).first;
  }
  refill(it->second, now);
  it->second.left = std::max(0.0, it->second.left - 1.0);
}

}  // namespace hub::registry
