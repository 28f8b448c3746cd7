#include "core/io/durable_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace spark {

namespace {

constexpr size_t kMaxIo = size_t{1} << 30;  // Linux transfers at most ~2 GiB per call anyway

// Moves n bytes at `offset` with io(at, want) (a pread or pwrite of `want` bytes at buffer
// position `at`, file offset offset + at), continuing short transfers and EINTR; stops early
// when a call moves nothing. *done: the bytes moved. `what` names the call in errors.
template <class Io>
Status TransferAll(Io io, size_t n, uint64_t offset, const char* what, const std::string& path, size_t* done) {
  *done = 0;
  while (*done < n) {
    size_t want = n - *done < kMaxIo ? n - *done : kMaxIo;
    ssize_t r = io(*done, want);
    if (r < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, what, path).At(offset + *done);
    }
    if (r == 0) break;
    *done += static_cast<size_t>(r);
  }
  return Status::Ok();
}

}  // namespace

void Fd::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Status OpenFile(const std::string& path, int flags, Fd* out, int mode) {
  int fd;
  do {
    fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return ErrnoStatus(errno, "open", path);
  *out = Fd(fd);
  return Status::Ok();
}

Status PreadFull(int fd, void* buf, size_t n, uint64_t offset, const std::string& path, size_t* got) {
  auto* p = static_cast<uint8_t*>(buf);
  return TransferAll([&](size_t at, size_t want) { return ::pread(fd, p + at, want, static_cast<off_t>(offset + at)); },
                     n, offset, "read", path, got);
}

Status PreadExact(int fd, void* buf, size_t n, uint64_t offset, const std::string& path, Code short_code) {
  size_t got = 0;
  Status s = PreadFull(fd, buf, n, offset, path, &got);
  if (!s.ok()) return s;
  if (got != n) {
    Status e = Status::Error(
        short_code, "file ends early: wanted " + std::to_string(n) + " bytes, got " + std::to_string(got), path);
    return e.At(offset + got);
  }
  return Status::Ok();
}

Status PwriteFull(int fd, const void* buf, size_t n, uint64_t offset, const std::string& path) {
  const auto* p = static_cast<const uint8_t*>(buf);
  size_t done = 0;
  Status s =
      TransferAll([&](size_t at, size_t want) { return ::pwrite(fd, p + at, want, static_cast<off_t>(offset + at)); },
                  n, offset, "write", path, &done);
  if (s.ok() && done < n) return Status::Error(Code::E_IO, "write made no progress", path).At(offset + done);
  return s;
}

Status FileSize(int fd, const std::string& path, uint64_t* size) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoStatus(errno, "stat", path);
  *size = static_cast<uint64_t>(st.st_size);
  return Status::Ok();
}

Status SyncData(int fd, const std::string& path) {
  if (::fdatasync(fd) != 0) return ErrnoStatus(errno, "fdatasync", path);
  return Status::Ok();
}

Status SyncAll(int fd, const std::string& path) {
  if (::fsync(fd) != 0) return ErrnoStatus(errno, "fsync", path);
  return Status::Ok();
}

std::string DirName(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Status SyncParentDir(const std::string& path) {
  std::string dir = DirName(path);
  Fd fd;
  Status s = OpenFile(dir, O_RDONLY | O_DIRECTORY, &fd);
  if (!s.ok()) return s;
  // Some filesystems refuse fsync on a directory (EINVAL); their renames are synchronous.
  if (::fsync(fd.get()) != 0 && errno != EINVAL) return ErrnoStatus(errno, "fsync of directory", dir);
  return Status::Ok();
}

Status RenameDurable(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) return ErrnoStatus(errno, "rename to " + to, from);
  return SyncParentDir(to);
}

Status ReserveFile(int fd, uint64_t size, const std::string& path) {
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0) return ErrnoStatus(errno, "truncate", path);
  if (size == 0) return Status::Ok();
  // fallocate, not posix_fallocate: where the filesystem cannot reserve, glibc's fallback
  // would write every block, which is the whole copy over again.
  if (::fallocate(fd, 0, 0, static_cast<off_t>(size)) != 0) {
    int err = errno;
    if (err == EOPNOTSUPP || err == ENOSYS || err == EINVAL) return Status::Ok();
    Status s = ErrnoStatus(err, "reserving " + std::to_string(size) + " bytes", path);
    return s;
  }
  return Status::Ok();
}

void StartWriteback(int fd, uint64_t offset, uint64_t bytes) {
  ::sync_file_range(fd, static_cast<off_t>(offset), static_cast<off_t>(bytes), SYNC_FILE_RANGE_WRITE);
}

void DropCache(int fd, uint64_t offset, uint64_t bytes) {
  ::posix_fadvise(fd, static_cast<off_t>(offset), static_cast<off_t>(bytes), POSIX_FADV_DONTNEED);
}

bool PathExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace spark
