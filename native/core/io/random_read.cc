#include "core/io/random_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace spark {

namespace {

void SleepMicros(uint64_t us) {
  struct timespec ts;
  ts.tv_sec = static_cast<time_t>(us / 1000000);
  ts.tv_nsec = static_cast<long>((us % 1000000) * 1000);
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

// Opens without blocking (a FIFO would block a plain open) and insists on a regular file.
Status OpenRegular(const std::string& path, int extra_flags, int* out, uint64_t* size) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | extra_flags);
  if (fd < 0) return ErrnoStatus(errno, extra_flags & O_DIRECT ? "open (O_DIRECT)" : "open", path);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    return ErrnoStatus(err, "fstat", path);
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return Status::Error(Code::E_USAGE,
                         S_ISDIR(st.st_mode) ? "is a directory, not a table file" : "is not a regular file", path);
  }
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  *out = fd;
  *size = static_cast<uint64_t>(st.st_size);
  return Status::Ok();
}

// True when nothing lies at or after `offset` in the file behind fd (it ended there).
bool EndsBy(int fd, uint64_t offset) {
  struct stat st;
  return fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_size) <= offset;
}

}  // namespace

bool IsTransientReadError(int err) { return err == ETIMEDOUT || err == ESTALE || err == EIO; }

FaultDecision FaultInjector::Next(int fd, const void* buf, size_t len, uint64_t offset, size_t align) {
  uint64_t n = calls_.fetch_add(1, std::memory_order_relaxed) + 1;
  auto every = [n](uint32_t k) { return k != 0 && n % k == 0; };
  FaultDecision d;
  d.len = len;
  if (align > 1 && (offset % align != 0 || len % align != 0 || reinterpret_cast<uintptr_t>(buf) % align != 0)) {
    d.err = EINVAL;
    return d;
  }
  if (config_.throw_at != 0 && n == config_.throw_at) throw std::runtime_error("injected fault: a read threw");
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (config_.estale_at != 0 && n == config_.estale_at) stale_fds_.push_back(fd);
    if (std::find(stale_fds_.begin(), stale_fds_.end(), fd) != stale_fds_.end()) {
      d.err = ESTALE;
      return d;
    }
  }
  d.err = every(config_.eio_every)         ? EIO
          : every(config_.etimedout_every) ? ETIMEDOUT
          : every(config_.eintr_every)     ? EINTR
                                           : 0;
  if (d.err != 0) return d;
  if (every(config_.short_every) && len > 1) {
    size_t cut = len / 2;
    if (align > 1) cut -= cut % align;
    if (cut > 0) d.len = cut;
  }
  // A whole-block read whose count comes back short of a block boundary, as an NFS server may
  // return: the bytes are real, the count is not a multiple of the alignment.
  d.trim = every(config_.short_unaligned_every) && align > 1;
  return d;
}

long FaultInjector::Pread(int fd, void* buf, size_t len, uint64_t offset, size_t align) {
  // Ends the observed call however it leaves (throw_at throws).
  struct Observed {
    explicit Observed(ReadObserver* o) : observer(o) {
      if (observer != nullptr) observer->ReadBegins();
    }
    ~Observed() {
      if (observer != nullptr) observer->ReadEnds();
    }
    ReadObserver* observer;
  } observed(config_.observer);
  if (config_.delay_us > 0) SleepMicros(config_.delay_us);
  FaultDecision d = Next(fd, buf, len, offset, align);
  if (d.err != 0) {
    errno = d.err;
    return -1;
  }
  long r = static_cast<long>(pread(fd, buf, d.len, static_cast<off_t>(offset)));
  if (d.trim && r >= static_cast<long>(align)) r -= static_cast<long>(align) / 2;
  return r;
}

long FaultInjector::PreadNowait(int fd, void* buf, size_t len, uint64_t offset) {
  uint64_t n = nowait_calls_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (config_.nowait_hit_every == 0 || n % config_.nowait_hit_every != 0) {
    errno = config_.nowait_errno != 0 ? config_.nowait_errno : EAGAIN;
    return -1;
  }
  uint64_t hits = n / config_.nowait_hit_every;
  if (config_.nowait_short_every != 0 && hits % config_.nowait_short_every == 0 && len > 1) len /= 2;
  struct iovec iov = {buf, len};
  return static_cast<long>(preadv2(fd, &iov, 1, static_cast<off_t>(offset), RWF_NOWAIT));
}

