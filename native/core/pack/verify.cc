#include "core/pack/verify.h"

#include <fcntl.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "core/base/checked.h"
#include "core/base/crc32.h"
#include "core/io/durable_file.h"
#include "core/pack/pack_chunks.h"
#include "core/pack/span_io.h"
#include "core/threads/background.h"
#include "core/threads/parallel.h"

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
// core/pack/span_io.h) and, with all_rows, as rebuilt from the source.
struct VerifySlot {
  AlignedBuffer packed;
  const uint8_t* data = nullptr;
  size_t got = 0;
  std::vector<uint8_t> expect;
};

// One worker's chunks [lo, hi), double buffered: stage(k + 1, other slot) reads the next chunk
// on a background thread while check(k, slot) works on chunk k. Stops at the first error of a
// read, or when the pool is cancelled (the process is exiting).
template <typename Stage, typename Check>
Status Overlapped(ThreadPool* pool, uint64_t lo, uint64_t hi, Stage& stage, Check check) {
  Background ahead;  // declared after what its tasks use (the caller's slots): joined first
  Status s = lo < hi ? stage(lo, 0) : Status::Ok();
  int slot = 0;
  for (uint64_t k = lo; s.ok() && k < hi; ++k, slot = 1 - slot) {
    if (pool != nullptr && pool->cancelled()) {
      return Status::Error(Code::E_INTERNAL, "the verify was cancelled (the process is exiting)");
    }
    if (k + 1 < hi) ahead.Start([&stage, k, slot] { return stage(k + 1, 1 - slot); });
    check(k, slot);
    if (k + 1 < hi) s = ahead.Wait();
  }
  return s;
}

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
    if (s.ok())
      s = Overlapped(job.pool, lo, hi, stage, [&](uint64_t k, int slot) {
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
      });
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

// What the workers found, into the result: counts, the lowest few indices, how the pass read.
Status Report(Findings* found, size_t max_report, VerifyResult* result) {
  if (!found->error.ok()) return found->error;
  result->chunks_checked = found->chunks_checked;
  result->bad_chunk_count = found->chunk_count;
  result->bad_chunks = std::move(found->chunks);
  Lowest(&result->bad_chunks, max_report);
  result->rows_compared = found->rows_compared;
  result->bad_row_count = found->row_count;
  result->bad_rows = std::move(found->rows);
  Lowest(&result->bad_rows, max_report);
  result->bytes_read = found->bytes_read;
  return Status::Ok();
}

// A span of one column of a sparse copy (or of its source), read by the placement rule; the
// bytes past the end of the file are zeros.
struct ColumnSpan {
  AlignedBuffer buffer;
  const uint8_t* data = nullptr;
  size_t got = 0;

  Status Read(SpanReader& file, uint64_t off, uint64_t len, bool drop_cache) {
    uint8_t* base = buffer.Reserve(SpanBufferBytes(off, len));
    if (base == nullptr) return Status::Error(Code::E_IO, "out of memory for a chunk", file.path());
    data = base + SpanLead(off);
    Status s = file.Read(off, len, base, &got);
    if (!s.ok()) return s;
    std::memset(base + SpanLead(off) + got, 0, len - got);
    if (drop_cache) file.DropBehind(off, got);
    return s;
  }
};

// Both columns of a table: the weight and the scale file opened apart (often the same file).
struct ColumnReaders {
  SpanReader weight, scale;
  Status Open(const PackSource& w, const PackSource& s, bool direct_io) {
    Status st = weight.Open(w.path, direct_io);
    return st.ok() ? scale.Open(s.path, direct_io) : st;
  }
  bool direct() const { return weight.direct() && scale.direct(); }
};

// One staged chunk of a sparse table: the copy's weight and scale bytes and, with
// compare_rows, the source's.
struct SparseSlot {
  ColumnSpan weight, scale, source_weight, source_scale;
};

