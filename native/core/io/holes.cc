#include "core/io/holes.h"

#include <unistd.h>

#include <cerrno>

#include "core/base/checked.h"

namespace spark {

Status FirstHole(int fd, uint64_t start, uint64_t end, const std::string& path, std::optional<uint64_t>* hole) {
  *hole = std::nullopt;
  if (start >= end) return Status::Ok();
  if (start > static_cast<uint64_t>(INT64_MAX)) return Status::Error(Code::E_USAGE, "offset past 2^63", path);
  off_t at = lseek(fd, static_cast<off_t>(start), SEEK_HOLE);
  if (at < 0) {
    // ENXIO: start is at or past the end of the file, which reads as nothing at all: a hole.
    if (errno == ENXIO) {
      *hole = start;
      return Status::Ok();
    }
    // EINVAL: this filesystem (or kernel) does not support SEEK_HOLE: it cannot hold holes.
    if (errno == EINVAL) return Status::Ok();
    return ErrnoStatus(errno, "lseek(SEEK_HOLE)", path).At(start);
  }
  // The end of the file counts as a hole; a range that ends there is still all data.
  if (static_cast<uint64_t>(at) < end) *hole = static_cast<uint64_t>(at);
  return Status::Ok();
}

Status CheckColumnHoles(int fd, const std::string& path, uint32_t layer, const char* column, uint64_t base,
                        uint64_t pitch, const IdRange& rows, HoleRule rule) {
  if (rule == HoleRule::kAllow || rows.start >= rows.end || pitch == 0) return Status::Ok();
  auto first = CheckedMul(rows.start, pitch);
  auto last = CheckedMul(rows.end, pitch);
  if (first) first = CheckedAdd(base, *first);
  if (last) last = CheckedAdd(base, *last);
  if (!first || !last)
    return Status::Error(Code::E_USAGE, "layer " + std::to_string(layer) + ": offsets overflow 64 bits", path);
  std::optional<uint64_t> hole;
  Status st = FirstHole(fd, *first, *last, path, &hole);
  if (!st.ok() || !hole) return st;
  const uint64_t row = (*hole - base) / pitch;
  const std::string where = "layer " + std::to_string(layer) + ": " + column + " of row " + std::to_string(row);
  if (rule == HoleRule::kRefuse) {
    return Status::Error(Code::E_SNAPSHOT,
                         where +
                             " is a hole (never written) and the directory has no engram-local.json: a sparse "
                             "copy without its manifest would read zeros there; restore its engram-local.json "
                             "or point at the full snapshot",
                         path)
        .At(*hole);
  }
  return Status::Error(Code::E_SHARD_TRUNCATED,
                       where + " is a hole inside the copy's range " + rows.text() +
                           " (engram-local.json): the copy is damaged or incomplete; make it again and check it "
                           "with spark verify",
                       path)
      .At(*hole);
}

}  // namespace spark
