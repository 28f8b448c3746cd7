// The Mia reader's row cache, one per store: set-associative over whole 264-byte rows.
//   ways  = DSV41_CACHE_WAYS clamped to 1..16 (default 4), read at every open
//   sets  = budget / (272 * ways + 1): a slot is an 8-byte tag and the row, plus one
//           round-robin victim byte per set
//   set   = id mod sets; a miss replaces the set's next victim in turn
//   locks = 256 stripes, set mod 256
// A budget smaller than one set means no cache.
#pragma once
#include <cstdint>
#include <mutex>

namespace mia {

constexpr uint64_t kWeightBytes = 256;
constexpr uint64_t kScaleBytes = 8;
constexpr uint64_t kRowBytes = kWeightBytes + kScaleBytes;
constexpr uint64_t kSlotBytes = 8 + kRowBytes;

unsigned WaysFromEnv();

class RowCache {
 public:
  RowCache(uint64_t budget, unsigned ways);
  ~RowCache();
  RowCache(const RowCache&) = delete;
  RowCache& operator=(const RowCache&) = delete;

  bool enabled() const { return sets_ > 0; }
  unsigned ways() const { return ways_; }
  uint64_t slots() const { return sets_ * ways_; }
  uint64_t bytes() const { return sets_ * (kSlotBytes * ways_ + 1); }

  /** Copies row `id` (weight then scale) into row264 when cached. */
  bool Get(uint64_t id, uint8_t* row264);
  void Put(uint64_t id, const uint8_t* row264);

 private:
  uint8_t* Set(uint64_t set) const { return mem_ + set * (kSlotBytes * ways_ + 1); }
  std::mutex& Stripe(uint64_t set) { return stripes_[set % 256]; }

  unsigned ways_;
  uint64_t sets_ = 0;
  uint8_t* mem_ = nullptr;
  std::mutex stripes_[256];
};

}  // namespace mia
