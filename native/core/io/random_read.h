// Random row reads, for the row store and the engine libraries (the other kinds of I/O:
// native/core/README.md): files whose descriptor can be replaced after ESTALE, a positioned
// read that finishes what it starts (EINTR, short reads, O_DIRECT alignment) and rides out a
// bounded number of transient errors, fault injection for tests, an aligned buffer for
// O_DIRECT, and the probe that decides whether a file accepts O_DIRECT reads.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "core/base/noncopyable.h"
#include "core/base/status.h"

namespace spark {

// O_DIRECT reads are done in units of this many bytes, at offsets that are multiples of it,
// into memory aligned to it. The probe below checks the filesystem accepts that.
inline constexpr uint64_t kDirectAlign = 4096;

// Errors a read retries (with backoff) before giving up, chosen for NFS, where the Engram
// tables usually live:
//   ETIMEDOUT  a soft (softerr) mount whose server did not answer in time: it may come back.
//   ESTALE     the file handle went stale (server failover, export remounted): the path is
//              opened again and the read retried on the new descriptor.
//   EIO        what a soft mount without softerr reports for the same timeout. On a local
//              disk it is a media error that a retry rarely cures, but a few bounded retries
//              only delay the same failure by well under a second.
// Everything else (EINVAL, EBADF, EFAULT, ENXIO, ...) is a bug or a permanent condition and
// fails at once; EINTR is retried immediately and without limit.
bool IsTransientReadError(int err);

// Whether two descriptors name the same file (device and inode).
bool SameInode(int a, int b);

// Whether fd's file is on a network or userspace filesystem (NFS, SMB, Ceph, Lustre, GPFS,
// 9p, FUSE): reads there can stall for seconds and fail in ways a local disk does not.
bool OnNetworkFilesystem(int fd);

struct RetryPolicy {
  uint32_t retries = 4;             // transient errors ridden out per read before failing
  uint64_t first_delay_us = 50000;  // backoff before the first retry, doubling after each
  uint64_t max_delay_us = 1000000;
};

// Tests: told of every read call FaultInjector::Pread makes, around the whole call (the delay
// included), from the reading thread; a test counts the reads in flight at once with it, or
// holds them back. Must be thread-safe and outlive the store.
class ReadObserver {
 public:
  virtual ~ReadObserver() = default;
  virtual void ReadBegins() = 0;
  virtual void ReadEnds() = 0;
};

// Deterministic faults for tests. Every Nth read call (counted per injector, across threads)
// is cut short, interrupted, or failed; 0 disables a fault. delay_us sleeps before every read
// to model a network filesystem's latency.
struct FaultConfig {
  uint32_t short_every = 0;            // cut to half, keeping O_DIRECT alignment
  uint32_t short_unaligned_every = 0;  // O_DIRECT: report fewer bytes than a whole block
  uint32_t eintr_every = 0;
  uint32_t eio_every = 0;
  uint32_t etimedout_every = 0;
  uint32_t estale_at = 0;  // the Nth read's descriptor goes stale: it fails with ESTALE from then on
  uint32_t throw_at = 0;   // the Nth read throws (a C++ exception where none is expected)
  uint64_t delay_us = 0;
  // Reads tried without waiting (ReadIfCached), counted apart from the reads above. By default
  // every one misses, so the faults above land on the blocking reads as they always did (and a
  // delay models storage that is never cached). nowait_hit_every N: every Nth is a real
  // preadv2(RWF_NOWAIT); nowait_short_every N: every Nth real one is cut to half its bytes;
  // nowait_errno: the misses fail with this errno instead of EAGAIN (EOPNOTSUPP: a filesystem
  // without RWF_NOWAIT; EIO).
  uint32_t nowait_hit_every = 0;
  uint32_t nowait_short_every = 0;
  int nowait_errno = 0;
  ReadObserver* observer = nullptr;  // not owned
  bool any() const {
    return short_every || short_unaligned_every || eintr_every || eio_every || etimedout_every || estale_at ||
           throw_at || delay_us || nowait_hit_every || nowait_short_every || nowait_errno || observer != nullptr;
  }
};

// What the faults make of one read call, decided before it is issued.
struct FaultDecision {
  int err = 0;        // fail the call with this errno instead of issuing it
  size_t len = 0;     // else issue it for this many bytes (maybe cut short)
  bool trim = false;  // and report align/2 fewer bytes than came back, when at least align did
};

class FaultInjector {
 public:
  explicit FaultInjector(FaultConfig config) : config_(config) {}
  // pread(2) with the configured faults applied. With `align` > 1 it also enforces the rules
  // of O_DIRECT (offset, length and memory aligned, else EINVAL), so tests prove alignment
  // even on a filesystem that refused O_DIRECT and fell back to buffered reads. The observer,
  // when there is one, sees the call begin and end.
  long Pread(int fd, void* buf, size_t len, uint64_t offset, size_t align);
  // The same decisions for a read issued some other way (io_uring): counts one call. Does not
  // sleep delay_us; throws at throw_at.
  FaultDecision Next(int fd, const void* buf, size_t len, uint64_t offset, size_t align);
  // preadv2(RWF_NOWAIT) with the nowait_* faults applied (see FaultConfig).
  long PreadNowait(int fd, void* buf, size_t len, uint64_t offset);

