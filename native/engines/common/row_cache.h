// A set-associative cache of whole Engram rows (256 weight bytes + 8 scale bytes) under a byte
// budget, safe from many threads at once. Sizing follows the Mia stack's: `ways` slots a set,
// 272 bytes a slot (the row and an 8-byte tag) and 1 byte a set (the clock hand), so
// sets = budget / (272 * ways + 1) and id's set is id mod sets. Eviction is CLOCK within the
// set (a hit marks the slot; the hand passes over marked slots once), which keeps rows that
// are used again where round-robin ways would evict them in turn.
//
// The memory is one anonymous mapping reserved at Init and touched only as slots fill, so an
// unused cache costs address space, not memory; Clear() gives every page back to the kernel.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/base/noncopyable.h"

namespace spark::engines {

inline constexpr uint64_t kWeightBytes = 256;
inline constexpr uint64_t kScaleBytes = 8;
inline constexpr uint64_t kRowBytes = kWeightBytes + kScaleBytes;
inline constexpr uint64_t kSlotBytes = kRowBytes + 8;

class RowCache : NonCopyable {
 public:
  RowCache() = default;
  ~RowCache();

  // The number of sets a budget buys at `ways` ways (0: no cache).
  static uint64_t SetsFor(uint64_t budget, uint32_t ways) { return budget / (kSlotBytes * ways + 1); }
  // Reserves sets * ways slots. sets == 0 leaves the cache off. False (errno ENOMEM) when the
  // mapping cannot be made. `rows`, when given, is memory of the caller's for the slots' row
  // bytes (slots * kRowBytes, outliving the cache: a DRM buffer, mia/drm_cache.h); the tags
  // and hands are then the only anonymous memory.
  bool Init(uint64_t sets, uint32_t ways, uint8_t* rows = nullptr);

  bool enabled() const { return sets_ != 0; }
  // On a hit copies the row to w (256 bytes) and s (8 bytes) and returns true.
  bool Lookup(uint64_t id, uint8_t* w, uint8_t* s);
  bool Contains(uint64_t id);
  // Stores the row (no effect when it is already there).
  void Insert(uint64_t id, const uint8_t* w, const uint8_t* s);
  // At most `rows` rows from now on (rows held beyond it stay until evicted).
  void SetLimit(uint64_t rows) { limit_.store(rows, std::memory_order_relaxed); }
  // Empties the cache and returns its pages. No other call may run at the same time.
  void Clear();

  uint64_t rows() const { return rows_.load(std::memory_order_relaxed); }
  uint64_t sets() const { return sets_; }
  uint32_t ways() const { return ways_; }
  uint64_t slots() const { return sets_ * ways_; }
  uint64_t footprint() const { return slots() * kSlotBytes + sets_; }  // bytes the budget pays for

 private:
  static constexpr uint64_t kMarked = uint64_t{1} << 63;  // tag bit: used since the hand passed
  static constexpr size_t kStripes = 256;
  struct Stripe {
    std::atomic<bool> held{false};
  };
  class Lock;
  Stripe& StripeOf(uint64_t set) { return stripes_[set % kStripes]; }
  // Index of id's slot in its set, or -1. Caller holds the set's stripe.
  int Find(uint64_t set, uint64_t tag) const;

  uint64_t sets_ = 0;
  uint32_t ways_ = 0;
  uint8_t* arena_ = nullptr;
  size_t arena_bytes_ = 0;
  uint64_t* tags_ = nullptr;  // slots(): id + 1 (0 = empty), kMarked
  uint8_t* hands_ = nullptr;  // sets()
  uint8_t* data_ = nullptr;   // slots() * kRowBytes
  std::atomic<uint64_t> rows_{0};
  std::atomic<uint64_t> limit_{UINT64_MAX};
  Stripe stripes_[kStripes];
};

}  // namespace spark::engines
