// Where an Engram row's bytes come from, and reading one. A row is 256 weight bytes and 8
// scale bytes, from one of:
//   - a packed shard (the Mia stack's): the whole row at pack_base + (id - pack_lo) * 264,
//     one read;
//   - a two-column file (a checkpoint shard, a snapshot, a sparse copy): the weight row at
//     woff + id * 256 and the scale row at soff + id * 8, two reads, or one when the scale
//     rows of id's range are pinned in memory;
//   - the whole file mapped and locked in memory (the Mia stack's OFFLOAD_MODE=ram): no read.
// On an O_DIRECT descriptor a read covers the aligned blocks around the bytes (4 or 8 KiB) and
// lands in the thread's staging buffer. A read that still fails after the core's bounded
// retries prints one line (file, offset, errno) and aborts: a wrong row is never served.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "core/io/random_read.h"

namespace spark::engines {

// Prints "<prefix>: <what> (file, offset, errno text)" to stderr and aborts.
[[noreturn]] void Die(const char* prefix, const std::string& what);

struct PinnedScales {
  uint64_t lo = 0, hi = 0;  // ids whose scale rows are held
  std::unique_ptr<uint8_t[]> data;
  uint64_t bytes() const { return (hi - lo) * 8; }
};

class RowSource {
 public:
  explicit RowSource(const char* prefix) : prefix_(prefix) {}

  ReadFile* file = nullptr;  // two-column file
  uint64_t woff = 0, soff = 0;
  ReadFile* pack = nullptr;  // packed shard, when attached
  uint64_t pack_lo = 0, pack_base = 0;
  const uint8_t* mapped = nullptr;  // the whole two-column file in memory
  // Pinned scale rows, published once complete; gathers load it once per batch.
  std::atomic<const PinnedScales*> scales{nullptr};

  // Reads row `id` into w[0..256) and s[0..8). `staging`: kStagingBytes, aligned. `pinned`:
  // the scales loaded at the batch's start (may be null). Returns the read calls made.
  unsigned Read(uint64_t id, uint8_t* w, uint8_t* s, uint8_t* staging, const PinnedScales* pinned) const;

  // Reads `bytes` at `offset` of f into dst (any length), in large aligned chunks: pinning.
  void ReadSpan(ReadFile& f, uint64_t offset, uint64_t bytes, uint8_t* dst) const;

  const char* prefix() const { return prefix_; }

 private:
  void ReadExact(ReadFile& f, uint64_t offset, size_t len, uint8_t* dst, uint8_t* staging) const;
  const char* prefix_;
  ReadContext ctx_;
};

// Loads the scale rows [lo, hi) of `src`'s two-column file; null (errno ENOMEM) when the
// memory cannot be had. Aborts on a read error.
std::unique_ptr<PinnedScales> PinScales(const RowSource& src, uint64_t lo, uint64_t hi);

}  // namespace spark::engines
