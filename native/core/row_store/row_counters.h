// The row store's batch and read counters, striped: each thread adds to a slot of its own
// (on its own cache line), so gathers on many threads do not fight over one line; Stats()
// sums the slots. A thread's slot is fixed at its first use; more threads than slots share.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace spark {

// What one worker adds up while it runs part of a batch, then adds to its slot once.
struct ReadTally {
  uint64_t reads = 0;
  uint64_t bytes_read = 0;
  uint64_t merged = 0;
  uint64_t inline_reads = 0;
};

class StripedCounters {
 public:
  struct Totals {
    uint64_t batches = 0, rows = 0, duplicates = 0, mapped_rows = 0, mapped_stale = 0;
    ReadTally reads;
  };

  void AddBatch(uint64_t rows) {
    Slot& s = Mine();
    s.batches.fetch_add(1, std::memory_order_relaxed);
    s.rows.fetch_add(rows, std::memory_order_relaxed);
  }
  void AddDuplicates(uint64_t duplicates) {
    if (duplicates != 0) Mine().duplicates.fetch_add(duplicates, std::memory_order_relaxed);
  }
  void AddMapped(uint64_t rows, uint64_t stale) {
    Slot& s = Mine();
    s.mapped_rows.fetch_add(rows, std::memory_order_relaxed);
    if (stale != 0) s.mapped_stale.fetch_add(stale, std::memory_order_relaxed);
  }
  void AddReads(const ReadTally& t) {
    if (t.reads == 0) return;
    Slot& s = Mine();
    s.reads.fetch_add(t.reads, std::memory_order_relaxed);
    s.bytes_read.fetch_add(t.bytes_read, std::memory_order_relaxed);
    s.merged.fetch_add(t.merged, std::memory_order_relaxed);
    s.inline_reads.fetch_add(t.inline_reads, std::memory_order_relaxed);
  }
  Totals Sum() const {
    Totals t;
    for (const Slot& s : slots_) {
      t.batches += s.batches.load(std::memory_order_relaxed);
      t.rows += s.rows.load(std::memory_order_relaxed);
      t.duplicates += s.duplicates.load(std::memory_order_relaxed);
      t.mapped_rows += s.mapped_rows.load(std::memory_order_relaxed);
      t.mapped_stale += s.mapped_stale.load(std::memory_order_relaxed);
      t.reads.reads += s.reads.load(std::memory_order_relaxed);
      t.reads.bytes_read += s.bytes_read.load(std::memory_order_relaxed);
      t.reads.merged += s.merged.load(std::memory_order_relaxed);
      t.reads.inline_reads += s.inline_reads.load(std::memory_order_relaxed);
    }
    return t;
  }

 private:
  // 128 bytes: the destructive-interference size of the arm64 cores that prefetch line pairs.
  struct alignas(128) Slot {
    std::atomic<uint64_t> batches{0}, rows{0}, duplicates{0}, mapped_rows{0}, mapped_stale{0};
    std::atomic<uint64_t> reads{0}, bytes_read{0}, merged{0}, inline_reads{0};
  };
  static constexpr size_t kSlots = 16;

  Slot& Mine() {
    static std::atomic<size_t> next_thread{0};
    thread_local const size_t index = next_thread.fetch_add(1, std::memory_order_relaxed) % kSlots;
    return slots_[index];
  }

  Slot slots_[kSlots];
};

}  // namespace spark
