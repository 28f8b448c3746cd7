#include "core/pack/pack_rate.h"

#include <thread>

namespace spark {

void RateLimiter::Acquire(uint64_t bytes) {
  if (rate_ == 0 || bytes == 0) return;
  auto cost = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(static_cast<double>(bytes) / static_cast<double>(rate_)));
  Clock::time_point start;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto now = Clock::now();
    start = next_ > now ? next_ : now;
    next_ = start + cost;
  }
  std::this_thread::sleep_until(start);
}

}  // namespace spark
