#include "mmap_gather.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/base/checked.h"
#include "core/threads/parallel.h"

namespace spark {

namespace {

std::string LayerName(uint32_t layer) { return "layer " + std::to_string(layer); }

// Fewer rows than this per worker cost more in hand-off than they save in copying.
constexpr size_t kMinRowsPerWorker = 16;

}  // namespace

Status MmapGather::Open(const std::vector<MmapTable>& tables, const MmapGatherOptions& options,
                        std::shared_ptr<MmapGather>* out) {
  std::shared_ptr<MmapGather> g(new MmapGather());
  g->options_ = options;
  if (tables.empty()) return Status::Error(Code::E_USAGE, "an mmap gather needs at least one table");
  for (const MmapTable& t : tables) {
    Status st = g->Add(t);
    if (!st.ok()) return st;
  }
  *out = std::move(g);
  return Status::Ok();
}

MmapGather::~MmapGather() {
  for (Mapping& m : maps_) {
    if (m.base != nullptr) munmap(m.base, m.size);
    if (m.fd >= 0) close(m.fd);
  }
}

Status MmapGather::Map(const std::string& path, uint32_t* index) {
  for (size_t i = 0; i < maps_.size(); ++i) {
    if (maps_[i].path == path) {
      *index = static_cast<uint32_t>(i);
      return Status::Ok();
    }
  }
  Mapping m;
  m.path = path;
  // O_NONBLOCK: a FIFO planted where a shard should be must not hang the open.
  m.fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (m.fd < 0) return ErrnoStatus(errno, "open", path);
  maps_.push_back(m);  // closed by the destructor from here on
  Mapping& kept = maps_.back();
  struct stat st;
  if (fstat(kept.fd, &st) != 0) return ErrnoStatus(errno, "fstat", path);
  if (!S_ISREG(st.st_mode)) return Status::Error(Code::E_SHARD_MISSING, "is not a regular file", path);
  if (st.st_size <= 0) return Status::Error(Code::E_SHARD_TRUNCATED, "is empty", path);
  kept.size = static_cast<uint64_t>(st.st_size);
  if (kept.size > SIZE_MAX) return Status::Error(Code::E_USAGE, "is too large to map on this machine", path);
  void* base = mmap(nullptr, static_cast<size_t>(kept.size), PROT_READ, MAP_SHARED, kept.fd, 0);
  if (base == MAP_FAILED) return ErrnoStatus(errno, "mmap", path);
  kept.base = static_cast<uint8_t*>(base);
  // Random ids: read-around would fault in neighbours nobody asked for (page cache is GPU memory).
  madvise(kept.base, static_cast<size_t>(kept.size), MADV_RANDOM);
  *index = static_cast<uint32_t>(maps_.size() - 1);
  return Status::Ok();
}

Status MmapGather::Add(const MmapTable& t) {
  const std::string name = LayerName(t.layer);
  if (Find(t.layer) != nullptr) return Status::Error(Code::E_USAGE, name + " is given twice");
  if (t.dim == 0 || t.dim % 32 != 0)
    return Status::Error(Code::E_USAGE, name + ": dim must be a positive multiple of 32");
  if (!t.owned.valid() || t.owned.end > t.rows)
    return Status::Error(Code::E_USAGE, name + ": the owned range is not inside the table");
  Table table{t, 0, 0};
  Status st = Map(t.weight_path, &table.weight);
  if (st.ok()) st = Map(t.scale_path, &table.scale);
  if (!st.ok()) return st;
  const struct {
    const Mapping& map;
    uint64_t offset, pitch;
    const char* what;
  } columns[] = {{maps_[table.weight], t.weight_offset, t.dim, "weight"},
                 {maps_[table.scale], t.scale_offset, t.dim / 32, "scale"}};
  for (const auto& c : columns) {
    auto bytes = CheckedMul(t.rows, c.pitch);
    auto end = bytes ? CheckedAdd(c.offset, *bytes) : std::nullopt;
    if (!end || *end > c.map.size) {
      return Status::Error(Code::E_SHARD_TRUNCATED,
                           name + ": the " + c.what + " tensor does not fit in the file's " +
                               std::to_string(c.map.size) + " bytes (truncated or wrong offsets)",
                           c.map.path);
    }
  }
  tables_.push_back(table);
  return Status::Ok();
}

const MmapGather::Table* MmapGather::Find(uint32_t layer) const {
  for (const Table& t : tables_) {
    if (t.spec.layer == layer) return &t;
  }
  return nullptr;
}

uint64_t MmapGather::RowBytes(uint32_t layer) const {
  const Table* t = Find(layer);
  return t == nullptr ? 0 : t->spec.dim + t->spec.dim / 32;
}

Status MmapGather::Gather(ThreadPool& pool, size_t workers, uint32_t layer, const uint64_t* ids, size_t n, uint8_t* out,
                          size_t out_len) {
  const Table* t = Find(layer);
  if (t == nullptr) return Status::Error(Code::E_ROW_RANGE, LayerName(layer) + " is not in this gather");
  const MmapTable& s = t->spec;
  const uint64_t dim = s.dim, sb = s.dim / 32, rb = dim + sb;
  auto need = CheckedMul(n, rb);
  if (!need || *need > out_len) return Status::Error(Code::E_USAGE, "the output buffer is too small for the batch");
  for (size_t i = 0; i < n; ++i) {
    if (ids[i] >= s.rows) {
      return Status::Error(Code::E_ROW_RANGE, "row id " + std::to_string(ids[i]) + " (batch index " +
                                                  std::to_string(i) + ") is outside the table [0, " +
                                                  std::to_string(s.rows) + ") of " + LayerName(layer));
    }
  }
  const Mapping& wm = maps_[t->weight];
  const Mapping& sm = maps_[t->scale];
  if (options_.willneed) {
    for (size_t i = 0; i < n; ++i) {
      if (!s.owned.contains(ids[i])) continue;
      posix_fadvise(wm.fd, static_cast<off_t>(s.weight_offset + ids[i] * dim), static_cast<off_t>(dim),
                    POSIX_FADV_WILLNEED);
      posix_fadvise(sm.fd, static_cast<off_t>(s.scale_offset + ids[i] * sb), static_cast<off_t>(sb),
                    POSIX_FADV_WILLNEED);
    }
  }
  const size_t parts = std::max<size_t>(1, std::min(std::max<size_t>(workers, 1), n / kMinRowsPerWorker));
  std::atomic<uint64_t> zeros{0};
  RunParallel(pool, parts, parts, [&](size_t p) {
    uint64_t z = 0;
    for (size_t i = n * p / parts; i < n * (p + 1) / parts; ++i) {
      uint8_t* dst = out + i * rb;
      const uint64_t id = ids[i];
      if (!s.owned.contains(id)) {
        std::memset(dst, 0, rb);
        ++z;
        continue;
      }
      std::memcpy(dst, wm.base + s.weight_offset + id * dim, dim);
      std::memcpy(dst + dim, sm.base + s.scale_offset + id * sb, sb);
    }
    zeros.fetch_add(z, std::memory_order_relaxed);
  });
  batches_.fetch_add(1, std::memory_order_relaxed);
  rows_.fetch_add(n, std::memory_order_relaxed);
  zero_rows_.fetch_add(zeros.load(), std::memory_order_relaxed);
  return Status::Ok();
}

}  // namespace spark
