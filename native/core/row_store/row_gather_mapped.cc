// RowStore::GatherMapped: the warm path. A row whose pages a read call has already brought
// into the page cache is copied straight out of a mapping of its file on the calling thread:
// no read call, no plan, no pool. A 24-id batch of warm rows then costs about what copying
// its 24 rows does: 2.6 us, where its 48 read calls took 40 us (bench/RESULTS.md).
//
// Which files are mapped: buffered files on local filesystems (O_DIRECT files keep out of the
// page cache by choice; on a network filesystem a fault can stall for seconds with no retry
// policy, and a stale handle would fault), and only when faults are not injected (those tests
// are about the read calls).
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>

#include "core/io/fault_guard.h"
#include "core/row_store/row_store.h"
#include "core/threads/parallel.h"

namespace spark {

namespace {

// A warm batch this large is copied on all cores, in runs of about this many rows.
constexpr size_t kRowsPerCopyRun = 8192;
// A run of copies slower than this may have been reading pages from the device (evicted after
// they were marked): ~100 us a fault on NVMe, against ~0.2 us a warm row. A run that was only
// preempted is as slow, so a slow run counts as stale only if the thread's major-fault count
// (getrusage, read only then) has grown since it was last read.
constexpr int64_t kSlowBaseNs = 100'000;
constexpr int64_t kSlowPerRowNs = 1'000;

// One run of copies: batch positions [begin, end). Owns nothing, so a fault may abandon it.
struct CopyRun {
  const RowStore::Table* table;
  const FileMap* weights;   // snapshot weights, or a packed table's file
  const FileMap* scales;    // snapshot scales (null: packed)
  const uint8_t* resident;  // resident scale rows, or null
  const uint64_t* ids;
  uint8_t* out;
  size_t begin, end;
  uint32_t* misses;  // positions not copied, from misses[0]
  size_t missed;
  bool stop_at_miss;  // all or nothing: the first row it cannot copy ends the run
};

// Copies each row of the run whose pieces (a packed row; a snapshot's weight and scale) lie
// in pages all known cached, and lists the other positions in c.misses.
void CopyKnownRows(void* arg) {
  CopyRun& c = *static_cast<CopyRun*>(arg);
  const uint64_t rb = c.table->info.row_bytes;
  if (const PackedTable* p = c.table->packed()) {
    for (size_t i = c.begin; i < c.end; ++i) {
      const uint64_t off = c.table->PackedOffset(*p, c.ids[i]);
      if (!c.weights->Known(off, p->row_bytes)) {
        c.misses[c.missed++] = static_cast<uint32_t>(i);
        if (c.stop_at_miss) return;
        continue;
      }
      std::memcpy(c.out + i * rb, c.weights->at(off), p->row_bytes);
    }
    return;
  }
  const SnapshotTable& s = *c.table->snapshot();
  const uint64_t sb = c.table->scale_bytes;
  const IdRange kept = s.resident_scales.value_or(IdRange{});
  for (size_t i = c.begin; i < c.end; ++i) {
    const uint64_t id = c.ids[i];
    const uint64_t woff = c.table->WeightOffset(s, id);
    const uint64_t soff = c.table->ScaleOffset(s, id);
    const bool resident = c.resident != nullptr && kept.contains(id);
    if (!c.weights->Known(woff, s.dim) || (!resident && !c.scales->Known(soff, sb))) {
      c.misses[c.missed++] = static_cast<uint32_t>(i);
      if (c.stop_at_miss) return;
      continue;
    }
    uint8_t* dst = c.out + i * rb;
    std::memcpy(dst, c.weights->at(woff), s.dim);
    std::memcpy(dst + s.dim, resident ? c.resident + (id - kept.start) * sb : c.scales->at(soff), sb);
  }
}

// The pages run c copied from are no longer believed cached.
void ForgetRun(const CopyRun& c, FileMap* weights, FileMap* scales) {
  const PackedTable* p = c.table->packed();
  const SnapshotTable* s = c.table->snapshot();
  for (size_t i = c.begin; i < c.end; ++i) {
    const uint64_t id = c.ids[i];
    if (p != nullptr) {
      weights->Forget(c.table->PackedOffset(*p, id), p->row_bytes);
    } else {
      weights->Forget(c.table->WeightOffset(*s, id), s->dim);
      scales->Forget(c.table->ScaleOffset(*s, id), c.table->scale_bytes);
    }
  }
}

// Whether this thread has taken a major fault since the last call on it (the first call: ever).
bool MajorFaultsSinceLastAsked() {
  thread_local long last = 0;
  struct rusage u;
  if (getrusage(RUSAGE_THREAD, &u) != 0) return true;
  const bool grew = u.ru_majflt > last;
  last = u.ru_majflt;
  return grew;
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void RowStore::MapFiles() {
  maps_.resize(files_.size());
  if (!options_.map_cached || options_.faults.any() || !FaultGuardAvailable()) return;
  for (size_t i = 0; i < files_.size(); ++i) {
    const ReadFile& f = *files_[i];
    if (f.direct() || OnNetworkFilesystem(f.fd())) continue;
    maps_[i] = FileMap::Create(f.fd(), f.size());
  }
}

bool RowStore::TableMapped(const Table& t) const {
  if (t.packed() != nullptr) return maps_[t.file] != nullptr;
  return maps_[t.weight_file] != nullptr && maps_[t.scale_file] != nullptr;
}

size_t RowStore::GatherMapped(ThreadPool* pool, const Table& t, const uint64_t* ids, size_t n, uint8_t* out,
                              std::vector<uint32_t>* misses) {
  misses->resize(n);
  const bool packed = t.packed() != nullptr;
  const uint32_t weight_file = packed ? t.file : t.weight_file;
  FileMap* weights = maps_[weight_file].get();
  FileMap* scales = packed ? nullptr : maps_[t.scale_file].get();
  // A file cut short after it was mapped reads as zeros past its new end within the last page
  // (only whole pages past it fault): then the read calls take the batch and report the end.
  if (!files_[weight_file]->Whole() || (!packed && t.scale_file != weight_file && !files_[t.scale_file]->Whole())) {
    for (size_t i = 0; i < n; ++i) (*misses)[i] = static_cast<uint32_t>(i);
    return n;
  }
  const uint8_t* resident = packed ? nullptr : t.resident.load(std::memory_order_acquire);
  const size_t runs = pool == nullptr || n < 2 * kRowsPerCopyRun ? 1 : n / kRowsPerCopyRun;
  thread_local std::vector<size_t> run_missed;
  run_missed.assign(runs, 0);
  std::vector<size_t>& missed_of = run_missed;
  auto copy = [&](size_t r) {
    const auto [begin, end] = ContiguousRun(n, runs, r);
    CopyRun c{&t, weights, scales, resident, ids, out, begin, end, misses->data() + begin, 0, pool == nullptr};
    const int64_t start = NowNs();
    if (!RunFaultGuarded(CopyKnownRows, &c)) {
      // A copy faulted (the file shrank, or a page could not be read back): the read calls
      // will read these rows again and say what is wrong.
      for (size_t i = begin; i < end; ++i) c.misses[i - begin] = static_cast<uint32_t>(i);
      missed_of[r] = end - begin;
      ForgetRun(c, weights, scales);
      return;
    }
    if (c.stop_at_miss && c.missed > 0) {  // the first miss and every row after it are not copied
      const size_t first = c.misses[0];
      for (size_t i = first; i < end; ++i) c.misses[i - first] = static_cast<uint32_t>(i);
      missed_of[r] = end - first;
      return;
    }
    const size_t copied = end - begin - c.missed;
    const bool slow = NowNs() - start > kSlowBaseNs + kSlowPerRowNs * static_cast<int64_t>(end - begin);
    const bool stale = slow && MajorFaultsSinceLastAsked();
    if (stale) ForgetRun(c, weights, scales);
    missed_of[r] = c.missed;
    counters_.AddMapped(copied, stale ? 1 : 0);
  };
  if (runs == 1) {
    copy(0);
  } else {
    RunParallel(*pool, runs, std::min(runs, Cores()), copy);
  }
  // Gather each run's misses to the front.
  size_t total = 0;
  for (size_t r = 0; r < runs; ++r) {
    const size_t begin = ContiguousRun(n, runs, r).first;
    std::memmove(misses->data() + total, misses->data() + begin, missed_of[r] * sizeof(uint32_t));
    total += missed_of[r];
  }
  misses->resize(total);
  return total;
}

uint64_t RowStore::LearnCached(ThreadPool& pool) {
  struct Region {
    FileMap* map;
    uint64_t offset, len;
  };
  std::vector<Region> regions;
  for (const auto& t : tables_) {
    if (!TableMapped(*t)) continue;
    const IdRange& ids = t->info.ids;  // every extent was checked to fit at open
    if (ids.size() == 0) continue;
    if (const PackedTable* p = t->packed()) {
      const uint64_t first = t->PackedOffset(*p, ids.start), last = t->PackedOffset(*p, ids.end - 1) + p->row_bytes;
      regions.push_back({maps_[t->file].get(), first, last - first});
    } else {
      const SnapshotTable& s = *t->snapshot();
      regions.push_back({maps_[t->weight_file].get(), t->WeightOffset(s, ids.start), ids.size() * s.dim});
      regions.push_back({maps_[t->scale_file].get(), t->ScaleOffset(s, ids.start), ids.size() * t->scale_bytes});
    }
  }
  // In pieces of one mincore call each, spread over the pool: a 98 GB table is 24 M pages.
  struct Piece {
    FileMap* map;
    uint64_t offset, len;
  };
  std::vector<Piece> pieces;
  for (const Region& r : regions) {
    const uint64_t step = FileMap::kLearnPages * r.map->page_bytes();
    for (uint64_t at = r.offset / step * step; at < r.offset + r.len; at += step) {
      const uint64_t lo = std::max(at, r.offset), hi = std::min(at + step, r.offset + r.len);
      pieces.push_back({r.map, lo, hi - lo});
    }
  }
  // mincore is CPU work in the kernel: no more helpers than cores, so batches arriving
  // meanwhile still find free reader threads.
  std::atomic<uint64_t> learned{0};
  RunParallel(pool, pieces.size(), std::min(pool.size(), Cores()), [&](size_t i) {
    if (closed()) return;
    learned.fetch_add(pieces[i].map->Learn(pieces[i].offset, pieces[i].len), std::memory_order_relaxed);
  });
  return learned.load();
}

Status RowStore::GatherCached(uint32_t layer, const uint64_t* ids, size_t n, uint8_t* out, size_t out_len,
                              bool* copied) {
  *copied = false;
  const Table* table = nullptr;
  Status st = CheckBatch(layer, ids, n, out_len, &table);
  if (!st.ok() || !TableMapped(*table)) return st;
  thread_local std::vector<uint32_t> misses;
  if (GatherMapped(nullptr, *table, ids, n, out, &misses) != 0) return st;
  counters_.AddBatch(n);
  *copied = true;
  return st;
}

}  // namespace spark
