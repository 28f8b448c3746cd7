// A set-associative cache of whole Engram rows (256 weight bytes + 8 scale bytes) under a byte
// budget, safe from many threads at once. Sizing follows the Mia stack's, with the frequency
// sketch paid out of the same budget: `ways` slots a set, 272 bytes a slot (the row and an
// 8-byte tag) and 2 bytes of sketch a slot, 1 byte a set (the clock hand), so
// sets = (budget - 64) / (274 * ways + 1) and id's set is id mod sets; footprint() (slots *
// 272 + sets + the sketch's bytes) never exceeds the budget.
//
// Eviction is CLOCK within the set (a hit marks the slot; the hand passes over marked slots
// once), which keeps rows that are used again where round-robin ways would evict them in turn.
// Admission is frequency-aware (freq_sketch.h): every lookup counts its id, and a row read
// into a full set replaces CLOCK's victim only when its id was asked for more often lately
// than the victim's; otherwise it is not kept. Rows read ahead (prefetch) are kept regardless.
//
// The memory is one anonymous mapping, its pages mapped at Init (where the kernel can) so that
// no gather pays a page fault per slot it fills; Clear() gives every page back to the kernel,
// and after a Clear or Relayout the pages are mapped again only as slots fill.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/base/noncopyable.h"
#include "engine-libs/common/freq_sketch.h"

namespace spark::engines {

inline constexpr uint64_t kWeightBytes = 256;
inline constexpr uint64_t kScaleBytes = 8;
inline constexpr uint64_t kRowBytes = kWeightBytes + kScaleBytes;
inline constexpr uint64_t kSlotBytes = kRowBytes + 8;

class RowCache : NonCopyable {
 public:
  RowCache() = default;
  ~RowCache();

  // The number of sets a budget buys at `ways` ways (0: no cache). The sketch takes at most
  // 2 bytes a slot plus 64 (it is whole 64-byte blocks).
  static uint64_t SetsFor(uint64_t budget, uint32_t ways) {
    return budget <= 64 ? 0 : (budget - 64) / ((kSlotBytes + 2) * ways + 1);
  }
  // Reserves sets * ways slots. sets == 0 leaves the cache off. False (errno ENOMEM) when the
  // mapping cannot be made. `rows`, when given, is memory of the caller's for the slots' row
  // bytes (slots * kRowBytes, outliving the cache: a DRM buffer, mia/drm_cache.h); the tags,
  // the sketch and the hands are then the only anonymous memory.
  bool Init(uint64_t sets, uint32_t ways, uint8_t* rows = nullptr);
  // Empties the cache and lays it out anew for `sets` sets of `ways` (the row bytes in
  // anonymous memory). No other call may run at the same time. False (errno ENOMEM): the
  // mapping cannot be made; the cache is then empty in its old layout.
  bool Relayout(uint64_t sets, uint32_t ways);

  bool enabled() const { return sets_ != 0; }
  // On a hit copies the row to w (256 bytes) and s (8 bytes) and returns true. `count`: the
  // ask counts towards id's frequency (false when the same ask was looked up already).
  bool Lookup(uint64_t id, uint8_t* w, uint8_t* s, bool count = true);
  bool Contains(uint64_t id);
  // Stores the row (no effect when it is already there). Into a full set only when id was
  // asked for more often than the victim's id, or when `always` (a row read ahead).
  void Insert(uint64_t id, const uint8_t* w, const uint8_t* s, bool always = false);
  // Empties the cache and returns its pages. No other call may run at the same time.
  void Clear();

  uint64_t rows() const { return rows_.load(std::memory_order_relaxed); }
  uint64_t sets() const { return sets_; }
  uint32_t ways() const { return ways_; }
  uint64_t slots() const { return sets_ * ways_; }
  uint64_t footprint() const { return arena_bytes_; }  // bytes the budget pays for
  // Rows not kept because their id was asked for less often than the victim's.
  uint64_t declined() const { return declined_.load(std::memory_order_relaxed); }

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
  // Maps the arena for the layout and lets go of the old one (kept when the map fails).
  bool Layout(uint64_t sets, uint32_t ways, uint8_t* rows);

  uint64_t sets_ = 0;
  uint32_t ways_ = 0;
  uint8_t* arena_ = nullptr;
  size_t arena_bytes_ = 0;
  uint64_t* tags_ = nullptr;  // slots(): id + 1 (0 = empty), kMarked
  uint8_t* hands_ = nullptr;  // sets()
  uint8_t* data_ = nullptr;   // slots() * kRowBytes
  FreqSketch sketch_;         // in the arena after the tags
  std::atomic<uint64_t> rows_{0};
  std::atomic<uint64_t> declined_{0};
  Stripe stripes_[kStripes];
};

}  // namespace spark::engines
