#include "core/verify.h"

#include <fcntl.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "core/background.h"
#include "core/crc32.h"
#include "core/pack_chunks.h"
#include "core/pack_io.h"
#include "core/file_io.h"
#include "core/parallel.h"

namespace spark {

namespace {

// Bad chunk and row indices gathered from the workers: all counted, the lowest few kept.
struct Findings {
  std::mutex mu;
  std::vector<uint64_t> chunks, rows;
  uint64_t chunk_count = 0, row_count = 0, chunks_checked = 0, rows_compared = 0, bytes_read = 0;
  std::atomic<bool> buffered{false};  // some chunk read went through the page cache
  Status error;

  void Merge(const std::vector<uint64_t>& c, const std::vector<uint64_t>& r, uint64_t checked, uint64_t compared,
             uint64_t bytes, const Status& s) {
    std::lock_guard<std::mutex> lock(mu);
    chunks.insert(chunks.end(), c.begin(), c.end());
    rows.insert(rows.end(), r.begin(), r.end());
    chunk_count += c.size();
    row_count += r.size();
    chunks_checked += checked;
    rows_compared += compared;
    bytes_read += bytes;
    if (!s.ok() && error.ok()) error = s;
  }
};

struct SourceFds {
  Fd weight, scale;
  Status Open(const VerifyJob& job) {
    Status s = OpenFile(job.weight.path, O_RDONLY, &weight);
    return s.ok() ? OpenFile(job.scale.path, O_RDONLY, &scale) : s;
  }
};

// One worker's staging slot: chunk k as read from the data file (by the placement rule of
// core/pack_io.h) and, with all_rows, as rebuilt from the source.
struct VerifySlot {
  AlignedBuffer packed;
  const uint8_t* data = nullptr;
  size_t got = 0;
  std::vector<uint8_t> expect;
};

// Every chunk: checksum and, with all_rows, each row against the rebuilt source chunk. Each
// worker takes a contiguous run and reads chunk k + 1 (O_DIRECT where the file allows it) on
// its background thread while it checksums and compares chunk k.
void CheckChunks(const VerifyJob& job, VerifyProgress* progress, Findings* found) {
  const PackGeometry& g = job.geometry;
  const bool rows = job.has_source && job.all_rows;
  size_t threads = std::clamp<size_t>(job.threads, 1, std::max<uint64_t>(g.chunk_count(), 1));
  RunParallel(job.pool, threads, threads, [&](size_t w) {
    std::vector<uint64_t> bad_chunks, bad_rows;
    uint64_t checked = 0, compared = 0, bytes = 0;
    SpanReader file;
    SourceReader source;
    VerifySlot slots[2];
    Status s = file.Open(job.path, job.direct_io);
    if (s.ok() && rows) s = source.Open(job.weight, job.scale, job.start, job.direct_io, job.drop_cache);
    if (s.ok() && (!file.direct() || (rows && !source.direct()))) found->buffered.store(true);
    Background ahead;  // declared after what its tasks use: joined first
    auto stage = [&](uint64_t k, int slot) {
      ChunkSpan span = g.Chunk(k);
      const uint64_t at = kPackHeaderBytes + span.offset;
      VerifySlot& v = slots[slot];
      uint8_t* base = v.packed.Reserve(SpanBufferBytes(at, span.bytes));
      if (base == nullptr) return Status::Error(Code::E_IO, "out of memory for a chunk", job.path);
      v.data = base + SpanLead(at);
      Status st = file.Read(at, span.bytes, base, &v.got);
      if (st.ok() && job.drop_cache) file.DropBehind(at, v.got);
      if (st.ok() && rows) {
        v.expect.resize(span.bytes);
        st = source.BuildChunk(g, k, v.expect.data());
      }
      return st;
    };
    auto [lo, hi] = ContiguousRun(g.chunk_count(), threads, w);
    if (s.ok() && lo < hi) s = stage(lo, 0);
    int slot = 0;
    for (uint64_t k = lo; s.ok() && k < hi; ++k, slot = 1 - slot) {
      if (job.pool != nullptr && job.pool->cancelled()) {
        s = Status::Error(Code::E_INTERNAL, "the verify was cancelled (the process is exiting)");
        break;
      }
      if (k + 1 < hi) ahead.Start([&stage, k, slot] { return stage(k + 1, 1 - slot); });
      const VerifySlot& v = slots[slot];
      ChunkSpan span = g.Chunk(k);
      const bool complete = v.got == span.bytes;
      ++checked;
      bytes += span.bytes;
      if (job.check_chunks && (!complete || Crc32(0, v.data, v.got) != job.crcs[k])) bad_chunks.push_back(k);
      if (rows) {
        bytes += span.rows * g.row_bytes();
        for (uint64_t i = 0; i < span.rows; ++i) {
          uint64_t off = g.RowOffset(span.first_row + i) - span.offset;
          // A row past the end of a truncated file is as wrong as a differing one.
          if (!complete && off + g.row_bytes() > v.got) {
            bad_rows.push_back(span.first_row + i);
          } else if (std::memcmp(v.data + off, v.expect.data() + off, g.row_bytes()) != 0) {
            bad_rows.push_back(span.first_row + i);
          }
        }
        compared += span.rows;
      }
      progress->bytes_done.fetch_add(span.bytes);
      if (k + 1 < hi) s = ahead.Wait();
    }
    found->Merge(bad_chunks, bad_rows, checked, compared, bytes, s);
  });
}

// A sample of rows: one pread per row on each side.
void CheckSample(const VerifyJob& job, int fd, uint64_t file_bytes, Findings* found) {
  const PackGeometry& g = job.geometry;
  std::atomic<size_t> next{0};
  const auto& ids = job.sample_rows;
  size_t threads = std::clamp<size_t>(job.threads, 1, std::max<size_t>(ids.size(), 1));
  RunParallel(job.pool, threads, threads, [&](size_t) {
    std::vector<uint64_t> bad_rows;
    uint64_t compared = 0, bytes = 0;
    SourceFds src;
    Status s = src.Open(job);
    std::vector<uint8_t> packed(g.row_bytes()), source(g.row_bytes());
    for (size_t j = next.fetch_add(1); s.ok() && j < ids.size(); j = next.fetch_add(1)) {
      uint64_t i = ids[j];
      if (i >= g.rows()) {
        s = Status::Error(Code::E_USAGE, "sample row " + std::to_string(i) + " is outside the layer", job.path);
        break;
      }
      uint64_t off = kPackHeaderBytes + g.RowOffset(i);
      size_t got = 0;
      s = PreadFull(fd, packed.data(), packed.size(), off, job.path, &got);
      if (s.ok()) {
        s = PreadExact(src.weight.get(), source.data(), g.dim(), job.weight.offset + (job.start + i) * g.dim(),
                       job.weight.path, Code::E_SOURCE_CHANGED);
      }
      if (s.ok()) {
        s = PreadExact(src.scale.get(), source.data() + g.dim(), g.scale_bytes(),
                       job.scale.offset + (job.start + i) * g.scale_bytes(), job.scale.path, Code::E_SOURCE_CHANGED);
      }
      if (!s.ok()) break;
      ++compared;
      bytes += got + g.row_bytes();
      if (got != packed.size() || off + got > file_bytes || packed != source) bad_rows.push_back(i);
    }
    found->Merge({}, bad_rows, 0, compared, bytes, s);
  });
}

void Lowest(std::vector<uint64_t>* v, size_t keep) {
  std::sort(v->begin(), v->end());
  if (v->size() > keep) v->resize(keep);
}

}  // namespace

Status VerifyLayer(const VerifyJob& job, VerifyProgress* progress, VerifyResult* result) {
  const PackGeometry& g = job.geometry;
  *result = VerifyResult{};
  if (job.crcs.size() != g.chunk_count()) {
    return Status::Error(Code::E_PACK_MANIFEST,
                         "the manifest lists " + std::to_string(job.crcs.size()) + " checksums where " +
                             std::to_string(g.chunk_count()) + " chunks are expected",
                         job.path);
  }
  if (job.has_source) {
    Status s = CheckSourceRange(job.weight, job.scale, job.start, g);
    if (!s.ok()) return s;
  }
  Fd fd;
  Status s = OpenFile(job.path, O_RDONLY, &fd);
  if (!s.ok()) return s;
  s = FileSize(fd.get(), job.path, &result->file_bytes);
  if (!s.ok()) return s;
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  result->size_ok = result->file_bytes == g.file_bytes();

  std::string want, got(kPackHeaderBytes, '\0');
  s = HeaderBlock(job.header, &want);
  if (!s.ok()) return s;
  size_t n = 0;
  s = PreadFull(fd.get(), got.data(), got.size(), 0, job.path, &n);
  if (!s.ok()) return s;
  result->header_ok = n == got.size() && got == want;

  progress->bytes_total.store(job.check_chunks || job.all_rows ? g.data_bytes() : 0);
  Findings found;
  if (job.check_chunks || (job.has_source && job.all_rows)) CheckChunks(job, progress, &found);
  if (found.error.ok() && job.has_source && !job.all_rows && !job.sample_rows.empty()) {
    CheckSample(job, fd.get(), result->file_bytes, &found);
  }
  if (!found.error.ok()) return found.error;
  result->chunks_checked = found.chunks_checked;
  result->bad_chunk_count = found.chunk_count;
  result->bad_chunks = std::move(found.chunks);
  Lowest(&result->bad_chunks, job.max_report);
  result->rows_compared = found.rows_compared;
  result->bad_row_count = found.row_count;
  result->bad_rows = std::move(found.rows);
  Lowest(&result->bad_rows, job.max_report);
  result->bytes_read = found.bytes_read;
  if (found.chunks_checked > 0) result->read_io = IoModeName(!found.buffered.load());
  return Status::Ok();
}

}  // namespace spark
