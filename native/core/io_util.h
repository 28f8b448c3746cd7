// Small I/O helpers for the row store: a positioned read that finishes what it starts
// (retrying EINTR and short reads), fault injection for tests, an aligned buffer for O_DIRECT,
// and the probe that decides whether a file accepts O_DIRECT reads.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"

namespace spark {

// O_DIRECT reads are done in units of this many bytes, at offsets that are multiples of it,
// into memory aligned to it. The probe below checks the filesystem accepts that.
inline constexpr uint64_t kDirectAlign = 4096;

// Deterministic faults for tests. Every Nth read call (counted per injector, across threads)
// is cut short, interrupted, or failed; 0 disables a fault. delay_us sleeps before every read
// to model a network filesystem's latency.
struct FaultConfig {
  uint32_t short_every = 0;
  uint32_t eintr_every = 0;
  uint32_t eio_every = 0;
  uint64_t delay_us = 0;
  bool any() const { return short_every || eintr_every || eio_every || delay_us; }
};

class FaultInjector {
 public:
  explicit FaultInjector(FaultConfig config) : config_(config) {}
  // pread(2) with the configured faults applied. `align` > 1 keeps a shortened read a multiple
  // of it (O_DIRECT cannot continue at an unaligned offset).
  long Pread(int fd, void* buf, size_t len, uint64_t offset, size_t align);

 private:
  FaultConfig config_;
  std::atomic<uint64_t> calls_{0};
};

struct ReadCounters {
  std::atomic<uint64_t> retries{0};  // EINTR and short-read continuations
};

// Reads `len` bytes at `offset` into `buf`, retrying EINTR and short reads. End of file after
// at least `need` bytes (need <= len) is accepted (an aligned read may run past the end);
// before that it is an E_IO error naming the file and the offset where data ran out.
Status PreadAll(int fd, void* buf, size_t len, size_t need, uint64_t offset, const std::string& path,
                FaultInjector* faults, ReadCounters* counters, size_t align = 1);

// Heap memory aligned to kDirectAlign, grown on demand, freed on destruction.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  ~AlignedBuffer();
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  // Returns a buffer of at least `bytes` (rounded up to kDirectAlign), or nullptr when out of memory.
  uint8_t* Reserve(size_t bytes);

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Opens `path` read-only. With want_direct, tries O_DIRECT and probes one aligned read at
// `probe_offset` (rounded down to kDirectAlign); when the filesystem refuses either, falls
// back to a buffered descriptor and sets *direct = false.
Status OpenForRead(const std::string& path, bool want_direct, uint64_t probe_offset, int* fd, bool* direct,
                   uint64_t* size);

}  // namespace spark
