// The Mia stack's row store (docs/engine-libs.md, "librow_store.so"): a checkpoint shard's
// rows with a row cache of the budget given at open, optionally a packed shard of the owned
// rows and the owned scale rows pinned in memory, and reads run on one process-wide team of
// DSV41_IO_THREADS - 1 workers plus the caller.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <mutex>

#include "core/io/random_read.h"
#include "engine-libs/common/call_log.h"
#include "engine-libs/common/gatherer.h"
#include "engine-libs/common/row_cache.h"
#include "engine-libs/common/row_source.h"
#include "engine-libs/mia/drm_cache.h"

namespace spark::engines {

class MiaStore {
 public:
  // Null when the file cannot be opened; aborts when the extents do not fit it.
  static MiaStore* Open(const char* path, uint64_t rows, uint64_t woff, uint64_t soff, uint64_t budget);
  ~MiaStore();

  void Range(uint64_t lo, uint64_t hi);
  int AttachPacked(const char* path, uint64_t layer);
  void Lookup(const int64_t* ids, uint64_t count, uint8_t* w, uint8_t* s);
  void Stats(uint64_t out[9]);

 private:
  MiaStore() : source_("librow_store") {}
  CallTotals Totals() const;
  // OFFLOAD_MODE=ram: a shard cut after it was mapped (a re-download, a copy that stopped)
  // would make the copy out of the mapping die of SIGBUS. Its size is checked (one fstat)
  // before each lookup, which then dies of one line naming the file and where it now ends,
  // as every read path does. A cut landing during a lookup's copies is not caught.
  void CheckMappedShard() const;

  uint64_t rows_ = 0;
  uint32_t ways_ = 0;  // DSV41_CACHE_WAYS as configured, with or without a cache
  ReadFile file_;
  std::unique_ptr<ReadFile> pack_;
  RowSource source_;
  DrmRowMemory drm_;  // before cache_: the cache's rows may live in it
  RowCache cache_;
  Gatherer gatherer_;
  CallLog log_;
  std::mutex mu_;  // serialises lookups, range and attach
  uint64_t lo_ = 0, hi_ = 0;
  std::unique_ptr<PinnedScales> scales_;
  uint8_t* mapped_ = nullptr;  // OFFLOAD_MODE=ram
  size_t mapped_bytes_ = 0;
};

}  // namespace spark::engines