ReadFile::~ReadFile() {
  int fd = fd_.load();
  if (fd >= 0) close(fd);
  for (int old : retired_) close(old);
}

bool OnNetworkFilesystem(int fd) {
  struct statfs sf;
  if (fstatfs(fd, &sf) != 0) return false;
  // statfs f_type of the network (or userspace) filesystems Engram tables may live on.
  switch (static_cast<uint32_t>(sf.f_type)) {
    case 0x6969:      // NFS
    case 0xFF534D42:  // CIFS
    case 0xFE534D42:  // SMB2
    case 0x517B:      // SMB
    case 0x00C36400:  // Ceph
    case 0x0BD00BD0:  // Lustre
    case 0x47504653:  // GPFS
    case 0x01021997:  // 9p
    case 0x65735546:  // FUSE (sshfs, s3fs, ...: whatever is behind it, not a local block device)
      return true;
    default:
      return false;
  }
}

bool SameInode(int a, int b) {
  struct stat sa, sb;
  return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

bool ReadFile::Whole() const {
  struct stat st;
  return fstat(fd(), &st) == 0 && static_cast<uint64_t>(st.st_size) >= size_;
}

Status ReadFile::Open(const std::string& path, bool want_direct, uint64_t probe_offset, bool fadvise_random) {
  path_ = path;
  direct_requested_ = want_direct;
  fadvise_random_ = fadvise_random;
  int plain = -1;
  Status st = OpenRegular(path, 0, &plain, &size_);
  if (!st.ok()) return st;
  fd_.store(plain);
  if (want_direct) {
    // Some filesystems (tmpfs, some FUSE mounts) refuse O_DIRECT at open, others only at the
    // first read, and the required alignment varies by device: probe one real aligned read.
    // Opened like the first (non-blocking, a regular file) and kept only if it is the same
    // inode: a file swapped in between the two opens is never read as the table.
    int dfd = -1;
    uint64_t direct_size = 0;
    if (OpenRegular(path, O_DIRECT, &dfd, &direct_size).ok() && !SameInode(plain, dfd)) {
      close(dfd);
      dfd = -1;
    }
    if (dfd >= 0) {
      AlignedBuffer probe;
      uint8_t* buf = probe.Reserve(kDirectAlign);
      uint64_t at = probe_offset - probe_offset % kDirectAlign;
      if (at >= size_) at = 0;
      if (buf != nullptr && pread(dfd, buf, kDirectAlign, static_cast<off_t>(at)) >= 0) {
        close(plain);
        fd_.store(dfd);
        direct_ = true;
      } else {
        close(dfd);
      }
    }
  }
  if (fadvise_random_ && !direct_) posix_fadvise(fd(), 0, 0, POSIX_FADV_RANDOM);
  return Status::Ok();
}

Status ReadFile::Reopen(int stale, bool* reopened) {
  std::lock_guard<std::mutex> lock(mu_);
  *reopened = false;
  if (fd_.load() != stale) return Status::Ok();  // another thread already replaced it
  int fresh = -1;
  uint64_t size = 0;
  Status st = OpenRegular(path_, direct_ ? O_DIRECT : 0, &fresh, &size);
  if (!st.ok()) {
    st.message = "reopening after a stale file handle: " + st.message;
    return st;
  }
  if (size != size_) {
    close(fresh);
    return Status::Error(Code::E_SOURCE_CHANGED,
                         "the file was replaced while the row store had it open (" + std::to_string(size_) +
                             " bytes, now " + std::to_string(size) + "); open the row store again",
                         path_);
  }
  if (fadvise_random_ && !direct_) posix_fadvise(fresh, 0, 0, POSIX_FADV_RANDOM);
  retired_.push_back(stale);
  fd_.store(fresh, std::memory_order_release);
  *reopened = true;
  return Status::Ok();
}

uint64_t RetryDelayMicros(const RetryPolicy& p, uint32_t failures) {
  uint64_t delay = p.first_delay_us;
  for (uint32_t i = 1; i < failures && delay < p.max_delay_us; ++i) delay *= 2;
  return std::min(delay, p.max_delay_us);
}

ReadStep AdvanceRead(int fd, uint64_t offset, size_t len, size_t align, size_t r, size_t* done, bool* continued) {
  const size_t end = *done + r;
  *continued = false;
  if (end == len || end % align == 0) {
    *continued = end < len;
    *done = end;
    return ReadStep::kMore;
  }
  // A short O_DIRECT read. At the end of the file that is normal; elsewhere the rest must be
  // read from the last whole block, as O_DIRECT cannot start at an unaligned offset.
  if (EndsBy(fd, offset + end)) {
    *done = end;
    return ReadStep::kEnd;
  }
  if (end - end % align > *done) {
    *done = end - end % align;
    *continued = true;
    return ReadStep::kMore;
  }
  return ReadStep::kShortBlock;
}

Status EndOfFileError(const ReadFile& file, size_t need, size_t done, uint64_t offset) {
  return Status::Error(Code::E_IO,
                       "unexpected end of file: " + std::to_string(need - done) +
                           " more bytes needed (file shorter than the table says; re-pack or re-download)",
                       file.path())
      .At(offset + done);
}

Status ReadCallError(const ReadFile& file, const std::string& call, size_t len, int err, bool short_block, long r,
                     uint64_t at, uint32_t failures) {
  const std::string what = call + " of " + std::to_string(len) + " bytes";
  Status st = short_block ? Status::Error(Code::E_IO,
                                          what + " returned " + std::to_string(r) +
                                              " with O_DIRECT, less than one block and not at the end of the file",
                                          file.path())
                          : ErrnoStatus(err, what, file.path());
  st.At(at);
  if (failures > 0) st.message += " (after " + std::to_string(failures) + (failures == 1 ? " retry)" : " retries)");
  return st;
}

Status PreadAll(ReadFile& file, void* buf, size_t len, size_t need, uint64_t offset, const ReadContext& ctx) {
  auto* dst = static_cast<uint8_t*>(buf);
  const size_t align = file.direct() ? kDirectAlign : 1;
  auto count = [&ctx](std::atomic<uint64_t> ReadCounters::* which) {
    if (ctx.counters != nullptr) (ctx.counters->*which).fetch_add(1, std::memory_order_relaxed);
  };
  size_t done = 0;
  uint32_t failures = 0;  // transient errors met by this read
  while (done < len) {
    const int fd = file.fd();
    const uint64_t at = offset + done;
    long r = ctx.faults != nullptr ? ctx.faults->Pread(fd, dst + done, len - done, at, align)
                                   : static_cast<long>(pread(fd, dst + done, len - done, static_cast<off_t>(at)));
    const int err = r < 0 ? errno : 0;
    if (err == EINTR) {
      count(&ReadCounters::retries);
      continue;
    }
    bool short_block = false;
    if (r > 0) {
      bool continued = false;
      ReadStep step = AdvanceRead(fd, offset, len, align, static_cast<size_t>(r), &done, &continued);
      if (continued) count(&ReadCounters::retries);
      if (step == ReadStep::kMore) continue;
      if (step == ReadStep::kEnd) r = 0;  // the end of file, handled below
      short_block = step == ReadStep::kShortBlock;
    }
    if (r == 0) {
      if (done >= need) return Status::Ok();
      return EndOfFileError(file, need, done, offset);
    }
    if (!(short_block || IsTransientReadError(err)) || failures >= ctx.retry.retries) {
      return ReadCallError(file, "pread", len - done, err, short_block, r, at, failures);
    }
    ++failures;
    count(&ReadCounters::error_retries);
    if (err == ESTALE) {
      bool reopened = false;
      Status st = file.Reopen(fd, &reopened);
      if (!st.ok()) return st.At(at);
      if (reopened) count(&ReadCounters::reopens);
    }
    SleepMicros(RetryDelayMicros(ctx.retry, failures));
  }
  return Status::Ok();
}

bool ReadIfCached(ReadFile& file, void* buf, size_t len, uint64_t offset, const ReadContext& ctx) {
  if (file.direct() || !file.nowait() || len == 0) return false;
  long r;
  if (ctx.faults != nullptr) {
    r = ctx.faults->PreadNowait(file.fd(), buf, len, offset);
  } else {
    struct iovec iov = {buf, len};
    r = static_cast<long>(preadv2(file.fd(), &iov, 1, static_cast<off_t>(offset), RWF_NOWAIT));
  }
  if (r < 0 && (errno == EOPNOTSUPP || errno == ENOSYS || errno == EINVAL)) {
    // A kernel before 4.14 (EINVAL: unknown flag), no preadv2 at all, or a filesystem that
    // cannot honour the flag: every later try would fail the same way.
    file.DisableNowait();
  }
  return r >= 0 && static_cast<size_t>(r) == len;
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

}  // namespace spark
