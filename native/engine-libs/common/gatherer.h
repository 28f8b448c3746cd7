// One store's gather: the batch pipeline both engine libraries run, with every buffer it
// needs allocated at Init so a gather allocates nothing.
//
//   1. Positions whose id is outside the owned rows get 264 zero bytes.
//   2. The owned ids are sorted and de-duplicated (core/row_store/row_plan.h's DistinctRows): each
//      distinct row is looked up or read once, repeats are copied from it.
//   3. The first distinct rows are looked up in the row cache on the calling thread; when
//      most hit (a warm batch) the rest are too, and only the misses go on.
//   4. What is left is read: when every file it comes from is O_DIRECT, by the calling thread
//      alone through native AIO (aio_reader.h), all reads of the chunk in flight at once,
//      rows whose 4 KiB blocks are at most one block apart sharing one read (up to 16 KiB);
//      otherwise one item per row on the worker team. Each row is looked up again first (a
//      prefetch may have brought it), and kept in the cache once read: the first kDeferRows
//      rows a chunk reads by AIO are staged and put in the cache on a worker after the call
//      returns (a first write to a cache page is the dearest thing a cold call does on some
//      machines), and the next call, stats and resident wait for that to finish first.
// Batches larger than the capacity run in consecutive chunks of it.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/row_store/row_plan.h"
#include "engine-libs/common/aio_reader.h"
#include "engine-libs/common/call_log.h"
#include "engine-libs/common/row_cache.h"
#include "engine-libs/common/row_source.h"
#include "engine-libs/common/worker_team.h"

namespace spark::engines {

struct GatherCounters {
  std::atomic<uint64_t> calls{0}, owned{0}, zeroed{0}, ns{0};
  std::atomic<uint64_t> hits{0}, misses{0}, reads{0};
};

// The counted part of a stats line (calls, rows, hits, misses, reads); each store adds what it
// holds (cache and pinned bytes, a pack).
inline CallTotals CountedTotals(const GatherCounters& c) {
  CallTotals t;
  t.calls = c.calls.load();
  t.rows = c.owned.load() + c.zeroed.load();
  t.hits = c.hits.load();
  t.misses = c.misses.load();
  t.reads = c.reads.load();
  return t;
}

class Gatherer {
 public:
  static constexpr size_t kChunk = 65536;

  // False (errno ENOMEM) when the scratch memory cannot be had. Without AIO (refused by the
  // kernel), every read goes to the team.
  bool Init(RowSource* source, RowCache* cache);
  // Rows of ids[0..count) to w + i*256 and s + i*8; ids outside [lo, hi) give zeros.
  // Calls must be serialised by the caller; `team` runs the reads.
  void Gather(WorkerTeam& team, const int64_t* ids, uint64_t count, uint8_t* w, uint8_t* s, uint64_t lo, uint64_t hi);
  GatherCounters& counters() { return counters_; }
  // Waits until the rows the last call staged are in the cache: before anything that reads
  // the cache's state or changes its layout, and before the store goes.
  void Settle() const {
    if (WorkerTeam* team = posted_to_.load(std::memory_order_acquire)) team->WaitPosted();
  }

 private:
  void Chunk(WorkerTeam& team, const int64_t* ids, size_t n, uint8_t* w, uint8_t* s, uint64_t lo, uint64_t hi);
  static void MissItem(void* ctx, size_t item, unsigned thread);
  // Step 4 by AIO, on this thread: false when the source is not all O_DIRECT (or no AIO).
  bool ReadDirect();
  static void ReadDone(void* ctx, uint32_t tag, const uint8_t* data);
  void Landed(uint32_t k);
  static void InsertStaged(void* ctx);

  RowSource* source_ = nullptr;
  RowCache* cache_ = nullptr;
  GatherCounters counters_;
  // Scratch of one chunk (capacity kChunk).
  std::vector<uint64_t> owned_ids_;
  std::vector<uint32_t> owned_pos_;  // batch position of owned_ids_[k]
  std::vector<DistinctRow> rows_;
  std::vector<std::pair<uint32_t, uint32_t>> copies_;
  SortScratch sort_;
  std::vector<uint32_t> todo_;  // indices into rows_ left for step 4
  AioReader aio_;
  bool aio_ok_ = false;
  // The chunk's AIO reads; a read's rows (parts) chain from op_head_[tag] through Part::next:
  // rows whose blocks are at most kMergeHole apart share one read.
  struct Part {
    uint32_t k;    // todo_ index
    uint8_t part;  // 0: the row (pack) or its weight; 1: its scale
    int32_t next;  // next part of the same read, or -1
  };
  std::vector<AioReader::Op> ops_;
  std::vector<Part> parts_;
  std::vector<uint32_t> op_head_, op_tail_;
  std::vector<uint8_t> pending_;  // reads still out per todo_ entry
  // Rows read by AIO in this chunk, waiting to be put in the cache by InsertStaged.
  static constexpr size_t kDeferRows = 8192;
  std::vector<uint64_t> staged_ids_;
  std::vector<uint8_t> staged_rows_;  // kDeferRows * kRowBytes
  size_t staged_ = 0;
  bool defer_ = false;  // a worker puts staged rows in the cache (false: this thread does, at once)
  // The team InsertStaged was last posted to (read by resident() and stats from other threads).
  std::atomic<WorkerTeam*> posted_to_{nullptr};
  size_t looked_ = 0;  // todo_ entries from here on were not looked up yet
  // The chunk being run (read by MissItem).
  WorkerTeam* team_ = nullptr;
  uint8_t* w_ = nullptr;
  uint8_t* s_ = nullptr;
  const PinnedScales* pinned_ = nullptr;
};

}  // namespace spark::engines
