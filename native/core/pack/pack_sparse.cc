#include "core/pack/pack_sparse.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "core/base/checked.h"
#include "core/base/crc32.h"
#include "core/io/durable_file.h"

namespace spark {

namespace {

constexpr uint64_t kMaxDim = 1 << 20;
constexpr uint64_t kMaxChunkBytes = uint64_t{1} << 30;  // one chunk is held in memory per worker
constexpr uint64_t kMaxHeaderBytes = 8 + 100'000'000;   // safetensors caps N at 100,000,000

Status Bad(const SparseShardJob& job, const std::string& what) {
  return Status::Error(Code::E_USAGE, "sparse pack job: " + what, job.source_path);
}

// Reads the source's first header_bytes and checks they are still the header planned for.
Status ReadHeader(const SparseShardJob& job, int fd, std::string* out) {
  uint8_t len[8];
  Status s = PreadExact(fd, len, 8, 0, job.source_path, Code::E_SOURCE_CHANGED);
  if (!s.ok()) return s;
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t{len[i]} << (8 * i);
  auto total = CheckedAdd(n, 8);
  if (!total || *total != job.header_bytes) {
    return Status::Error(Code::E_SOURCE_CHANGED,
                         "the safetensors header is no longer " + std::to_string(job.header_bytes) +
                             " bytes: the shard changed since the pack was planned; re-run spark pack",
                         job.source_path);
  }
  out->resize(job.header_bytes);
  s = PreadExact(fd, out->data(), out->size(), 0, job.source_path, Code::E_SOURCE_CHANGED);
  if (!s.ok()) return s;
  if (Crc32(0, out->data(), out->size()) != job.header_crc) {
    return Status::Error(Code::E_SOURCE_CHANGED,
                         "the safetensors header changed since the pack was planned; re-run spark pack",
                         job.source_path);
  }
  return Status::Ok();
}

struct Runs {
  uint64_t weight_off, weight_len, scale_off, scale_len;
};

class SparseTarget : public PackTarget {
 public:
  explicit SparseTarget(const SparseShardJob& job) : job_(job) {
    uint64_t k = 0;
    for (const auto& t : job.tables) {
      first_chunk_.push_back(k);
      k += SparseChunkCount(t);
    }
    chunks_ = k;
  }

  uint64_t chunk_count() const override { return chunks_; }
  uint64_t chunk_bytes(uint64_t k) const override {
    Runs r = RunsOf(k);
    return r.weight_len + r.scale_len;
  }
  uint64_t total_bytes() const override {
    uint64_t n = 0;
    for (const auto& t : job_.tables) n += t.rows.size() * (t.dim + t.dim / 32);
    return n;
  }

  // The byte runs of chunk k (bounds checked once by CheckSparseJob).
  Runs RunsOf(uint64_t k) const {
    size_t t = first_chunk_.size() - 1;
    while (t > 0 && first_chunk_[t] > k) --t;
    const SparseTable& tab = job_.tables[t];
    uint64_t a = tab.rows.start + (k - first_chunk_[t]) * tab.chunk_rows;
    uint64_t b = tab.rows.end - a < tab.chunk_rows ? tab.rows.end : a + tab.chunk_rows;
    uint64_t sb = tab.dim / 32;
    return {tab.weight_offset + a * tab.dim, (b - a) * tab.dim, tab.scale_offset + a * sb, (b - a) * sb};
  }

  Status CheckSources() const override {
    Fd fd;
    Status s = OpenFile(job_.source_path, O_RDONLY, &fd);
    uint64_t size = 0;
    if (s.ok()) s = FileSize(fd.get(), job_.source_path, &size);
    if (s.ok() && size != job_.source_bytes) {
      return Status::Error(Code::E_SOURCE_CHANGED,
                           "is " + std::to_string(size) + " bytes, the pack was planned for " +
                               std::to_string(job_.source_bytes) + ": the snapshot changed; re-run spark pack",
                           job_.source_path);
    }
    std::string header;
    if (s.ok()) s = ReadHeader(job_, fd.get(), &header);
    return s;
  }

