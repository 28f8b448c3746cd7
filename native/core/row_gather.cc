// RowStore::Gather: plan a batch on the calling thread, then fan its reads out over the pool.
#include <cstring>
#include <mutex>

#include "core/checked.h"
#include "core/parallel.h"
#include "core/row_plan.h"
#include "core/row_store.h"

namespace spark {

class BatchRun {
 public:
  BatchRun(RowStore& store, const RowStore::Table& table, uint8_t* out) : store_(store), table_(table), out_(out) {}

  // Maps distinct rows to pieces of files and groups the pieces into reads.
  void Plan(const std::vector<DistinctRow>& rows) {
    const TableSpec& s = table_.spec;
    const StoreOptions& o = store_.options_;
    const uint64_t rb = table_.info.row_bytes;
    bool sorted = o.dedup;
    pieces_.reserve(rows.size() * (s.kind == TableKind::kSnapshot ? 2 : 1));
    if (s.kind == TableKind::kPacked) {
      for (const DistinctRow& r : rows) {
        uint64_t local = r.id - s.start;
        uint64_t off = s.layout == PackedLayout::kPage
                           ? s.data_offset + local / table_.rows_per_page * kPageBytes + local % table_.rows_per_page * s.stride
                           : s.data_offset + local * s.stride;
        pieces_.push_back({off, s.row_bytes, r.pos * rb});
      }
      const ReadFile& f = *store_.files_[table_.file];
      PlanReads(pieces_, 0, pieces_.size(), table_.file, o.merge && sorted, o.max_merge_bytes,
                f.direct() ? kDirectAlign : 1, &ops_);
      return;
    }
    const uint64_t sb = table_.scale_bytes;
    // Null until LoadResident has finished this table: then scales come from the file.
    const uint8_t* resident = table_.resident.load(std::memory_order_acquire);
    for (const DistinctRow& r : rows) pieces_.push_back({s.weight_offset + r.id * s.dim, s.dim, r.pos * rb});
    size_t weights = pieces_.size();
    for (const DistinctRow& r : rows) {
      uint64_t dest = r.pos * rb + s.dim;
      if (resident != nullptr && r.id >= s.resident_start && r.id < s.resident_end) {
        std::memcpy(out_ + dest, resident + (r.id - s.resident_start) * sb, sb);
      } else {
        pieces_.push_back({s.scale_offset + r.id * sb, sb, dest});
      }
    }
    PlanReads(pieces_, 0, weights, table_.weight_file, o.merge && sorted, o.max_merge_bytes, 1, &ops_);
    PlanReads(pieces_, weights, pieces_.size(), table_.scale_file, o.merge && sorted, o.max_merge_bytes, 1, &ops_);
  }

  Status Run(ThreadPool& pool) {
    if (store_.uring_) return RunUring();
    RunParallel(pool, ops_.size(), pool.size(), [this](size_t i) { RunOp(ops_[i]); });
    std::lock_guard<std::mutex> lock(mu_);
    return first_;
  }

 private:
  // The io_uring engine issues every read of the batch from the store's submitting thread;
  // this thread waits for the last one.
  Status RunUring() {
    Status st = store_.uring_->Run(ops_, pieces_, out_);
    if (!st.ok()) return st;
    uint64_t bytes = 0, merged = 0;
    for (const ReadOp& op : ops_) {
      bytes += op.len;
      merged += op.count - 1;
    }
    store_.reads_.fetch_add(ops_.size(), std::memory_order_relaxed);
    store_.bytes_read_.fetch_add(bytes, std::memory_order_relaxed);
    store_.merged_.fetch_add(merged, std::memory_order_relaxed);
    return st;
  }

  void Fail(Status st) {
    std::lock_guard<std::mutex> lock(mu_);
    if (first_.ok()) first_ = std::move(st);
    failed_.store(true, std::memory_order_relaxed);
  }

  void RunOp(const ReadOp& op) {
    if (failed_.load(std::memory_order_relaxed)) return;
    if (store_.closed()) {
      Fail(Status::Error(Code::E_STORE_CLOSED, "the row store was closed while this batch was in flight"));
      return;
    }
    ReadFile& f = *store_.files_[op.file];
    const ReadContext ctx = store_.Context();
    Status st;
    if (op.into_dest) {
      st = PreadAll(f, out_ + pieces_[op.first].dest, op.len, op.need, op.offset, ctx);
    } else {
      // Staging memory per pool thread, reused across batches: aligned for O_DIRECT.
      thread_local AlignedBuffer scratch;
      uint8_t* buf = scratch.Reserve(op.len);
      if (buf == nullptr) {
        Fail(Status::Error(Code::E_INTERNAL, "out of memory for a " + std::to_string(op.len) + "-byte read buffer"));
        return;
      }
      st = PreadAll(f, buf, op.len, op.need, op.offset, ctx);
      if (st.ok()) {
        for (uint32_t k = op.first; k < op.first + op.count; ++k) {
          const Piece& p = pieces_[k];
          std::memcpy(out_ + p.dest, buf + (p.offset - op.offset), p.len);
        }
      }
    }
    if (!st.ok()) {
      Fail(std::move(st));
      return;
    }
    store_.reads_.fetch_add(1, std::memory_order_relaxed);
    store_.bytes_read_.fetch_add(op.len, std::memory_order_relaxed);
    if (op.count > 1) store_.merged_.fetch_add(op.count - 1, std::memory_order_relaxed);
  }

  RowStore& store_;
  const RowStore::Table& table_;
  uint8_t* out_;
  std::vector<Piece> pieces_;
  std::vector<ReadOp> ops_;
  std::mutex mu_;
  Status first_;
  std::atomic<bool> failed_{false};
};

Status RowStore::Gather(ThreadPool& pool, uint32_t layer, const uint64_t* ids, size_t n, uint8_t* out,
                        size_t out_len) {
  if (closed()) return Status::Error(Code::E_STORE_CLOSED, "the row store is closed");
  const Table* table = FindTable(layer);
  if (table == nullptr) return CheckIds(layer, ids, n);
  if (n > UINT32_MAX) return Status::Error(Code::E_USAGE, "a batch holds at most 4294967295 ids");
  auto need = CheckedMul(n, table->info.row_bytes);
  if (!need || *need > out_len) {
    return Status::Error(Code::E_USAGE, "the output buffer holds " + std::to_string(out_len) + " bytes but " +
                                            std::to_string(n) + " rows need " + (need ? std::to_string(*need) : "more"));
  }
  Status st = CheckIds(layer, ids, n);
  if (!st.ok()) return st;
  std::vector<DistinctRow> rows;
  std::vector<std::pair<uint32_t, uint32_t>> copies;
  DistinctRows(ids, n, options_.dedup, &rows, &copies);
  BatchRun run(*this, *table, out);
  run.Plan(rows);
  st = run.Run(pool);
  if (!st.ok()) return st;
  const uint64_t rb = table->info.row_bytes;
  for (const auto& [to, from] : copies) std::memcpy(out + to * rb, out + from * rb, rb);
  batches_.fetch_add(1, std::memory_order_relaxed);
  rows_.fetch_add(n, std::memory_order_relaxed);
  duplicates_.fetch_add(copies.size(), std::memory_order_relaxed);
  return Status::Ok();
}

}  // namespace spark
