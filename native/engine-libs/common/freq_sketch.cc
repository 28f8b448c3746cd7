#include "engine-libs/common/freq_sketch.h"

#include <algorithm>

namespace spark::engines {

namespace {
constexpr uint64_t kNibble = 0xF;
constexpr uint64_t kHalfMask = 0x7777777777777777ull;  // each nibble's low 3 bits after a shift
constexpr uint64_t kAgeWords = 64;                     // words halved per Count once due

// splitmix64's finaliser: the block and the four counters come from different bits of it.
uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::atomic_ref<uint64_t> At(uint64_t* w) { return std::atomic_ref<uint64_t>(*w); }
}  // namespace

void FreqSketch::Init(uint64_t* words, uint64_t slots) {
  words_ = words;
  blocks_ = BlocksFor(slots);
  period_ = std::max<uint64_t>(10 * slots, 16);
  counted_.store(0, std::memory_order_relaxed);
  aging_.store(UINT64_MAX, std::memory_order_relaxed);
}

void FreqSketch::Cells(uint64_t id, Cell out[kDepth]) const {
  const uint64_t h = Mix(id);
  // Multiply-high of the low 32 bits maps them onto [0, blocks) without a division (the cache
  // has at most 2^37 slots: 2^32 blocks).
  const uint64_t block = ((h & 0xFFFFFFFFull) * blocks_) >> 32;
  for (unsigned r = 0; r < kDepth; ++r) {
    // Counter r: one of the block's words 2r and 2r+1, one of its 16 nibbles.
    const uint64_t word = block * kBlockWords + 2 * r + ((h >> (32 + r)) & 1);
    out[r] = {static_cast<size_t>(word), static_cast<unsigned>((h >> (40 + 4 * r)) & 15) * 4};
  }
}

unsigned FreqSketch::Estimate(uint64_t id) const {
  if (words_ == nullptr) return 0;
  Cell c[kDepth];
  Cells(id, c);
  unsigned least = 15;
  for (const Cell& cell : c) {
    const uint64_t w = At(words_ + cell.word).load(std::memory_order_relaxed);
    least = std::min(least, static_cast<unsigned>((w >> cell.shift) & kNibble));
  }
  return least;
}

void FreqSketch::Count(uint64_t id) {
  if (words_ == nullptr) return;
  Cell c[kDepth];
  Cells(id, c);
  unsigned value[kDepth], least = 15;
  for (unsigned r = 0; r < kDepth; ++r) {
    value[r] = static_cast<unsigned>((At(words_ + c[r].word).load(std::memory_order_relaxed) >> c[r].shift) & kNibble);
    least = std::min(least, value[r]);
  }
  // Conservative update: only the counters at the minimum go up, so an id's estimate grows
  // with its own asks and not with those of ids that share its other counters.
  for (unsigned r = 0; least < 15 && r < kDepth; ++r) {
    if (value[r] != least) continue;
    auto word = At(words_ + c[r].word);
    uint64_t w = word.load(std::memory_order_relaxed);
    while (((w >> c[r].shift) & kNibble) < 15 &&
           !word.compare_exchange_weak(w, w + (uint64_t{1} << c[r].shift), std::memory_order_relaxed)) {
    }
  }
  if (counted_.fetch_add(1, std::memory_order_relaxed) + 1 == period_) {
    counted_.store(0, std::memory_order_relaxed);
    aging_.store(0, std::memory_order_relaxed);
  }
  AgeSome();
}

void FreqSketch::AgeSome() {
  const uint64_t total = blocks_ * kBlockWords;
  if (aging_.load(std::memory_order_relaxed) >= total) return;
  const uint64_t from = aging_.fetch_add(kAgeWords, std::memory_order_relaxed);
  if (from >= total) return;
  for (uint64_t i = from; i < std::min(total, from + kAgeWords); ++i) {
    auto word = At(words_ + i);
    uint64_t w = word.load(std::memory_order_relaxed);
    while (!word.compare_exchange_weak(w, (w >> 1) & kHalfMask, std::memory_order_relaxed)) {
    }
  }
}

void FreqSketch::Reset() {
  counted_.store(0, std::memory_order_relaxed);
  aging_.store(UINT64_MAX, std::memory_order_relaxed);
}

}  // namespace spark::engines