  Status Prepare(int fd, const std::string& path) const override {
    uint64_t size = 0;
    Status s = FileSize(fd, path, &size);
    if (s.ok() && size != job_.source_bytes && ::ftruncate(fd, static_cast<off_t>(job_.source_bytes)) != 0) {
      s = ErrnoStatus(errno, "truncate", path);
    }
    // Reserve exactly what will be written: the header and the rows' two runs per table.
    if (s.ok()) s = Reserve(fd, path, 0, job_.header_bytes);
    for (const auto& t : job_.tables) {
      if (s.ok()) s = Reserve(fd, path, t.weight_offset + t.rows.start * t.dim, t.rows.size() * t.dim);
      if (s.ok()) s = Reserve(fd, path, t.scale_offset + t.rows.start * (t.dim / 32), t.rows.size() * (t.dim / 32));
    }
    Fd src;
    std::string header;
    if (s.ok()) s = OpenFile(job_.source_path, O_RDONLY, &src);
    if (s.ok()) s = ReadHeader(job_, src.get(), &header);
    if (s.ok()) s = PwriteFull(fd, header.data(), header.size(), 0, path);
    return s;
  }

  class Worker : public PackTarget::Worker {
   public:
    explicit Worker(const SparseTarget& t) : t_(t) {}
    Status Open() {
      // Two descriptors: the weight and the scale runs are two sequential streams.
      const bool direct = t_.job_.file.direct_io;
      const DirectRefusal refusal = t_.job_.file.direct_refusal_for_tests;
      Status s = weight_.Open(t_.job_.source_path, direct, refusal);
      return s.ok() ? scale_.Open(t_.job_.source_path, direct, refusal) : s;
    }
    bool ReadsDirect() const override { return weight_.direct() && scale_.direct(); }
    // Each run is read into its slot by the placement rule (core/pack/span_io.h): it is written
    // back at the same offset, so its aligned middle goes out with O_DIRECT and only its own
    // bytes are written (the holes around the rank's rows stay holes).
    Status Stage(uint64_t k, int slot, uint32_t* crc) override {
      Runs r = t_.RunsOf(k);
      Status s = ReadRun(&weight_, r.weight_off, r.weight_len, &slots_[slot].weight, crc, 0);
      return s.ok() ? ReadRun(&scale_, r.scale_off, r.scale_len, &slots_[slot].scale, crc, *crc) : s;
    }
    Status Write(uint64_t k, int slot, const SpanWriter& out) override {
      Runs r = t_.RunsOf(k);
      Status s = WriteRun(out, r.weight_off, r.weight_len, &slots_[slot].weight);
      return s.ok() ? WriteRun(out, r.scale_off, r.scale_len, &slots_[slot].scale) : s;
    }
    Status Recheck(uint64_t k, int fd, const std::string& path, uint32_t* crc, bool* complete) override {
      Runs r = t_.RunsOf(k);
      buf_.resize(r.weight_len > r.scale_len ? r.weight_len : r.scale_len);
      *crc = 0;
      *complete = false;
      const uint64_t offs[2] = {r.weight_off, r.scale_off}, lens[2] = {r.weight_len, r.scale_len};
      for (int i = 0; i < 2; ++i) {
        size_t got = 0;
        Status s = PreadFull(fd, buf_.data(), lens[i], offs[i], path, &got);
        if (!s.ok()) return s;
        if (t_.job_.file.drop_cache) DropCache(fd, offs[i], got);
        if (got != lens[i]) return Status::Ok();
        *crc = Crc32(*crc, buf_.data(), got);
      }
      *complete = true;
      return Status::Ok();
    }

   private:
    Status ReadRun(SpanReader* file, uint64_t off, uint64_t len, AlignedBuffer* buf, uint32_t* crc, uint32_t seed) {
      uint8_t* base = buf->Reserve(SpanBufferBytes(off, len));
      if (base == nullptr) return Status::Error(Code::E_IO, "out of memory for a chunk", t_.job_.source_path);
      Status s = file->ReadExact(off, len, base, Code::E_SOURCE_CHANGED);
      if (!s.ok()) return s;
      if (t_.job_.drop_source_cache) file->DropBehind(off, len);
      *crc = Crc32(seed, base + SpanLead(off), len);
      return Status::Ok();
    }
    static Status WriteRun(const SpanWriter& out, uint64_t off, uint64_t len, AlignedBuffer* buf) {
      uint8_t* base = buf->Reserve(SpanBufferBytes(off, len));  // the staged bytes: same size, same memory
      Status s = out.Write(off, base + SpanLead(off), len);
      if (s.ok()) out.StartWriteback(off, len);
      return s;
    }

    struct Slot {
      AlignedBuffer weight, scale;
    };
    const SparseTarget& t_;
    SpanReader weight_, scale_;
    Slot slots_[2];
    std::vector<uint8_t> buf_;  // the re-check's
  };

