// Plain file steps for the header reader, the packer and the verifier (the other kinds of
// I/O: native/core/README.md): an owning descriptor, full-length pread/pwrite that retry on
// EINTR and short transfers, and the fsync steps of a durable rename.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/base/status.h"

namespace spark {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { Close(); }
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      Close();
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Close();

 private:
  int fd_ = -1;
};

Status OpenFile(const std::string& path, int flags, Fd* out, int mode = 0644);

// Reads up to n bytes at `offset`; *got < n only at end of file.
Status PreadFull(int fd, void* buf, size_t n, uint64_t offset, const std::string& path, size_t* got);
// Reads exactly n bytes or fails (a short file is E_IO naming the offset, or `short_code`).
Status PreadExact(int fd, void* buf, size_t n, uint64_t offset, const std::string& path, Code short_code = Code::E_IO);
Status PwriteFull(int fd, const void* buf, size_t n, uint64_t offset, const std::string& path);

Status FileSize(int fd, const std::string& path, uint64_t* size);
Status SyncData(int fd, const std::string& path);  // fdatasync
Status SyncAll(int fd, const std::string& path);   // fsync
// fsync of the directory holding `path`, so a create or rename in it is durable.
Status SyncParentDir(const std::string& path);
// rename(from, to) followed by an fsync of the directory.
Status RenameDurable(const std::string& from, const std::string& to);
// Sets the file's size and, where the filesystem can, reserves its blocks (so a full disk is
// found now, not in the middle of the copy). ENOSPC is E_NO_SPACE.
Status ReserveFile(int fd, uint64_t size, const std::string& path);

// Advice only: starting writeback early, and dropping pages we will not read again (page
// cache is GPU memory on the target machines). Failures are ignored.
void StartWriteback(int fd, uint64_t offset, uint64_t bytes);
void DropCache(int fd, uint64_t offset, uint64_t bytes);

bool PathExists(const std::string& path);
std::string DirName(const std::string& path);

}  // namespace spark
