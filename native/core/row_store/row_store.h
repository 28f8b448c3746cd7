// The Engram row store: gathers whole batches of table rows at random ids with many
// concurrent positioned reads. A row is D weight bytes followed by D/32 scale bytes.
//
// Two sources. A snapshot table reads the row's weight and its scale from two tensors (two
// reads per row), unless the scale rows of an id range are held resident in memory (one read
// per row for ids in that range). A packed table holds whole rows, one read per row, either
// densely or in 4 KiB pages that no row crosses (the layout O_DIRECT wants).
//
// Rows whose pages a read has already brought into the page cache are copied out of a mapping
// of the file, with no read call (row_gather_mapped.cc; files on a local disk, read buffered).
// The other rows are planned on the calling thread (sort and de-duplicate the ids, map them to
// byte ranges, merge ranges that share or neighbour a page); a small batch then reads what the
// page cache holds on that thread and the rest of its reads are fanned out over the pool.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/base/id_range.h"
#include "core/base/status.h"
#include "core/io/cached_map.h"
#include "core/io/holes.h"
#include "core/io/random_read.h"
#include "core/row_store/row_counters.h"
#include "core/row_store/row_plan.h"
#include "core/row_store/uring_reader.h"
#include "core/threads/thread_pool.h"

namespace spark {

enum class PackedLayout { kDense, kPage };

inline constexpr uint64_t kPageBytes = 4096;

// A snapshot table: ids [0, rows); the weight tensor is [rows, dim] bytes and the scale tensor
// [rows, dim/32] bytes, each starting at its absolute file offset. Two reads per row, one for
// ids whose scale rows are resident.
struct SnapshotTable {
  uint32_t layer = 0;
  uint64_t rows = 0;
  uint64_t dim = 0;
  std::string weight_path;
  uint64_t weight_offset = 0;
  std::string scale_path;
  uint64_t scale_offset = 0;
  std::optional<IdRange> resident_scales;  // ids whose scale rows stay in memory
  // Only these ids are readable when set (a sparse copy's manifest range), and what a hole
  // among those rows means (checked at open).
  std::optional<IdRange> range;
  HoleRule holes = HoleRule::kAllow;
};

// A packed table: global ids `ids`; local row i = id - ids.start, whole rows of row_bytes.
// Dense: row i at data_offset + i * stride. Page: floor(4096 / stride) rows per 4096-byte page.
struct PackedTable {
  uint32_t layer = 0;
  std::string path;
  IdRange ids;
  uint64_t data_offset = 0;
  uint64_t stride = 0;
  uint64_t row_bytes = 0;
  PackedLayout layout = PackedLayout::kDense;
  bool direct = false;  // O_DIRECT when the filesystem accepts it
};

// One table of a store: the two kinds share nothing but the layer they serve.
using TableSpec = std::variant<SnapshotTable, PackedTable>;

inline uint32_t LayerOf(const TableSpec& spec) {
  return std::visit([](const auto& t) { return t.layer; }, spec);
}

// How a store issues its reads. kPread: the pool's blocking positioned reads. kUring: one
// io_uring per store (core/row_store/uring_reader.h). kAuto: io_uring when every file is on a local
// filesystem and the kernel allows it, else the pread pool (row_store_engine.cc says why).
enum class IoEngine { kAuto, kPread, kUring };

struct StoreOptions {
  bool dedup = true;  // sort ids, read each distinct row once, copy to duplicates
  bool merge = true;  // one read for rows whose byte ranges share or neighbour a page
  uint64_t max_merge_bytes = 64 * 1024;
  bool fadvise_random = true;  // POSIX_FADV_RANDOM: no readahead on buffered reads
  RetryPolicy retry;           // transient read errors (NFS): see IsTransientReadError
  FaultConfig faults;
  IoEngine io_engine = IoEngine::kAuto;
  unsigned io_depth = 128;     // io_uring: reads in flight per store
  int uring_refuse_errno = 0;  // tests: io_uring_setup fails with this errno
  // Copy rows the page cache is known to hold out of a mapping of their file (see cached_map.h).
  // Off by choice, and on files read with O_DIRECT, on network filesystems, and when faults are
  // injected (tests of the read calls).
  bool map_cached = true;
};

struct StoreStats {
  uint64_t batches = 0;
  uint64_t rows = 0;           // rows delivered, duplicates included
  uint64_t reads = 0;          // read operations issued (after de-duplication and merging)
  uint64_t inline_reads = 0;   // of those, served from the page cache on the calling thread
  uint64_t bytes_read = 0;     // bytes those reads asked for
  uint64_t duplicates = 0;     // rows served by copying another row of the same batch
  uint64_t merged = 0;         // row pieces that shared a read with another piece
  uint64_t retries = 0;        // EINTR and short-read continuations
  uint64_t error_retries = 0;  // reads retried after a transient error (ETIMEDOUT, ESTALE, EIO)
  uint64_t reopens = 0;        // files opened again after ESTALE
  uint64_t resident_bytes = 0;
  uint64_t mapped_rows = 0;    // rows copied out of a file mapping, with no read call
  uint64_t mapped_stale = 0;   // runs of those copies slow enough (evicted pages) to stop trusting their pages
  uint64_t mapped_files = 0;   // files the store maps
  std::string io_engine;       // "uring" or "pread": the engine running this store's gathers
  std::string io_engine_note;  // why auto chose the pread pool, when it did
};

struct TableInfo {
  uint32_t layer;
  IdRange ids;  // the valid ids
  uint64_t row_bytes;
  bool direct_requested, direct_active;
  bool resident;
};

class RowStore {
 public:
  // Opens every file the tables name, checks the tables fit in them, and applies the
  // random-access hint. Resident scales are loaded separately by LoadResident().
  static Status Open(const std::vector<TableSpec>& tables, const StoreOptions& options, std::shared_ptr<RowStore>* out);
  ~RowStore();
  RowStore(const RowStore&) = delete;
  RowStore& operator=(const RowStore&) = delete;