  Status NewWorker(std::unique_ptr<PackTarget::Worker>* out) const override { return MakeWorker<Worker>(*this, out); }

  void DropWritten(int fd, uint64_t k) const override {
    Runs r = RunsOf(k);
    DropCache(fd, r.weight_off, r.weight_len);
    DropCache(fd, r.scale_off, r.scale_len);
  }

 private:
  static Status Reserve(int fd, const std::string& path, uint64_t offset, uint64_t len) {
    if (len == 0) return Status::Ok();
    if (::fallocate(fd, 0, static_cast<off_t>(offset), static_cast<off_t>(len)) == 0) return Status::Ok();
    int err = errno;
    // Filesystems that cannot reserve find a full disk at the write instead.
    if (err == EOPNOTSUPP || err == ENOSYS || err == EINVAL) return Status::Ok();
    return ErrnoStatus(err, "reserving " + std::to_string(len) + " bytes", path).At(offset);
  }

  const SparseShardJob& job_;
  std::vector<uint64_t> first_chunk_;
  uint64_t chunks_ = 0;
};

}  // namespace

uint64_t SparseChunkCount(const SparseTable& t) {
  if (t.chunk_rows == 0 || t.rows.end <= t.rows.start) return 0;
  return (t.rows.size() - 1) / t.chunk_rows + 1;
}

Status CheckSparseJob(const SparseShardJob& job) {
  if (job.header_bytes < 8 || job.header_bytes > kMaxHeaderBytes || job.header_bytes > job.source_bytes) {
    return Bad(job, "header of " + std::to_string(job.header_bytes) + " bytes does not fit the shard");
  }
  if (job.tables.empty()) return Bad(job, "no tables");
  uint64_t chunks = 0;
  for (const auto& t : job.tables) {
    if (t.dim == 0 || t.dim % 32 != 0 || t.dim > kMaxDim) {
      return Bad(job,
                 "row dimension must be a positive multiple of 32 (at most 1048576), got " + std::to_string(t.dim));
    }
    auto chunk = CheckedMul(t.chunk_rows, t.dim);
    if (t.chunk_rows == 0 || !chunk || *chunk > kMaxChunkBytes) {
      return Bad(job, "a chunk of " + std::to_string(t.chunk_rows) + " rows must be 1 row to 1 GiB");
    }
    if (!t.rows.valid()) return Bad(job, "range " + t.rows.text() + " starts after its end");
    auto w_end = CheckedMul(t.rows.end, t.dim);
    if (w_end) w_end = CheckedAdd(t.weight_offset, *w_end);
    auto s_end = CheckedMul(t.rows.end, t.dim / 32);
    if (s_end) s_end = CheckedAdd(t.scale_offset, *s_end);
    if (!w_end || !s_end || *w_end > job.source_bytes || *s_end > job.source_bytes) {
      return Status::Error(Code::E_SOURCE_CHANGED,
                           "rows up to " + std::to_string(t.rows.end) + " end past the shard's " +
                               std::to_string(job.source_bytes) + " bytes: the snapshot is truncated or changed",
                           job.source_path);
    }
    if (t.weight_offset < job.header_bytes || t.scale_offset < job.header_bytes) {
      return Bad(job, "a tensor starts inside the header");
    }
    chunks += SparseChunkCount(t);
  }
  if (chunks > (uint64_t{1} << 32)) return Bad(job, "too many chunks: use larger chunks");
  return Status::Ok();
}

Status PackSparseShard(const SparseShardJob& job, PackProgress* progress, PackResult* result) {
  Status s = CheckSparseJob(job);
  if (!s.ok()) return s;
  SparseTarget target(job);
  s = PackFile(job.file, target, progress, result);
  if (s.ok() && job.drop_source_cache) {
    // Dropping behind each chunk misses pages the kernel could not let go of at that moment
    // (read ahead, or still on another CPU's LRU list): one last sweep over what was read.
    Fd fd;
    if (OpenFile(job.source_path, O_RDONLY, &fd).ok()) {
      for (const auto& t : job.tables) {
        DropCache(fd.get(), t.weight_offset + t.rows.start * t.dim, t.rows.size() * t.dim);
        DropCache(fd.get(), t.scale_offset + t.rows.start * (t.dim / 32), t.rows.size() * (t.dim / 32));
      }
    }
  }
  return s;
}

}  // namespace spark
