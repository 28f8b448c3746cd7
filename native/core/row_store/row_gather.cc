// RowStore::Gather: plan a batch on the calling thread, serve the reads the page cache holds
// right there, and fan the rest out over the pool.
#include <algorithm>
#include <cstring>
#include <mutex>

#include "core/base/checked.h"
#include "core/row_store/row_plan.h"
#include "core/row_store/row_store.h"
#include "core/threads/parallel.h"

namespace spark {

namespace {

// The calling thread first asks the page cache for this many reads (RWF_NOWAIT, buffered
// files). When at least three quarters come back, the batch is warm: the rest is asked of the
// cache too, in runs of kWarmRun reads, on one thread per kWarmReadsPerThread reads and no
// more threads than cores (a 24-id batch stays on the calling thread, a warm 49,152-id one
// uses the cores, not 64 threads on 2 cores). Otherwise it is cold and goes straight to the
// pool's blocking readers.
constexpr size_t kProbe = 16;
constexpr size_t kWarmRun = 16;
constexpr size_t kWarmReadsPerThread = 64;
// Reads that must wait for the device go to the pool in runs of up to kMaxRun, about
// kRunsPerWorker runs per worker: fewer hand-offs on a large batch, while the last run to
// finish holds at most a few slow reads (on NFS each can take milliseconds).
constexpr size_t kRunsPerWorker = 32;
constexpr size_t kMaxRun = 8;

// Staging memory per thread, reused across batches: aligned for O_DIRECT.
uint8_t* StagingBuffer(size_t bytes) {
  thread_local AlignedBuffer scratch;
  return scratch.Reserve(bytes);
}

}  // namespace

class BatchRun {
 public:
  BatchRun(RowStore& store, const RowStore::Table& table, uint8_t* out, PlanMemory& plan)
      : store_(store), table_(table), out_(out), plan_(plan) {}

  // Maps the distinct rows in plan_.rows to pieces of files and groups the pieces into reads.
  void Plan() {
    const StoreOptions& o = store_.options_;
    const uint64_t rb = table_.info.row_bytes;
    const bool sorted = o.dedup;
    std::vector<Piece>& pieces = plan_.pieces;
    pieces.clear();
    plan_.ops.clear();
    if (const PackedTable* p = table_.packed()) {
      pieces.reserve(plan_.rows.size());
      for (const DistinctRow& r : plan_.rows)
        pieces.push_back({table_.PackedOffset(*p, r.id), p->row_bytes, r.pos * rb});
      const ReadFile& f = *store_.files_[table_.file];
      PlanReads(pieces, 0, pieces.size(), table_.file, o.merge && sorted, o.max_merge_bytes,
                f.direct() ? kDirectAlign : 1, &plan_.ops);
      return;
    }
    const SnapshotTable& s = *table_.snapshot();
    pieces.reserve(plan_.rows.size() * 2);
    const uint64_t sb = table_.scale_bytes;
    // Null until LoadResident has finished this table: then scales come from the file.
    const uint8_t* resident = table_.resident.load(std::memory_order_acquire);
    const IdRange kept = s.resident_scales.value_or(IdRange{});
    for (const DistinctRow& r : plan_.rows) pieces.push_back({table_.WeightOffset(s, r.id), s.dim, r.pos * rb});
    size_t weights = pieces.size();
    for (const DistinctRow& r : plan_.rows) {
      uint64_t dest = r.pos * rb + s.dim;
      if (resident != nullptr && kept.contains(r.id)) {
        std::memcpy(out_ + dest, resident + (r.id - kept.start) * sb, sb);
      } else {
        pieces.push_back({table_.ScaleOffset(s, r.id), sb, dest});
      }
    }
    PlanReads(pieces, 0, weights, table_.weight_file, o.merge && sorted, o.max_merge_bytes, 1, &plan_.ops);
    PlanReads(pieces, weights, pieces.size(), table_.scale_file, o.merge && sorted, o.max_merge_bytes, 1, &plan_.ops);
  }

  // Runs the planned reads: the one place a planned batch's ReadOps are executed. What the
  // page cache holds is read without waiting (see kProbe), the rest by the io_uring engine
  // when the store has one, else by the pool's blocking readers at full width.
  Status Execute(ThreadPool& pool) {
    const size_t n = plan_.ops.size();
    std::vector<uint32_t>& pending = plan_.pending;
    pending.clear();
    size_t i = 0;
    bool warm = false;
    if (!store_.closed()) {
      Tally tally(store_);
      for (; i < std::min(n, kProbe); ++i) {
        if (!ServeIfCached(plan_.ops[i], &tally.counts)) pending.push_back(static_cast<uint32_t>(i));
      }
      warm = pending.size() * 4 <= i;
    }
    if (warm && i < n) {
      ServeRestIfCached(pool, i);
    } else {
      for (; i < n; ++i) pending.push_back(static_cast<uint32_t>(i));
    }
    if (store_.uring_) {
      RunUring();
    } else {
      RunOnPool(pool);
    }
    std::lock_guard<std::mutex> lock(mu_);
    return first_;
  }

