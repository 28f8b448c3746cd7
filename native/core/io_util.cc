#include "core/io_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace spark {

long FaultInjector::Pread(int fd, void* buf, size_t len, uint64_t offset, size_t align) {
  if (config_.delay_us > 0) {
    struct timespec ts;
    ts.tv_sec = static_cast<time_t>(config_.delay_us / 1000000);
    ts.tv_nsec = static_cast<long>((config_.delay_us % 1000000) * 1000);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
  }
  uint64_t n = calls_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (config_.eio_every && n % config_.eio_every == 0) {
    errno = EIO;
    return -1;
  }
  if (config_.eintr_every && n % config_.eintr_every == 0) {
    errno = EINTR;
    return -1;
  }
  if (config_.short_every && n % config_.short_every == 0 && len > 1) {
    size_t cut = len / 2;
    if (align > 1) cut -= cut % align;
    if (cut > 0) len = cut;
  }
  return static_cast<long>(pread(fd, buf, len, static_cast<off_t>(offset)));
}

Status PreadAll(int fd, void* buf, size_t len, size_t need, uint64_t offset, const std::string& path,
                FaultInjector* faults, ReadCounters* counters, size_t align) {
  auto* dst = static_cast<uint8_t*>(buf);
  size_t done = 0;
  while (done < len) {
    uint64_t at = offset + done;
    long r = faults != nullptr ? faults->Pread(fd, dst + done, len - done, at, align)
                               : static_cast<long>(pread(fd, dst + done, len - done, static_cast<off_t>(at)));
    if (r < 0) {
      if (errno == EINTR) {
        if (counters) counters->retries.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      return ErrnoStatus(errno, "pread of " + std::to_string(len - done) + " bytes", path).At(at);
    }
    if (r == 0) {
      if (done >= need) return Status::Ok();
      return Status::Error(Code::E_IO,
                           "unexpected end of file: " + std::to_string(need - done) +
                               " more bytes needed (file shorter than the table says; re-pack or re-download)",
                           path)
          .At(at);
    }
    done += static_cast<size_t>(r);
    if (done < len && counters) counters->retries.fetch_add(1, std::memory_order_relaxed);
  }
  return Status::Ok();
}

AlignedBuffer::~AlignedBuffer() { std::free(data_); }

uint8_t* AlignedBuffer::Reserve(size_t bytes) {
  if (bytes <= size_ && data_ != nullptr) return data_;
  size_t rounded = (bytes + kDirectAlign - 1) / kDirectAlign * kDirectAlign;
  if (rounded == 0) rounded = kDirectAlign;
  void* p = std::aligned_alloc(kDirectAlign, rounded);
  if (p == nullptr) return nullptr;
  std::free(data_);
  data_ = static_cast<uint8_t*>(p);
  size_ = rounded;
  return data_;
}

Status OpenForRead(const std::string& path, bool want_direct, uint64_t probe_offset, int* fd, bool* direct,
                   uint64_t* size) {
  *fd = -1;
  *direct = false;
  int plain = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (plain < 0) return ErrnoStatus(errno, "open", path);
  struct stat st;
  if (fstat(plain, &st) != 0) {
    int err = errno;
    close(plain);
    return ErrnoStatus(err, "fstat", path);
  }
  *size = static_cast<uint64_t>(st.st_size);
  *fd = plain;
  if (!want_direct) return Status::Ok();
  // Some filesystems (tmpfs, some FUSE mounts) refuse O_DIRECT at open, others only at the
  // first read, and the required alignment varies by device: probe one real aligned read.
  int dfd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
  if (dfd < 0) return Status::Ok();
  AlignedBuffer probe;
  uint8_t* buf = probe.Reserve(kDirectAlign);
  uint64_t at = probe_offset - probe_offset % kDirectAlign;
  if (at >= *size) at = 0;
  ssize_t r = buf != nullptr ? pread(dfd, buf, kDirectAlign, static_cast<off_t>(at)) : -1;
  if (r < 0) {
    close(dfd);
    return Status::Ok();
  }
  close(plain);
  *fd = dfd;
  *direct = true;
  return Status::Ok();
}

}  // namespace spark
