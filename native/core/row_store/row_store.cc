#include "core/row_store/row_store.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>
#include <optional>

#include "core/base/checked.h"
#include "core/row_store/row_plan.h"
#include "core/threads/parallel.h"

namespace spark {

namespace {

Status Bad(const std::string& what, const std::string& path = {}) { return Status::Error(Code::E_USAGE, what, path); }

// End offset of the last row, or nullopt on overflow.
std::optional<uint64_t> Extent(uint64_t base, uint64_t count, uint64_t pitch) {
  auto bytes = CheckedMul(count, pitch);
  if (!bytes) return std::nullopt;
  return CheckedAdd(base, *bytes);
}

Status FitsInFile(const ReadFile& f, std::optional<uint64_t> need, uint32_t layer, const char* what) {
  if (!need) return Bad("layer " + std::to_string(layer) + ": " + what + " offsets overflow 64 bits", f.path());
  if (*need > f.size()) {
    return Status::Error(Code::E_SHARD_TRUNCATED,
                         "layer " + std::to_string(layer) + ": the " + what + " needs " + std::to_string(*need) +
                             " bytes but the file has " + std::to_string(f.size()) +
                             " (truncated or wrong offsets; re-download or re-pack)",
                         f.path());
  }
  return Status::Ok();
}

}  // namespace

Status RowStore::Open(const std::vector<TableSpec>& tables, const StoreOptions& options,
                      std::shared_ptr<RowStore>* out) {
  std::shared_ptr<RowStore> store(new RowStore());
  store->options_ = options;
  if (options.faults.any()) store->faults_ = std::make_unique<FaultInjector>(options.faults);
  if (tables.empty()) return Bad("a row store needs at least one table");
  for (const TableSpec& spec : tables) {
    Status st = store->AddTable(spec);
    if (!st.ok()) return st;
  }
  Status st = store->StartIoEngine();
  if (!st.ok()) return st;
  store->MapFiles();
  *out = std::move(store);
  return Status::Ok();
}

RowStore::~RowStore() = default;

// Tables that name the same file share its descriptor, but only when they asked for the same
// kind: a buffered table's unaligned reads would fail on an O_DIRECT descriptor.
Status RowStore::OpenFile(const std::string& path, bool want_direct, uint64_t probe_offset, uint32_t* index) {
  for (size_t i = 0; i < files_.size(); ++i) {
    if (files_[i]->path() == path && files_[i]->direct_requested() == want_direct) {
      *index = static_cast<uint32_t>(i);
      return Status::Ok();
    }
  }
  auto f = std::make_unique<ReadFile>();
  // Random ids: readahead would only pull pages nobody asked for into a cache that is GPU memory.
  Status st = f->Open(path, want_direct, probe_offset, options_.fadvise_random);
  if (!st.ok()) return st;
  files_.push_back(std::move(f));
  *index = static_cast<uint32_t>(files_.size() - 1);
  return Status::Ok();
}

Status RowStore::AddTable(const TableSpec& spec) {
  const uint32_t layer = LayerOf(spec);
  if (FindTable(layer) != nullptr) return Bad("layer " + std::to_string(layer) + " is given twice");
  auto t = std::make_unique<Table>();
  t->spec = spec;
  TableInfo& info = t->info;
  info.layer = layer;
  info.direct_active = false;
  info.resident = false;
  Status st = t->packed() != nullptr ? AddPacked(*t->packed(), t.get()) : AddSnapshot(*t->snapshot(), t.get());
  if (!st.ok()) return st;
  infos_.push_back(info);
  tables_.push_back(std::move(t));
  return Status::Ok();
}

Status RowStore::AddSnapshot(const SnapshotTable& spec, Table* t) {
  const std::string layer = "layer " + std::to_string(spec.layer);
  TableInfo& info = t->info;
  info.direct_requested = false;
  if (spec.dim == 0 || spec.dim % 32 != 0) return Bad(layer + ": dim must be a positive multiple of 32");
  t->scale_bytes = spec.dim / 32;
  const IdRange table{0, spec.rows};
  info.ids = spec.range.value_or(table);
  if (!info.ids.valid() || !info.ids.within(table)) {
    return Bad(layer + ": range " + info.ids.text() + " is not inside the table " + table.text());
  }
  info.row_bytes = spec.dim + t->scale_bytes;
  Status st = OpenFile(spec.weight_path, false, 0, &t->weight_file);
  if (st.ok()) st = OpenFile(spec.scale_path, false, 0, &t->scale_file);
  if (!st.ok()) return st;
  st =
      FitsInFile(*files_[t->weight_file], Extent(spec.weight_offset, spec.rows, spec.dim), spec.layer, "weight tensor");
  if (st.ok()) {
    st = FitsInFile(*files_[t->scale_file], Extent(spec.scale_offset, spec.rows, t->scale_bytes), spec.layer,
                    "scale tensor");
  }
  if (st.ok()) {
    st = CheckColumnHoles(files_[t->weight_file]->fd(), spec.weight_path, spec.layer, "weight", spec.weight_offset,
                          spec.dim, info.ids, spec.holes);
  }
  if (st.ok()) {
    st = CheckColumnHoles(files_[t->scale_file]->fd(), spec.scale_path, spec.layer, "scale", spec.scale_offset,
                          t->scale_bytes, info.ids, spec.holes);
  }
  if (!st.ok()) return st;
  if (spec.resident_scales) {
    const IdRange& r = *spec.resident_scales;
    if (!r.valid() || !r.within(info.ids)) {
      return Bad(layer + ": resident scale range " + r.text() + " is not inside the readable rows " + info.ids.text());
    }
    info.resident = true;
  }
  return Status::Ok();
}

Status RowStore::AddPacked(const PackedTable& spec, Table* t) {
  const std::string layer = "layer " + std::to_string(spec.layer);
  TableInfo& info = t->info;
  info.direct_requested = spec.direct;
  if (!spec.ids.valid()) return Bad(layer + ": packed range start is after its end");
  if (spec.row_bytes == 0 || spec.stride < spec.row_bytes) {
    return Bad(layer + ": stride must be at least rowBytes (and rowBytes > 0)", spec.path);
  }
  info.ids = spec.ids;
  info.row_bytes = spec.row_bytes;
  const uint64_t n = spec.ids.size();
  std::optional<uint64_t> need;
  if (spec.layout == PackedLayout::kPage) {
    if (spec.stride > kPageBytes) return Bad(layer + ": page layout needs stride <= 4096", spec.path);
    if (spec.data_offset % kPageBytes != 0)
      return Bad(layer + ": page layout needs a 4096-aligned dataOffset", spec.path);
    t->rows_per_page = kPageBytes / spec.stride;
    uint64_t last = n == 0 ? 0 : n - 1;
    need = Extent(spec.data_offset, last / t->rows_per_page, kPageBytes);
    if (need) need = CheckedAdd(*need, (last % t->rows_per_page) * spec.stride + (n == 0 ? 0 : spec.row_bytes));
  } else {
    need = Extent(spec.data_offset, n, spec.stride);
  }
  Status st = OpenFile(spec.path, spec.direct, spec.data_offset, &t->file);
  if (st.ok()) st = FitsInFile(*files_[t->file], need, spec.layer, "packed rows");
  if (!st.ok()) return st;
  info.direct_active = files_[t->file]->direct();
  return Status::Ok();
}

const RowStore::Table* RowStore::FindTable(uint32_t layer) const {
  for (const auto& t : tables_) {
    if (t->info.layer == layer) return t.get();
  }
  return nullptr;
}

const TableInfo* RowStore::Find(uint32_t layer) const {
  const Table* t = FindTable(layer);
  return t ? &t->info : nullptr;
}

std::vector<TableInfo> RowStore::Tables() const { return infos_; }

Status RowStore::LoadResident(ThreadPool& pool) {
  constexpr uint64_t kChunk = 8 << 20;
  std::lock_guard<std::mutex> load_lock(resident_mu_);
  for (auto& t : tables_) {
    if (!t->info.resident || t->resident.load(std::memory_order_acquire) != nullptr) continue;
    const SnapshotTable& s = *t->snapshot();  // only a snapshot's info is ever resident
    const IdRange& r = *s.resident_scales;
    auto bytes = CheckedMul(r.size(), t->scale_bytes);
    if (!bytes || *bytes > SIZE_MAX) return Bad("layer " + std::to_string(s.layer) + ": resident scales too large");
    std::unique_ptr<uint8_t[]> data(new (std::nothrow) uint8_t[*bytes == 0 ? 1 : *bytes]);
    if (!data) {
      return Status::Error(Code::E_INTERNAL,
                           "out of memory holding " + std::to_string(*bytes) + " bytes of resident scales");
    }
    ReadFile& f = *files_[t->scale_file];
    const ReadContext ctx = Context();
    uint64_t base = s.scale_offset + r.start * t->scale_bytes;
    size_t chunks = static_cast<size_t>((*bytes + kChunk - 1) / kChunk);
    std::mutex mu;
    Status first;
    uint8_t* dst = data.get();
    RunParallel(pool, chunks, pool.size(), [&](size_t c) {
      uint64_t off = c * kChunk;
      uint64_t len = std::min<uint64_t>(kChunk, *bytes - off);
      Status st = PreadAll(f, dst + off, len, len, base + off, ctx);
      if (!st.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (first.ok()) first = st;
      }
    });
    if (!first.ok()) return first;
    t->resident_owner = std::move(data);
    t->resident.store(t->resident_owner.get(), std::memory_order_release);
    resident_bytes_.fetch_add(*bytes, std::memory_order_relaxed);
  }
  return Status::Ok();
}

Status RowStore::CheckIds(uint32_t layer, const uint64_t* ids, size_t n) const {
  const Table* t = FindTable(layer);
  if (t == nullptr)
    return Status::Error(Code::E_ROW_RANGE, "layer " + std::to_string(layer) + " is not in this row store");
  for (size_t i = 0; i < n; ++i) {
    if (!t->info.ids.contains(ids[i])) {
      const char* where = t->packed() != nullptr ? "this pack's range"
                          : t->snapshot()->range ? "this sparse copy's range"
                                                 : "the table";
      return Status::Error(Code::E_ROW_RANGE, "row id " + std::to_string(ids[i]) + " (batch index " +
                                                  std::to_string(i) + ") is outside " + where + " " +
                                                  t->info.ids.text() + " of layer " + std::to_string(layer));
    }
  }
  return Status::Ok();
}

StoreStats RowStore::Stats() const {
  StoreStats s;
  const StripedCounters::Totals t = counters_.Sum();
  s.batches = t.batches;
  s.rows = t.rows;
  s.reads = t.reads.reads;
  s.inline_reads = t.reads.inline_reads;
  s.bytes_read = t.reads.bytes_read;
  s.duplicates = t.duplicates;
  s.merged = t.reads.merged;
  s.retries = read_counters_.retries.load();
  s.error_retries = read_counters_.error_retries.load();
  s.reopens = read_counters_.reopens.load();
  s.resident_bytes = resident_bytes_.load();
  s.mapped_rows = t.mapped_rows;
  s.mapped_stale = t.mapped_stale;
  for (const auto& m : maps_) s.mapped_files += m != nullptr;
  s.io_engine = uring_ ? "uring" : "pread";
  s.io_engine_note = io_engine_note_;
  return s;
}

}  // namespace spark