 private:
  // A worker's counts, added to the store's counters once when it is done (or unwinding).
  struct Tally {
    explicit Tally(RowStore& store) : store(store) {}
    ~Tally() { store.counters_.AddReads(counts); }
    RowStore& store;
    ReadTally counts;
  };

  // Ops [first, n) of a warm batch from the page cache; the misses join plan_.pending. Run r
  // writes its misses to missed[r * kWarmRun...] and their count to missed_count[r].
  void ServeRestIfCached(ThreadPool& pool, size_t first) {
    const size_t n = plan_.ops.size();
    const size_t runs = (n - first + kWarmRun - 1) / kWarmRun;
    plan_.missed.resize(n - first);
    plan_.missed_count.assign(runs, 0);
    const size_t width = std::min(Cores(), (n - first + kWarmReadsPerThread - 1) / kWarmReadsPerThread);
    RunParallel(pool, runs, width, [this, first, n](size_t r) {
      Tally tally(store_);
      uint32_t* missed = &plan_.missed[r * kWarmRun];
      uint32_t count = 0;
      const size_t end = std::min(n, first + (r + 1) * kWarmRun);
      for (size_t k = first + r * kWarmRun; k < end; ++k) {
        if (!ServeIfCached(plan_.ops[k], &tally.counts)) missed[count++] = static_cast<uint32_t>(k);
      }
      plan_.missed_count[r] = count;
    });
    for (size_t r = 0; r < runs; ++r) {
      const uint32_t* missed = &plan_.missed[r * kWarmRun];
      plan_.pending.insert(plan_.pending.end(), missed, missed + plan_.missed_count[r]);
    }
  }

  void RunOnPool(ThreadPool& pool) {
    const size_t n = plan_.pending.size();
    if (n == 0) return;
    const size_t width = std::min(pool.size(), n);  // no more workers than reads
    const size_t run = std::clamp<size_t>(n / (std::max<size_t>(width, 1) * kRunsPerWorker), 1, kMaxRun);
    RunParallel(pool, (n + run - 1) / run, width, [this, n, run](size_t item) {
      Tally tally(store_);
      const size_t end = std::min(n, (item + 1) * run);
      for (size_t k = item * run; k < end; ++k) RunOp(plan_.ops[plan_.pending[k]], &tally.counts);
    });
  }

  // The io_uring engine issues every pending read from the store's submitting thread; this
  // thread waits for the last one.
  void RunUring() {
    if (plan_.pending.empty()) return;
    std::vector<ReadOp>& ops = plan_.engine_ops;
    ops.clear();
    for (uint32_t k : plan_.pending) ops.push_back(plan_.ops[k]);
    Status st = store_.uring_->Run(ops, plan_.pieces, out_);
    if (!st.ok()) {
      Fail(std::move(st));
      return;
    }
    Tally tally(store_);
    for (const ReadOp& op : ops) Count(op, &tally.counts);
  }

  void Fail(Status st) {
    std::lock_guard<std::mutex> lock(mu_);
    if (first_.ok()) first_ = std::move(st);
    failed_.store(true, std::memory_order_relaxed);
  }

  // A read that came back: counted, and its pages known cached from now on (see cached_map.h).
  void Count(const ReadOp& op, ReadTally* tally) {
    if (FileMap* map = store_.MapOf(op.file)) map->Mark(op.offset, op.len);
    tally->reads += 1;
    tally->bytes_read += op.len;
    tally->merged += op.count - 1;
  }

  void CopyPieces(const ReadOp& op, const uint8_t* buf) {
    for (uint32_t k = op.first; k < op.first + op.count; ++k) {
      const Piece& p = plan_.pieces[k];
      std::memcpy(out_ + p.dest, buf + (p.offset - op.offset), p.len);
    }
  }

  // The whole read from the page cache, or false (nothing is counted then).
  bool ServeIfCached(const ReadOp& op, ReadTally* tally) {
    ReadFile& f = *store_.files_[op.file];
    if (f.direct() || !f.nowait()) return false;
    const ReadContext ctx = store_.Context();
    if (op.into_dest) {
      if (!ReadIfCached(f, out_ + plan_.pieces[op.first].dest, op.len, op.offset, ctx)) return false;
    } else {
      uint8_t* buf = StagingBuffer(op.len);
      if (buf == nullptr || !ReadIfCached(f, buf, op.len, op.offset, ctx)) return false;
      CopyPieces(op, buf);
    }
    Count(op, tally);
    tally->inline_reads += 1;
    return true;
  }

