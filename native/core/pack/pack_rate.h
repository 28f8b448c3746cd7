// A bandwidth cap shared by a pack's copy workers (`spark pack --rate-limit MB/s`): four nodes
// packing from one NAS at once must leave it room to serve. Each worker asks for a chunk's
// bytes before reading it; the limiter hands out start times spaced so the average never
// exceeds the rate. No burst credit: an idle stretch does not buy a later burst.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>

namespace spark {

class RateLimiter {
 public:
  // bytes_per_second 0: unlimited (Acquire returns at once).
  explicit RateLimiter(uint64_t bytes_per_second = 0) : rate_(bytes_per_second) {}
  RateLimiter(const RateLimiter&) = delete;
  RateLimiter& operator=(const RateLimiter&) = delete;

  bool limited() const { return rate_ > 0; }
  // Blocks until `bytes` more may be moved.
  void Acquire(uint64_t bytes);

 private:
  using Clock = std::chrono::steady_clock;
  const uint64_t rate_;
  std::mutex mu_;
  Clock::time_point next_{};
};

}  // namespace spark
