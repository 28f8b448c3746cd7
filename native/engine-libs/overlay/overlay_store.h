// The overlay stack's row store (docs/engine-libs.md, "libengram_rows.so"): one shard's owned
// rows [lo, hi), `threads` worker threads of its own, the owned scale rows pinned when they fit
// the store's budget, a row cache in the rest (in all of it after a release), and prefetch
// reads run by idle workers.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "core/io/random_read.h"
#include "engine-libs/common/call_log.h"
#include "engine-libs/common/gatherer.h"
#include "engine-libs/common/row_cache.h"
#include "engine-libs/common/row_source.h"
#include "engine-libs/common/worker_team.h"

namespace spark::engines {

class OverlayStore {
 public:
  // NULL with errno set on failure (EINVAL for bad arguments or a file too short).
  static OverlayStore* Open(const char* path, uint64_t woff, uint64_t soff, uint64_t lo, uint64_t hi, int threads);
  ~OverlayStore();

  void Gather(const int64_t* ids, uint64_t count, uint8_t* w, uint8_t* s);
  uint64_t Prefetch(const int64_t* ids, uint64_t n);
  void Stats(uint64_t out[4]);
  uint64_t Resident() const;
  void Release();

 private:
  OverlayStore() : source_("libengram_rows") {}
  bool Owned(int64_t id) const {
    return id >= 0 && static_cast<uint64_t>(id) >= lo_ && static_cast<uint64_t>(id) < hi_;
  }
  // Reads queued prefetch ids into the cache until the queue is empty or a gather starts.
  static void PrefetchWork(void* self, unsigned thread);
  void Fill(uint8_t* staging);
  // The row cache's sets for `bytes` of the budget.
  uint64_t CacheSets(uint64_t bytes) const;

  ReadFile file_;
  RowSource source_;
  RowCache cache_;
  Gatherer gatherer_;
  CallLog log_;
  uint64_t lo_ = 0, hi_ = 0;
  uint64_t budget_ = 0;   // bytes resident() may reach: pinned scales and cached rows
  std::mutex gather_mu_;  // serialises gathers and release
  std::unique_ptr<PinnedScales> scales_;
  std::atomic<uint64_t> pinned_bytes_{0};

  // Prefetch: a ring of ids waiting to be read; readers announce themselves in fill_busy_ and
  // stay out while release() has fill_paused_ set.
  std::mutex queue_mu_;
  std::unique_ptr<uint64_t[]> queue_;
  size_t queue_head_ = 0, queue_size_ = 0;
  std::atomic<int> fill_busy_{0};
  std::atomic<bool> fill_paused_{false};
  std::mutex inline_mu_;  // threads == 0: prefetch reads on the caller with this staging
  AlignedBuffer inline_staging_;
  // Declared last, destroyed first: its workers use everything above.
  WorkerTeam team_;
};

}  // namespace spark::engines
