#include "core/pack/pack.h"

#include <fcntl.h>

#include <vector>

#include "core/base/crc32.h"
#include "core/io/durable_file.h"
#include "core/pack/pack_chunks.h"

namespace spark {

Status CheckHeaderBlock(const std::string& block) {
  if (block.size() != kPackHeaderBytes) {
    return Status::Error(Code::E_USAGE, "a header block is " + std::to_string(kPackHeaderBytes) + " bytes, got " +
                                            std::to_string(block.size()));
  }
  return Status::Ok();
}

namespace {

class DenseTarget : public PackTarget {
 public:
  explicit DenseTarget(const PackJob& job) : job_(job), g_(job.geometry) {}

  uint64_t chunk_count() const override { return g_.chunk_count(); }
  uint64_t chunk_bytes(uint64_t k) const override { return g_.Chunk(k).bytes; }
  uint64_t total_bytes() const override { return g_.data_bytes(); }

  Status CheckSources() const override {
    Status s = CheckHeaderBlock(job_.header);
    if (!s.ok()) return s;
    return CheckSourceRange(job_.weight, job_.scale, job_.start, g_);
  }

  Status Prepare(int fd, const std::string& path) const override {
    uint64_t size = 0;
    Status s = FileSize(fd, path, &size);
    if (s.ok() && size != g_.file_bytes()) s = ReserveFile(fd, g_.file_bytes(), path);
    if (s.ok()) s = CheckHeaderBlock(job_.header);
    if (s.ok()) s = PwriteFull(fd, job_.header.data(), job_.header.size(), 0, path);
    return s;
  }

  class Worker : public PackTarget::Worker {
   public:
    explicit Worker(const DenseTarget& t) : t_(t) {}
    Status Open() {
      // Own descriptors: each worker's buffered reads get their own readahead state.
      const PackJob& j = t_.job_;
      return reader_.Open(j.weight, j.scale, j.start, j.file.direct_io, j.drop_source_cache,
                          j.file.direct_refusal_for_tests);
    }
    bool ReadsDirect() const override { return reader_.direct(); }
    // The chunk is built where the placement rule (core/pack/span_io.h) puts its file offset, so
    // its aligned middle is written with O_DIRECT whatever the row size.
    Status Stage(uint64_t k, int slot, uint32_t* crc) override {
      ChunkSpan span = t_.g_.Chunk(k);
      const uint64_t at = kPackHeaderBytes + span.offset;
      uint8_t* base = slots_[slot].Reserve(SpanBufferBytes(at, span.bytes));
      if (base == nullptr) return Status::Error(Code::E_IO, "out of memory for a chunk", t_.job_.weight.path);
      uint8_t* data = base + SpanLead(at);
      Status s = reader_.BuildChunk(t_.g_, k, data);
      if (s.ok()) *crc = Crc32(0, data, span.bytes);
      return s;
    }
    Status Write(uint64_t k, int slot, const SpanWriter& out) override {
      ChunkSpan span = t_.g_.Chunk(k);
      const uint64_t at = kPackHeaderBytes + span.offset;
      uint8_t* base = slots_[slot].Reserve(SpanBufferBytes(at, span.bytes));
      Status s = out.Write(at, base + SpanLead(at), span.bytes);
      if (s.ok()) out.StartWriteback(at, span.bytes);
      return s;
    }
    Status Recheck(uint64_t k, int fd, const std::string& path, uint32_t* crc, bool* complete) override {
      return ReadChunk(fd, path, t_.g_, k, t_.job_.file.drop_cache, &recheck_, crc, complete);
    }

   private:
    const DenseTarget& t_;
    SourceReader reader_;
    AlignedBuffer slots_[2];
    std::vector<uint8_t> recheck_;
  };

  Status NewWorker(std::unique_ptr<PackTarget::Worker>* out) const override { return MakeWorker<Worker>(*this, out); }

  void DropWritten(int fd, uint64_t k) const override {
    ChunkSpan span = g_.Chunk(k);
    DropCache(fd, kPackHeaderBytes + span.offset, span.bytes);
  }

 private:
  const PackJob& job_;
  const PackGeometry& g_;
};

}  // namespace

Status PackLayer(const PackJob& job, PackProgress* progress, PackResult* result) {
  DenseTarget target(job);
  Status s = PackFile(job.file, target, progress, result);
  if (s.ok() && job.drop_source_cache) {
    // One last sweep over what was read: see PackSparseShard.
    const PackGeometry& g = job.geometry;
    Fd w, sc;
    if (OpenFile(job.weight.path, O_RDONLY, &w).ok())
      DropCache(w.get(), job.weight.offset + job.start * g.dim(), g.rows() * g.dim());
    if (OpenFile(job.scale.path, O_RDONLY, &sc).ok()) {
      DropCache(sc.get(), job.scale.offset + job.start * g.scale_bytes(), g.rows() * g.scale_bytes());
    }
  }
  return s;
}

}  // namespace spark
