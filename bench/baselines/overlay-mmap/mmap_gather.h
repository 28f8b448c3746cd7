// A benchmark baseline, not part of spark's read path: the serving overlay's read path, written
// here from its description (docs/serving-stacks.md, stack A) so `spark bench gather` can
// measure what the engine pays beside the row store's pread pool: each shard file mapped once
// with MADV_RANDOM (a cold row faults in its own pages, no read-around), one
// posix_fadvise(WILLNEED) pass over the batch's rows so the kernel reads their pages in
// parallel, then N workers that memcpy each row's weight and scale bytes into the output. Ids
// the rank does not own come back as zeros (the TP all-reduce sums the ranks). The row
// store's own copies out of a mapping (warm rows) are another thing:
// native/core/row_store/row_gather_mapped.cc.
//
// Rows are global ids in two columns, as in a snapshot or a sparse copy: weight at
// weight_offset + id * dim, scale at scale_offset + id * dim / 32.
//
// A file truncated while it is mapped would fault (SIGBUS) on the next copy; sizes are checked
// at open, and the overlay carries the same risk.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/base/id_range.h"
#include "core/base/noncopyable.h"
#include "core/base/status.h"
#include "core/threads/thread_pool.h"

namespace spark {

struct MmapTable {
  uint32_t layer = 0;
  uint64_t rows = 0;  // the whole table
  uint64_t dim = 0;   // weight bytes per row; scale bytes are dim / 32
  std::string weight_path, scale_path;
  uint64_t weight_offset = 0, scale_offset = 0;
  IdRange owned;  // the rank's ids: others read as zeros
};

struct MmapGatherOptions {
  bool willneed = true;  // the posix_fadvise(WILLNEED) pass before the copies
};

class MmapGather : NonCopyable {
 public:
  static Status Open(const std::vector<MmapTable>& tables, const MmapGatherOptions& options,
                     std::shared_ptr<MmapGather>* out);
  ~MmapGather();

  // D + D/32 of a layer, or 0 when the layer is not here.
  uint64_t RowBytes(uint32_t layer) const;
  // Row i of the batch goes to out[i * row_bytes]; `workers` copy in parallel on `pool` (the
  // caller included). An id past the table is E_ROW_RANGE before anything is read.
  Status Gather(ThreadPool& pool, size_t workers, uint32_t layer, const uint64_t* ids, size_t n, uint8_t* out,
                size_t out_len);

  uint64_t batches() const { return batches_.load(); }
  uint64_t rows() const { return rows_.load(); }
  uint64_t zero_rows() const { return zero_rows_.load(); }

 private:
  struct Mapping {
    std::string path;
    int fd = -1;
    uint8_t* base = nullptr;
    uint64_t size = 0;
  };
  struct Table {
    MmapTable spec;
    uint32_t weight = 0, scale = 0;  // indices into maps_
  };
  MmapGather() = default;
  Status Map(const std::string& path, uint32_t* index);
  Status Add(const MmapTable& t);
  const Table* Find(uint32_t layer) const;

  MmapGatherOptions options_;
  std::vector<Mapping> maps_;
  std::vector<Table> tables_;
  std::atomic<uint64_t> batches_{0}, rows_{0}, zero_rows_{0};
};

}  // namespace spark