  // Reads the resident scale rows of every table that asked for them, in parallel on `pool`.
  // Safe while gathers run: a table's scales are used only once all of them are in memory
  // (until then its gathers read scales from the file). Concurrent calls load once.
  Status LoadResident(ThreadPool& pool);

  // Asks the kernel which pages of the tables' rows the page cache already holds (a store
  // opened on a warm cache, or a cache warmed since), so their rows are copied out of the
  // mapping from the first batch on; returns the pages found. Does nothing for files that
  // are not mapped. Safe while gathers run.
  uint64_t LearnCached(ThreadPool& pool);

  // The first id of ids[0..n) outside the layer's table, as an E_ROW_RANGE status naming it.
  Status CheckIds(uint32_t layer, const uint64_t* ids, size_t n) const;
  // Row i of the batch goes to out[i * row_bytes]. out_len must hold n rows.
  Status Gather(ThreadPool& pool, uint32_t layer, const uint64_t* ids, size_t n, uint8_t* out, size_t out_len);
  // The same batch on the calling thread out of the mapping only, never waiting for a device:
  // *copied is true when every row's pages were known cached and the whole batch was copied;
  // false (out partly written) when one was not or the table is not mapped: call Gather then.
  // The same errors as Gather for bad arguments.
  Status GatherCached(uint32_t layer, const uint64_t* ids, size_t n, uint8_t* out, size_t out_len, bool* copied);

  // In-flight and later batches fail with E_STORE_CLOSED; files stay open until destruction
  // so reads already running finish on valid descriptors.
  void Close() { closed_.store(true); }
  bool closed() const { return closed_.load(); }

  StoreStats Stats() const;
  std::vector<TableInfo> Tables() const;
  const TableInfo* Find(uint32_t layer) const;

