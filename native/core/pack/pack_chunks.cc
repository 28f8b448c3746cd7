#include "core/pack/pack_chunks.h"

#include <fcntl.h>

#include "core/base/checked.h"
#include "core/base/crc32.h"
#include "core/io/durable_file.h"

namespace spark {

namespace {
constexpr uint64_t kPieceBytes = uint64_t{16} << 20;
}

Status ReadChunk(int fd, const std::string& path, const PackGeometry& g, uint64_t k, bool drop_cache,
                 std::vector<uint8_t>* buf, uint32_t* crc, bool* complete) {
  ChunkSpan span = g.Chunk(k);
  const uint64_t off = kPackHeaderBytes + span.offset;
  buf->resize(span.bytes);
  size_t got = 0;
  Status s = PreadFull(fd, buf->data(), span.bytes, off, path, &got);
  if (!s.ok()) return s;
  if (drop_cache) DropCache(fd, off, got);
  buf->resize(got);
  *complete = got == span.bytes;
  *crc = *complete ? Crc32(0, buf->data(), got) : 0;
  return Status::Ok();
}

Status SourceReader::Open(const PackSource& weight_src, const PackSource& scale_src, uint64_t start_row, bool direct,
                          bool drop, DirectRefusal refusal) {
  weight = &weight_src;
  scale = &scale_src;
  start = start_row;
  drop_cache = drop;
  Status s = weight_file.Open(weight_src.path, direct, refusal);
  return s.ok() ? scale_file.Open(scale_src.path, direct, refusal) : s;
}

Status SourceReader::BuildChunk(const PackGeometry& g, uint64_t k, uint8_t* out) {
  ChunkSpan span = g.Chunk(k);
  const uint64_t d = g.dim(), sb = g.scale_bytes();
  const uint64_t first = start + span.first_row;  // global id; start + rows checked by CheckSourceRange
  const uint64_t scale_off = scale->offset + first * sb, scale_len = span.rows * sb;
  uint8_t* sbase = scale_buf.Reserve(SpanBufferBytes(scale_off, scale_len));
  if (sbase == nullptr) return Status::Error(Code::E_IO, "out of memory for a chunk's scale rows", scale->path);
  Status s = scale_file.ReadExact(scale_off, scale_len, sbase, Code::E_SOURCE_CHANGED);
  if (!s.ok()) return s;
  scale_file.DropBehind(scale_off, scale_len);
  const uint8_t* scales = sbase + SpanLead(scale_off);
  // Pieces hold whole pages of rows in the page layout so each lands on a page boundary.
  uint64_t unit = g.layout() == PackLayout::kPage ? g.rows_per_page() : 1;
  uint64_t piece_rows = kPieceBytes / d / unit * unit;
  if (piece_rows == 0) piece_rows = unit;
  for (uint64_t r = 0; r < span.rows; r += piece_rows) {
    uint64_t n = span.rows - r < piece_rows ? span.rows - r : piece_rows;
    uint64_t off = weight->offset + (first + r) * d;
    uint8_t* wbase = weight_buf.Reserve(SpanBufferBytes(off, n * d));
    if (wbase == nullptr) return Status::Error(Code::E_IO, "out of memory for a chunk's weight rows", weight->path);
    s = weight_file.ReadExact(off, n * d, wbase, Code::E_SOURCE_CHANGED);
    if (!s.ok()) return s;
    weight_file.DropBehind(off, n * d);
    InterleaveRows(g, n, wbase + SpanLead(off), scales + r * sb, out + g.BytesForRows(r));
  }
  return Status::Ok();
}

Status CheckSourceRange(const PackSource& weight, const PackSource& scale, uint64_t start, const PackGeometry& g) {
  struct Part {
    const PackSource* src;
    uint64_t row_bytes;
    const char* what;
  } parts[] = {{&weight, g.dim(), "weight"}, {&scale, g.scale_bytes(), "scale"}};
  for (const auto& p : parts) {
    Fd fd;
    Status s = OpenFile(p.src->path, O_RDONLY, &fd);
    if (!s.ok()) return s;
    uint64_t size = 0;
    s = FileSize(fd.get(), p.src->path, &size);
    if (!s.ok()) return s;
    auto rows_end = CheckedAdd(start, g.rows());
    auto bytes_end = rows_end ? CheckedMul(*rows_end, p.row_bytes) : std::nullopt;
    auto end = bytes_end ? CheckedAdd(p.src->offset, *bytes_end) : std::nullopt;
    if (!end || *end > size) {
      return Status::Error(Code::E_SOURCE_CHANGED,
                           std::string("the ") + p.what + " rows up to " + std::to_string(start + g.rows()) +
                               " end past the file (" + std::to_string(size) +
                               " bytes): the snapshot is truncated or changed; re-run inspect on it",
                           p.src->path);
    }
  }
  return Status::Ok();
}

}  // namespace spark
