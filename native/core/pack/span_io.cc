#include "core/pack/span_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace spark {

namespace {

uint64_t AlignDown(uint64_t v) { return v - v % kDirectAlign; }
uint64_t AlignUp(uint64_t v) { return AlignDown(v + kDirectAlign - 1); }

// pread on an O_DIRECT descriptor: `n` bytes at the aligned `off` into aligned `p`. A count
// that is not a whole number of blocks only comes at the end of the file: it stops there.
Status DirectPread(int fd, uint8_t* p, uint64_t n, uint64_t off, const std::string& path, uint64_t* got) {
  uint64_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(fd, p + done, n - done, static_cast<off_t>(off + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "read (O_DIRECT)", path).At(off + done);
    }
    if (r == 0) break;
    done += static_cast<uint64_t>(r);
    if (done % kDirectAlign != 0) break;
  }
  *got = done;
  return Status::Ok();
}

}  // namespace

uint64_t SpanBufferBytes(uint64_t off, uint64_t len) { return AlignUp(SpanLead(off) + len); }

Status SpanReader::Open(const std::string& path, bool want_direct, DirectRefusal refusal) {
  Status s = file_.Open(path, want_direct && refusal == DirectRefusal::kNone, 0, false);
  if (s.ok() && !file_.direct()) ::posix_fadvise(file_.fd(), 0, 0, POSIX_FADV_SEQUENTIAL);
  return s;
}

Status SpanReader::Read(uint64_t off, uint64_t len, uint8_t* base, size_t* got) {
  const uint64_t lead = SpanLead(off);
  if (!file_.direct()) return PreadFull(file_.fd(), base + lead, len, off, file_.path(), got);
  uint64_t done = 0;
  Status s = DirectPread(file_.fd(), base, SpanBufferBytes(off, len), off - lead, file_.path(), &done);
  if (!s.ok()) return s;
  done = done > lead ? done - lead : 0;
  *got = done < len ? done : len;
  return Status::Ok();
}

Status SpanReader::ReadExact(uint64_t off, uint64_t len, uint8_t* base, Code short_code) {
  size_t got = 0;
  Status s = Read(off, len, base, &got);
  if (s.ok() && got != len) {
    s = Status::Error(short_code,
                      "file ends early: wanted " + std::to_string(len) + " bytes, got " + std::to_string(got),
                      file_.path())
            .At(off + got);
  }
  return s;
}

void SpanReader::DropBehind(uint64_t off, uint64_t len) const {
  if (!file_.direct()) DropCache(file_.fd(), off, len);
}

Status SpanWriter::Open(const PackDir& dir, const std::string& name, int fd, bool want_direct, DirectRefusal refusal) {
  fd_ = fd;
  path_ = dir.PathOf(name);
  direct_fd_.Close();
  refused_.store(false);
  refuse_transfer_ = refusal == DirectRefusal::kAtTransfer;
  if (!want_direct || refusal == DirectRefusal::kAtOpen) return Status::Ok();
  // The same file through the same directory, never a link; kept only if it is the very
  // inode the engine holds. tmpfs refuses O_DIRECT here (EINVAL): buffered then.
  int dfd = ::openat(dir.fd(), name.c_str(), O_RDWR | O_DIRECT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (dfd < 0) return Status::Ok();
  Fd direct(dfd);
  if (!SameInode(fd, dfd)) return Status::Ok();
  direct_fd_ = std::move(direct);
  return Status::Ok();
}

Status SpanWriter::Write(uint64_t off, const uint8_t* data, uint64_t len) const {
  const uint64_t end = off + len;
  const uint64_t a = AlignUp(off), b = AlignDown(end);
  const bool placed = (reinterpret_cast<uintptr_t>(data) - SpanLead(off)) % kDirectAlign == 0;
  if (!direct() || a >= b || !placed) return PwriteFull(fd_, data, len, off, path_);
  // Head and tail (under a block each) through the page cache: only our own bytes.
  Status s = PwriteFull(fd_, data, a - off, off, path_);
  if (s.ok()) s = PwriteFull(fd_, data + (b - off), end - b, b, path_);
  if (!s.ok()) return s;
  uint64_t done = 0;
  while (a + done < b) {
    ssize_t r = -1;
    if (refuse_transfer_) {
      errno = EINVAL;
    } else {
      r = ::pwrite(direct_fd_.get(), data + (a - off) + done, b - a - done, static_cast<off_t>(a + done));
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && errno == EINVAL) {
      // Accepted at open, refused at write (some FUSE and NFS mounts). Every writer that got
      // past direct() before the first refusal lands here too: each finishes buffered.
      refused_.store(true);
      break;
    }
    if (r < 0) return ErrnoStatus(errno, "write (O_DIRECT)", path_).At(a + done);
    if (r == 0) return Status::Error(Code::E_IO, "write (O_DIRECT) made no progress", path_).At(a + done);
    done += static_cast<uint64_t>(r);
    if (done % kDirectAlign != 0) break;  // an odd short write: finish the rest buffered
  }
  if (a + done < b) s = PwriteFull(fd_, data + (a - off) + done, b - a - done, a + done, path_);
  return s;
}

void SpanWriter::StartWriteback(uint64_t off, uint64_t len) const { spark::StartWriteback(fd_, off, len); }

}  // namespace spark
