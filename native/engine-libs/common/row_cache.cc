#include "engine-libs/common/row_cache.h"

#include <sched.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "core/base/checked.h"

namespace spark::engines {

// A stripe's spin lock: held for one row's copy, never across a system call. A waiter that
// has spun a while yields the core instead (sched_yield returns at once when none waits).
class RowCache::Lock {
 public:
  explicit Lock(Stripe& s) : s_(s) {
    for (unsigned spins = 0; s_.held.exchange(true, std::memory_order_acquire);) {
      while (s_.held.load(std::memory_order_relaxed)) {
        // More threads than cores: the holder may have been preempted; let it run.
        if (++spins % 64 == 0) {
          sched_yield();
          continue;
        }
#if defined(__x86_64__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        asm volatile("yield");
#endif
      }
    }
  }
  ~Lock() { s_.held.store(false, std::memory_order_release); }
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

 private:
  Stripe& s_;
};

RowCache::~RowCache() {
  if (arena_ != nullptr) munmap(arena_, arena_bytes_);
}

// Linux 5.14; older kernels refuse it with EINVAL and the pages are then mapped on first touch.
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

bool RowCache::Init(uint64_t sets, uint32_t ways, uint8_t* rows) {
  if (!Layout(sets, ways, rows)) return false;
  // The arena's pages are mapped now rather than on first touch: a fault per page costs a
  // cold gather more than its reads where faults are dear (~20 µs each in a paravirtualized
  // guest, 1.5-1.8 a row while the cache fills), and the device idles while the one thread
  // that submits the reads handles them. The budget is then memory from open on. Not after a
  // Relayout: that follows a release, whose point is to give the memory back.
  if (arena_ != nullptr) (void)madvise(arena_, arena_bytes_, MADV_POPULATE_WRITE);
  return true;
}

bool RowCache::Relayout(uint64_t sets, uint32_t ways) {
  Clear();
  return Layout(sets, ways, nullptr);
}

bool RowCache::Layout(uint64_t sets, uint32_t ways, uint8_t* rows) {
  if (sets == 0 || ways == 0) {
    if (arena_ != nullptr) munmap(arena_, arena_bytes_);
    arena_ = nullptr;
    arena_bytes_ = 0;
    tags_ = nullptr;
    hands_ = data_ = nullptr;
    sketch_.Init(nullptr, 0);
    sets_ = 0;
    rows_.store(0, std::memory_order_relaxed);
    return true;
  }
  auto slots = CheckedMul(sets, ways);
  // At most 2^37 slots (37 TB of rows): the sketch indexes its blocks (32 slots each) with 32 bits.
  if (!slots || *slots > (uint64_t{1} << 37)) {
    errno = ENOMEM;
    return false;
  }
  const uint64_t sketch_bytes = FreqSketch::BytesFor(*slots);
  auto bytes = CheckedMul(*slots, rows != nullptr ? kSlotBytes - kRowBytes : kSlotBytes);
  if (bytes) bytes = CheckedAdd(*bytes, sets + sketch_bytes);
  if (!bytes || *bytes > (uint64_t{1} << 46)) {
    errno = ENOMEM;
    return false;
  }
  void* p = mmap(nullptr, *bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return false;
  if (arena_ != nullptr) munmap(arena_, arena_bytes_);
  rows_.store(0, std::memory_order_relaxed);
  arena_ = static_cast<uint8_t*>(p);
  arena_bytes_ = *bytes;
  // tags (8 bytes a slot), the sketch (whole words), the rows, the hands.
  tags_ = reinterpret_cast<uint64_t*>(arena_);
  sketch_.Init(tags_ + *slots, *slots);
  uint8_t* after_sketch = arena_ + *slots * 8 + sketch_bytes;
  data_ = rows != nullptr ? rows : after_sketch;
  hands_ = rows != nullptr ? after_sketch : data_ + *slots * kRowBytes;
  sets_ = sets;
  ways_ = ways;
  return true;
}

int RowCache::Find(uint64_t set, uint64_t tag) const {
  const uint64_t* t = tags_ + set * ways_;
  for (uint32_t w = 0; w < ways_; ++w) {
    if ((t[w] & ~kMarked) == tag) return static_cast<int>(w);
  }
  return -1;
}

bool RowCache::Lookup(uint64_t id, uint8_t* w, uint8_t* s, bool count) {
  if (sets_ == 0) return false;
  if (count) sketch_.Count(id);
  const uint64_t set = id % sets_;
  Lock lock(StripeOf(set));
  const int way = Find(set, id + 1);
  if (way < 0) return false;
  const uint64_t slot = set * ways_ + static_cast<uint64_t>(way);
  tags_[slot] |= kMarked;
  const uint8_t* row = data_ + slot * kRowBytes;
  std::memcpy(w, row, kWeightBytes);
  std::memcpy(s, row + kWeightBytes, kScaleBytes);
  return true;
}

bool RowCache::Contains(uint64_t id) {
  if (sets_ == 0) return false;
  const uint64_t set = id % sets_;
  Lock lock(StripeOf(set));
  return Find(set, id + 1) >= 0;
}

void RowCache::Insert(uint64_t id, const uint8_t* w, const uint8_t* s, bool always) {
  if (sets_ == 0) return;
  const uint64_t set = id % sets_;
  Lock lock(StripeOf(set));
  if (Find(set, id + 1) >= 0) return;
  uint64_t* t = tags_ + set * ways_;
  uint32_t way = ways_;
  for (uint32_t k = 0; k < ways_; ++k) {
    if (t[k] == 0) {
      way = k;
      break;
    }
  }
  if (way == ways_) {
    // Every way holds a row: the hand clears marks until it meets an unmarked slot (at most one
    // full turn clears them all).
    uint32_t hand = hands_[set] % ways_;
    while (t[hand] & kMarked) {
      t[hand] &= ~kMarked;
      hand = (hand + 1) % ways_;
    }
    // Admission: the newcomer must have been asked for more often than the row it replaces
    // (ties keep the row that is there: a stream of ids asked once cannot flush the set).
    if (!always && sketch_.Estimate(id) <= sketch_.Estimate((t[hand] & ~kMarked) - 1)) {
      hands_[set] = static_cast<uint8_t>(hand);
      declined_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    way = hand;
    hands_[set] = static_cast<uint8_t>((hand + 1) % ways_);
  } else {
    rows_.fetch_add(1, std::memory_order_relaxed);
  }
  uint8_t* row = data_ + (set * ways_ + way) * kRowBytes;
  std::memcpy(row, w, kWeightBytes);
  std::memcpy(row + kWeightBytes, s, kScaleBytes);
  t[way] = id + 1;
}

void RowCache::Clear() {
  if (arena_ == nullptr) return;
  // The pages come back zeroed: every tag empty. Should the kernel refuse, empty them by hand.
  if (madvise(arena_, arena_bytes_, MADV_DONTNEED) != 0)
    std::memset(tags_, 0, slots() * 8 + FreqSketch::BytesFor(slots()));
  sketch_.Reset();
  rows_.store(0, std::memory_order_relaxed);
}

}  // namespace spark::engines