  void RunOp(const ReadOp& op, ReadTally* tally) {
    if (failed_.load(std::memory_order_relaxed)) return;
    if (store_.closed()) {
      Fail(Status::Error(Code::E_STORE_CLOSED, "the row store was closed while this batch was in flight"));
      return;
    }
    ReadFile& f = *store_.files_[op.file];
    const ReadContext ctx = store_.Context();
    Status st;
    if (op.into_dest) {
      st = PreadAll(f, out_ + plan_.pieces[op.first].dest, op.len, op.need, op.offset, ctx);
    } else {
      uint8_t* buf = StagingBuffer(op.len);
      if (buf == nullptr) {
        Fail(Status::Error(Code::E_INTERNAL, "out of memory for a " + std::to_string(op.len) + "-byte read buffer"));
        return;
      }
      st = PreadAll(f, buf, op.len, op.need, op.offset, ctx);
      if (st.ok()) CopyPieces(op, buf);
    }
    if (!st.ok()) {
      Fail(std::move(st));
      return;
    }
    Count(op, tally);
  }

  RowStore& store_;
  const RowStore::Table& table_;
  uint8_t* out_;
  PlanMemory& plan_;
  std::mutex mu_;
  Status first_;
  std::atomic<bool> failed_{false};
};

Status RowStore::CheckBatch(uint32_t layer, const uint64_t* ids, size_t n, size_t out_len, const Table** table) const {
  if (closed()) return Status::Error(Code::E_STORE_CLOSED, "the row store is closed");
  *table = FindTable(layer);
  if (*table == nullptr) return CheckIds(layer, ids, n);
  // Positions, pieces (two a row) and reads are indexed with 32 bits.
  if (n > INT32_MAX) return Status::Error(Code::E_USAGE, "a batch holds at most 2147483647 ids");
  auto need = CheckedMul(n, (*table)->info.row_bytes);
  if (!need || *need > out_len) {
    return Status::Error(Code::E_USAGE, "the output buffer holds " + std::to_string(out_len) + " bytes but " +
                                            std::to_string(n) + " rows need " +
                                            (need ? std::to_string(*need) : "more"));
  }
  return CheckIds(layer, ids, n);
}

Status RowStore::Gather(ThreadPool& pool, uint32_t layer, const uint64_t* ids, size_t n, uint8_t* out, size_t out_len) {
  const Table* table = nullptr;
  Status st = CheckBatch(layer, ids, n, out_len, &table);
  if (!st.ok()) return st;
  if (!TableMapped(*table)) {
    st = GatherPlanned(pool, *table, ids, n, out);
  } else {
    // What the mapping could not serve is read into scratch rows, then put in place.
    thread_local std::vector<uint32_t> misses;
    thread_local std::vector<uint64_t> miss_ids;
    thread_local std::vector<uint8_t> miss_rows;
    const size_t missed = GatherMapped(&pool, *table, ids, n, out, &misses);
    if (missed == n) {
      st = GatherPlanned(pool, *table, ids, n, out);
    } else if (missed > 0) {
      const uint64_t rb = table->info.row_bytes;
      miss_ids.resize(missed);
      for (size_t k = 0; k < missed; ++k) miss_ids[k] = ids[misses[k]];
      miss_rows.resize(missed * rb);
      st = GatherPlanned(pool, *table, miss_ids.data(), missed, miss_rows.data());
      if (st.ok()) {
        for (size_t k = 0; k < missed; ++k) std::memcpy(out + misses[k] * rb, miss_rows.data() + k * rb, rb);
      }
    }
  }
  if (st.ok()) counters_.AddBatch(n);
  return st;
}

Status RowStore::GatherPlanned(ThreadPool& pool, const Table& table, const uint64_t* ids, size_t n, uint8_t* out) {
  // Borrowed from the store for this batch and given back however the batch ends.
  struct Lease {
    PlanMemoryPool& pool;
    std::unique_ptr<PlanMemory> plan;
    ~Lease() { pool.Give(std::move(plan)); }
  } lease{plan_memory_, plan_memory_.Take()};
  PlanMemory& plan = *lease.plan;
  DistinctRows(ids, n, options_.dedup, &plan.rows, &plan.copies, &plan.sort);
  BatchRun run(*this, table, out, plan);
  run.Plan();
  Status st = run.Execute(pool);
  if (!st.ok()) return st;
  const uint64_t rb = table.info.row_bytes;
  for (const auto& [to, from] : plan.copies) std::memcpy(out + to * rb, out + from * rb, rb);
  counters_.AddDuplicates(plan.copies.size());
  return Status::Ok();
}

}  // namespace spark