 private:
  FaultConfig config_;
  std::atomic<uint64_t> calls_{0};
  std::atomic<uint64_t> nowait_calls_{0};
  std::mutex mu_;
  std::vector<int> stale_fds_;  // guarded by mu_
};

struct ReadCounters {
  std::atomic<uint64_t> retries{0};        // EINTR and short-read continuations
  std::atomic<uint64_t> error_retries{0};  // reads retried after a transient error
  std::atomic<uint64_t> reopens{0};        // files opened again after ESTALE
};

// A file the row store reads from many threads at once. After ESTALE the path is opened again
// and the new descriptor replaces the old one for every thread; the old descriptors stay open
// until destruction, because another thread may be inside a read on one of them (closing it
// would let the number be reused for an unrelated file).
class ReadFile : NonCopyable {
 public:
  ~ReadFile();

  // Opens `path` read-only. With want_direct, tries O_DIRECT and probes one aligned read at
  // `probe_offset` (rounded down to kDirectAlign); when the filesystem refuses either, falls
  // back to a buffered descriptor (direct() false). fadvise_random: POSIX_FADV_RANDOM on a
  // buffered descriptor (no readahead into a page cache that is GPU memory here).
  Status Open(const std::string& path, bool want_direct, uint64_t probe_offset, bool fadvise_random);
  // Replaces descriptor `stale` by a fresh open of the same path, unless another thread has
  // already done so (*reopened says whether this call did). The file must still be a regular
  // file of the same size.
  Status Reopen(int stale, bool* reopened);

  int fd() const { return fd_.load(std::memory_order_acquire); }
  const std::string& path() const { return path_; }
  bool direct_requested() const { return direct_requested_; }
  bool direct() const { return direct_; }
  uint64_t size() const { return size_; }
  // Whether the file is still at least the size it had when opened (one fstat).
  bool Whole() const;
  // Whether reads that must not wait (RWF_NOWAIT) are still worth trying on this file: false
  // once the kernel or filesystem said it does not support them.
  bool nowait() const { return nowait_.load(std::memory_order_relaxed); }
  void DisableNowait() { nowait_.store(false, std::memory_order_relaxed); }

 private:
  std::string path_;
  std::atomic<int> fd_{-1};
  bool direct_requested_ = false;
  bool direct_ = false;
  bool fadvise_random_ = false;
  std::atomic<bool> nowait_{true};
  uint64_t size_ = 0;
  std::mutex mu_;             // serializes Reopen
  std::vector<int> retired_;  // replaced descriptors, closed on destruction
};

// What a read needs besides the file: fault injection (tests), counters, the retry policy.
struct ReadContext {
  FaultInjector* faults = nullptr;
  ReadCounters* counters = nullptr;
  RetryPolicy retry;
};

// Reads `len` bytes at `offset` of `file` into `buf`. EINTR and short reads are continued; on
// an O_DIRECT descriptor a short read that is not at the end of the file continues from the
// last whole block (an O_DIRECT read cannot start at an unaligned offset). Transient errors
// are retried with backoff, up to ctx.retry.retries times, reopening the file after ESTALE.
// End of file after at least `need` bytes (need <= len) is accepted (an aligned read may run
// past the end); before that it is an E_IO error naming the file and the offset where data
// ran out. Every failure names the file and the offset.
Status PreadAll(ReadFile& file, void* buf, size_t len, size_t need, uint64_t offset, const ReadContext& ctx);

// The rules PreadAll continues a read by, for engines that issue the calls themselves. One
// call for [done, len) of a read at `offset` returned r > 0 bytes (r <= len - done):
//   kMore        *done advanced; read again from there (or finished when *done == len)
//   kEnd         an O_DIRECT read came back short at the end of the file: *done is where it ended
//   kShortBlock  an O_DIRECT read came back with less than a block, not at the end: an error
// `continued` is set when a short read will be continued (counted as a retry).
enum class ReadStep { kMore, kEnd, kShortBlock };
ReadStep AdvanceRead(int fd, uint64_t offset, size_t len, size_t align, size_t r, size_t* done, bool* continued);
// The E_IO error for a file that ended `done` bytes into a read that needed `need`.
Status EndOfFileError(const ReadFile& file, size_t need, size_t done, uint64_t offset);
// The error of a read call that failed with `err` (or returned `r` < one O_DIRECT block when
// short_block) asking `len` bytes at `at`, after `failures` retries. `call` names the call.
Status ReadCallError(const ReadFile& file, const std::string& call, size_t len, int err, bool short_block, long r,
                     uint64_t at, uint32_t failures);
// The backoff before retry number `failures` (1 = the first) of a transient error.
uint64_t RetryDelayMicros(const RetryPolicy& p, uint32_t failures);
// Reads all `len` bytes at `offset` only when the page cache holds them, without waiting for
// the device (preadv2 with RWF_NOWAIT), on buffered descriptors. True when every byte came
// back. False otherwise: not cached (EAGAIN), partly cached, any error, or no support (the
// file's nowait() is then switched off); the caller reads it again with PreadAll, which
// retries and reports errors as usual. Errors and retries are not counted here.
bool ReadIfCached(ReadFile& file, void* buf, size_t len, uint64_t offset, const ReadContext& ctx);

// Heap memory aligned to kDirectAlign, grown on demand, freed on destruction.
class AlignedBuffer : NonCopyable {
 public:
  ~AlignedBuffer();
  // Returns a buffer of at least `bytes` (rounded up to kDirectAlign), or nullptr when out of memory.
  uint8_t* Reserve(size_t bytes);

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace spark
