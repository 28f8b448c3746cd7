// How often each row id was asked for lately, approximately, in 2 bytes per cache slot: a
// count-min sketch of 4-bit counters (16 to a 64-bit word, four per slot), an id's four
// counters in one 64-byte block chosen by its hash (one cache line per count, not four). The row cache asks it, when a
// set is full, whether a row just read is wanted more often than the row it would evict (frequency-aware admission): on
// a skewed id stream the rows asked once (most of a Zipf-like stream's tail) then stop pushing out the rows asked again
// and again. Counts are halved once the sketch has seen ten times as many ids as the cache has slots, so the counts
// follow what is asked now; the halving is spread over the following calls, a few words each, so no gather pays for all
// of it.
//
// The counters live in memory the cache hands over (its arena, counted in its budget) and are
// read and written with relaxed atomics from any thread: a lost increment makes a count
// approximate, never wrong memory.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace spark::engines {

class FreqSketch {
 public:
  static constexpr unsigned kDepth = 4;
  // Bytes of counters for `slots` cache slots.
  static uint64_t BytesFor(uint64_t slots) { return BlocksFor(slots) * kBlockWords * 8; }

  // `words`: BytesFor(slots) bytes, 8-aligned, zeroed.
  void Init(uint64_t* words, uint64_t slots);
  // One more ask of id.
  void Count(uint64_t id);
  // The smallest of id's counters: 0-15.
  unsigned Estimate(uint64_t id) const;
  // Every counter to zero (the memory was zeroed by the owner).
  void Reset();

 private:
  static constexpr uint64_t kBlockWords = 8;  // 64 bytes
  // 32 slots' counters (128) to a block: at most 2 bytes a slot plus one block.
  static uint64_t BlocksFor(uint64_t slots) { return (slots + 31) / 32; }
  struct Cell {
    size_t word;
    unsigned shift;
  };
  void Cells(uint64_t id, Cell out[kDepth]) const;
  void AgeSome();

  uint64_t* words_ = nullptr;
  uint64_t blocks_ = 0;
  uint64_t period_ = 0;  // counts between halvings
  std::atomic<uint64_t> counted_{0};
  std::atomic<uint64_t> aging_{UINT64_MAX};  // next word to halve, or UINT64_MAX: none due
};

}  // namespace spark::engines