// The sparse table's chunks, split into contiguous runs like CheckChunks; each worker reads
// chunk k + 1 on its background thread while it checksums and compares chunk k.
void CheckSparseChunks(const SparseVerifyJob& job, uint64_t chunks, VerifyProgress* progress, Findings* found) {
  const uint64_t sb = job.dim / 32;
  size_t threads = std::clamp<size_t>(job.threads, 1, std::max<uint64_t>(chunks, 1));
  RunParallel(job.pool, threads, threads, [&](size_t w) {
    std::vector<uint64_t> bad_chunks, bad_rows;
    uint64_t checked = 0, compared = 0, bytes = 0;
    ColumnReaders copy, source;
    SparseSlot slots[2];
    Status s = copy.Open(job.weight, job.scale, job.direct_io);
    if (s.ok() && job.compare_rows) s = source.Open(job.source_weight, job.source_scale, job.direct_io);
    if (s.ok() && (!copy.direct() || (job.compare_rows && !source.direct()))) found->buffered.store(true);
    // Rows [a, a + n) of chunk k (offsets fit: VerifySparseTable checked the last row's end).
    auto rows_of = [&](uint64_t k) {
      const uint64_t a = job.start + k * job.chunk_rows;
      return std::pair<uint64_t, uint64_t>{a, std::min(job.chunk_rows, job.end - a)};
    };
    auto stage = [&](uint64_t k, int slot) {
      auto [a, n] = rows_of(k);
      SparseSlot& v = slots[slot];
      Status st = v.weight.Read(copy.weight, job.weight.offset + a * job.dim, n * job.dim, job.drop_cache);
      if (st.ok()) st = v.scale.Read(copy.scale, job.scale.offset + a * sb, n * sb, job.drop_cache);
      if (st.ok() && job.compare_rows) {
        st = v.source_weight.Read(source.weight, job.source_weight.offset + a * job.dim, n * job.dim, job.drop_cache);
        if (st.ok()) st = v.source_scale.Read(source.scale, job.source_scale.offset + a * sb, n * sb, job.drop_cache);
      }
      return st;
    };
    auto [lo, hi] = ContiguousRun(chunks, threads, w);
    if (s.ok())
      s = Overlapped(job.pool, lo, hi, stage, [&](uint64_t k, int slot) {
        auto [a, n] = rows_of(k);
        const SparseSlot& v = slots[slot];
        bytes += v.weight.got + v.scale.got;
        if (job.check_chunks) {
          const uint32_t crc = Crc32(Crc32(0, v.weight.data, n * job.dim), v.scale.data, n * sb);
          if (k >= job.crcs.size() || crc != job.crcs[k]) bad_chunks.push_back(k);
          ++checked;
        }
        if (job.compare_rows) {
          bytes += v.source_weight.got + v.source_scale.got;
          for (uint64_t i = 0; i < n; ++i) {
            if (std::memcmp(v.weight.data + i * job.dim, v.source_weight.data + i * job.dim, job.dim) != 0 ||
                std::memcmp(v.scale.data + i * sb, v.source_scale.data + i * sb, sb) != 0) {
              bad_rows.push_back(a + i);
            }
          }
          compared += n;
        }
        progress->bytes_done.fetch_add(n * (job.dim + sb) * (job.compare_rows ? 2 : 1));
      });
    found->Merge(bad_chunks, bad_rows, checked, compared, bytes, s);
  });
}

// The end of rows [start, end) of a column lies inside a file offset.
bool ColumnFits(const PackSource& column, uint64_t end, uint64_t pitch) {
  auto bytes = CheckedMul(end, pitch);
  return bytes && CheckedAdd(column.offset, *bytes);
}

}  // namespace

Status VerifyLayer(const VerifyJob& job, VerifyProgress* progress, VerifyResult* result) {
  const PackGeometry& g = job.geometry;
  *result = VerifyResult{};
  if (job.check_chunks && job.crcs.size() != g.chunk_count()) {
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

  std::string got(kPackHeaderBytes, '\0');
  s = CheckHeaderBlock(job.header);
  if (!s.ok()) return s;
  size_t n = 0;
  s = PreadFull(fd.get(), got.data(), got.size(), 0, job.path, &n);
  if (!s.ok()) return s;
  result->header_ok = n == got.size() && got == job.header;

  progress->bytes_total.store(job.check_chunks || job.all_rows ? g.data_bytes() : 0);
  Findings found;
  if (job.check_chunks || (job.has_source && job.all_rows)) CheckChunks(job, progress, &found);
  if (found.error.ok() && job.has_source && !job.all_rows && !job.sample_rows.empty()) {
    CheckSample(job, fd.get(), result->file_bytes, &found);
  }
  s = Report(&found, job.max_report, result);
  if (s.ok() && found.chunks_checked > 0) result->read_io = IoModeName(!found.buffered.load());
  return s;
}

Status VerifySparseTable(const SparseVerifyJob& job, VerifyProgress* progress, VerifyResult* result) {
  *result = VerifyResult{};
  const std::string& path = job.weight.path;
  if (job.dim == 0 || job.dim % 32 != 0 || job.chunk_rows == 0 || job.start > job.end) {
    return Status::Error(Code::E_USAGE,
                         "a sparse table needs dim a positive multiple of 32, chunkRows > 0 and start <= end", path);
  }
  const uint64_t sb = job.dim / 32;
  // One chunk's bytes must be addressable in memory (twice, with the source) and every row's
  // offset must fit: checked here once, so the workers' arithmetic cannot overflow.
  const uint64_t rows = job.end - job.start;
  auto row_bytes = CheckedAdd(job.dim, sb);
  auto chunk_bytes = row_bytes ? CheckedMul(job.chunk_rows, *row_bytes) : std::nullopt;
  // The progress total: every row's bytes, twice when the source's are read too.
  auto total = row_bytes ? CheckedMul(rows, *row_bytes) : std::nullopt;
  if (total) total = CheckedMul(*total, job.compare_rows ? 2 : 1);
  const bool fits = ColumnFits(job.weight, job.end, job.dim) && ColumnFits(job.scale, job.end, sb) &&
                    (!job.compare_rows ||
                     (ColumnFits(job.source_weight, job.end, job.dim) && ColumnFits(job.source_scale, job.end, sb)));
  if (!chunk_bytes || *chunk_bytes > (uint64_t{1} << 32) || !total || !fits) {
    return Status::Error(Code::E_USAGE, "a sparse table's chunk or row offsets are out of range", path);
  }
  const uint64_t chunks = rows / job.chunk_rows + (rows % job.chunk_rows != 0 ? 1 : 0);
  if (!job.check_chunks && !job.compare_rows) return Status::Ok();
  progress->bytes_total.store(*total);
  Findings found;
  CheckSparseChunks(job, chunks, progress, &found);
  Status s = Report(&found, job.max_report, result);
  if (s.ok() && chunks > 0) result->read_io = IoModeName(!found.buffered.load());
  return s;
}

}  // namespace spark
