// The pack's and the verifier's large transfers: O_DIRECT where the filesystem takes it, so
// copying or checking tens of GiB leaves the page cache (GPU memory on the target machines,
// and the serving process's rows) alone; buffered, with the pages dropped behind, where it
// does not (tmpfs, some NFS and FUSE mounts).
//
// Placement rule: the byte at file offset `off` always sits at buffer address
// base + off % kDirectAlign, with base aligned to kDirectAlign. A direct read then covers the
// aligned-out range [floor(off), ceil(off + len)) in one transfer, and a write of the same
// bytes at any offset with the same remainder can send its aligned middle directly. Offsets
// and lengths are arbitrary (rows are 264 bytes, tensors start anywhere): an unaligned head
// and tail of a write (each under 4 KiB) go through the page cache, never bytes outside
// [off, off + len) -- the sparse copy's holes and a neighbour chunk's bytes stay untouched.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "core/base/status.h"
#include "core/io/durable_file.h"
#include "core/io/random_read.h"
#include "core/pack/pack_dir.h"

namespace spark {

// Offset of the byte at file offset `off` in a buffer laid out by the placement rule.
inline uint64_t SpanLead(uint64_t off) { return off % kDirectAlign; }
// Buffer bytes a span [off, off + len) takes under the placement rule (the aligned-out size).
uint64_t SpanBufferBytes(uint64_t off, uint64_t len);

// Tests only: behave as a filesystem that refuses O_DIRECT at open (tmpfs before Linux 6.6),
// or accepts the open and fails the first direct transfer with EINVAL (some FUSE and NFS
// mounts), so the fallback is exercised on any machine.
enum class DirectRefusal { kNone, kAtOpen, kAtTransfer };

// A file read by the packer or the verifier: O_DIRECT when asked for and the filesystem
// allows it (probed with one real read), else buffered with sequential readahead.
class SpanReader {
 public:
  // A refusal at the transfer shows in the probe read: the file is buffered either way.
  Status Open(const std::string& path, bool want_direct, DirectRefusal refusal = DirectRefusal::kNone);
  bool direct() const { return file_.direct(); }
  int fd() const { return file_.fd(); }
  const std::string& path() const { return file_.path(); }

  // Reads [off, off + len) into `base` (kDirectAlign-aligned, SpanBufferBytes(off, len) long)
  // by the placement rule. *got: bytes of the span read (less only at end of file).
  Status Read(uint64_t off, uint64_t len, uint8_t* base, size_t* got);
  // The same, but a span the file does not hold entirely is an error with `short_code`.
  Status ReadExact(uint64_t off, uint64_t len, uint8_t* base, Code short_code);
  // After a buffered read: drops the span's pages (the node may be serving; we will not
  // re-read them). Nothing to do after a direct read.
  void DropBehind(uint64_t off, uint64_t len) const;

 private:
  ReadFile file_;
};

// The data file a pack writes: the engine's buffered descriptor, plus an O_DIRECT descriptor
// on the same inode (opened through the pack's directory, never following a link) when the
// filesystem allows it. A filesystem that accepts the open but refuses a direct write
// (EINVAL) is detected at that write, which is redone buffered; buffered from then on.
class SpanWriter {
 public:
  // `dir`/`name`: where the engine opened `fd`. want_direct false: buffered only.
  Status Open(const PackDir& dir, const std::string& name, int fd, bool want_direct,
              DirectRefusal refusal = DirectRefusal::kNone);
  bool direct() const { return direct_fd_.valid() && !refused_.load(std::memory_order_relaxed); }
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

  // Writes [off, off + len) from `data`, laid out by the placement rule (data is
  // base + SpanLead(off)); thread-safe (positioned writes of disjoint spans).
  Status Write(uint64_t off, const uint8_t* data, uint64_t len) const;
  // After buffered writes: starts writeback of the span now (its pages are dropped once the
  // engine's commit has made them durable).
  void StartWriteback(uint64_t off, uint64_t len) const;

 private:
  int fd_ = -1;
  Fd direct_fd_;
  std::string path_;
  mutable std::atomic<bool> refused_{false};
  bool refuse_transfer_ = false;  // tests: the first direct write fails with EINVAL
};

// "direct" or "buffered", for the pack's and the verifier's reports.
inline const char* IoModeName(bool direct) { return direct ? "direct" : "buffered"; }

}  // namespace spark
