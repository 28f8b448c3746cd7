#include "core/pack_chunks.h"

#include <fcntl.h>

#include "core/checked.h"
#include "core/crc32.h"
#include "core/file_io.h"

namespace spark {

namespace {
constexpr uint64_t kPieceBytes = uint64_t{8} << 20;
}

Status ChunkReader::Open(const std::string& path, bool drop_cache) {
  path_ = path;
  drop_cache_ = drop_cache;
  Status s = OpenFile(path, O_RDONLY, &fd_);
  if (s.ok()) ::posix_fadvise(fd_.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  return s;
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

Status ChunkReader::Read(const PackGeometry& g, uint64_t k, uint32_t* crc, bool* complete) {
  return ReadChunk(fd_.get(), path_, g, k, drop_cache_, &buf_, crc, complete);
}

Status SourceReader::BuildChunk(const PackGeometry& g, uint64_t k, std::vector<uint8_t>* out) {
  ChunkSpan span = g.Chunk(k);
  const uint64_t d = g.dim(), sb = g.scale_bytes();
  const uint64_t first = start + span.first_row;  // global id; start + rows checked by CheckSourceRange
  out->resize(span.bytes);
  scale_buf.resize(span.rows * sb);
  uint64_t scale_off = scale->offset + first * sb;
  Status s = PreadExact(scale_fd, scale_buf.data(), scale_buf.size(), scale_off, scale->path, Code::E_SOURCE_CHANGED);
  if (!s.ok()) return s;
  // Pieces hold whole pages of rows in the page layout so each lands on a page boundary.
  uint64_t unit = g.layout() == PackLayout::kPage ? g.rows_per_page() : 1;
  uint64_t piece_rows = kPieceBytes / d / unit * unit;
  if (piece_rows == 0) piece_rows = unit;
  weight_buf.resize((piece_rows < span.rows ? piece_rows : span.rows) * d);
  for (uint64_t r = 0; r < span.rows; r += piece_rows) {
    uint64_t n = span.rows - r < piece_rows ? span.rows - r : piece_rows;
    uint64_t off = weight->offset + (first + r) * d;
    s = PreadExact(weight_fd, weight_buf.data(), n * d, off, weight->path, Code::E_SOURCE_CHANGED);
    if (!s.ok()) return s;
    InterleaveRows(g, n, weight_buf.data(), scale_buf.data() + r * sb, out->data() + g.BytesForRows(r));
  }
  if (drop_cache) {
    DropCache(weight_fd, weight->offset + first * d, span.rows * d);
    DropCache(scale_fd, scale_off, span.rows * sb);
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