  // One table as opened: its spec plus the files and derived sizes the planner uses.
  struct Table {
    TableSpec spec;
    TableInfo info;
    uint32_t weight_file = 0, scale_file = 0;  // snapshot
    uint32_t file = 0;                         // packed
    uint64_t scale_bytes = 0;                  // D/32
    uint64_t rows_per_page = 0;                // packed page layout
    // The spec as its kind: exactly one of the two is non-null.
    const SnapshotTable* snapshot() const { return std::get_if<SnapshotTable>(&spec); }
    const PackedTable* packed() const { return std::get_if<PackedTable>(&spec); }
    // Scale rows of the snapshot's resident_scales: owned by resident_owner (written under
    // RowStore::resident_mu_), published through `resident` once complete, never freed before
    // the store. Gathers read only `resident` (acquire): null means "read the file".
    std::unique_ptr<uint8_t[]> resident_owner;
    std::atomic<const uint8_t*> resident{nullptr};
    // Snapshot: the file offsets of id's weight row and scale row.
    static uint64_t WeightOffset(const SnapshotTable& s, uint64_t id) { return s.weight_offset + id * s.dim; }
    uint64_t ScaleOffset(const SnapshotTable& s, uint64_t id) const { return s.scale_offset + id * scale_bytes; }
    // Packed: the file offset of global id `id`'s row.
    uint64_t PackedOffset(const PackedTable& p, uint64_t id) const {
      const uint64_t local = id - p.ids.start;
      return p.layout == PackedLayout::kPage
                 ? p.data_offset + local / rows_per_page * kPageBytes + local % rows_per_page * p.stride
                 : p.data_offset + local * p.stride;
    }
  };

 private:
  RowStore() = default;
  Status AddTable(const TableSpec& spec);
  Status AddSnapshot(const SnapshotTable& spec, Table* t);  // checks, opens and sizes one kind
  Status AddPacked(const PackedTable& spec, Table* t);
  Status OpenFile(const std::string& path, bool want_direct, uint64_t probe_offset, uint32_t* index);
  const Table* FindTable(uint32_t layer) const;
  Status StartIoEngine();  // row_store_engine.cc
  // The checks every batch passes before any read: the layer, the batch size, the ids, out_len.
  Status CheckBatch(uint32_t layer, const uint64_t* ids, size_t n, size_t out_len, const Table** table) const;
  // row_gather_mapped.cc: maps the files map_cached allows; copies the batch positions whose
  // rows are known cached and returns how many it could not (their positions in *misses).
  // pool null: all on the calling thread, stopping at the first row it cannot copy.
  void MapFiles();
  bool TableMapped(const Table& t) const;
  size_t GatherMapped(ThreadPool* pool, const Table& t, const uint64_t* ids, size_t n, uint8_t* out,
                      std::vector<uint32_t>* misses);
  // Reads ids[0..n) of table t into out by planned read calls (row_gather.cc).
  Status GatherPlanned(ThreadPool& pool, const Table& t, const uint64_t* ids, size_t n, uint8_t* out);
  FileMap* MapOf(uint32_t file) const { return maps_[file].get(); }
  ReadContext Context() { return ReadContext{faults_.get(), &read_counters_, options_.retry}; }

  StoreOptions options_;
  std::vector<std::unique_ptr<ReadFile>> files_;
  std::vector<std::unique_ptr<FileMap>> maps_;  // per file; null when it is not mapped
  std::vector<std::unique_ptr<Table>> tables_;
  std::vector<TableInfo> infos_;
  std::unique_ptr<FaultInjector> faults_;
  std::atomic<bool> closed_{false};

  friend class BatchRun;
  StripedCounters counters_;
  PlanMemoryPool plan_memory_;
  ReadCounters read_counters_;
  std::mutex resident_mu_;  // one LoadResident at a time
  std::atomic<uint64_t> resident_bytes_{0};
  // Declared last, destroyed first: its thread uses the files and counters above.
  std::unique_ptr<UringReader> uring_;
  std::string io_engine_note_;
};

}  // namespace spark
