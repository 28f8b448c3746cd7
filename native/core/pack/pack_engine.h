// The resumable, crash-safe copy of numbered chunks into one file, shared by every layout.
// A layout (core/pack/pack.h: dense and page; core/pack/pack_sparse.h: the overlay's sparse copy)
// says what chunk k is, how to copy and re-read it; this engine owns everything else:
//
//   Files, in the pack's directory (core/pack/pack_dir.h, never through a link): <name>.partial
//   (the data) and <name>.journal (core/pack/pack_journal.h). On success the data file is fsync'd
//   and renamed to <name> (unless the job finishes as partial, below); the journal stays
//   until the caller has written the manifest.
//
//   Identity: the journal's key is the caller's key (sources, geometry...) plus the inode of
//   the data file it describes, so a journal never vouches for a file it was not written for.
//
//   Resume: an interrupted run's journaled chunks are re-read and re-checked; only those that
//   match are kept. A finished <name> without a manifest is re-checked the same way.
//
//   Copy: `threads` workers (items of RunParallel on the caller's pool, each with its own
//   source descriptors and two staging buffers) take contiguous runs of the chunks to do; each
//   stages (reads and checksums) chunk k + 1 on its own background thread while it writes
//   chunk k. Reads and writes are O_DIRECT where the filesystems allow it (core/pack/span_io.h:
//   the page cache is left alone), buffered with the pages dropped behind where they do not;
//   the result says which. The last item commits: fdatasync of the data, then the journal
//   records of the chunks that sync covered.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/pack/pack_dir.h"
#include "core/pack/pack_rate.h"
#include "core/pack/span_io.h"
#include "core/threads/thread_pool.h"

namespace spark {

enum class PackPhase : uint64_t { kPreparing = 0, kChecking = 1, kCopying = 2, kFinishing = 3, kDone = 4 };

// Written by the packer, read by anyone (polled for progress).
struct PackProgress {
  std::atomic<uint64_t> phase{0};
  std::atomic<uint64_t> chunks_total{0}, chunks_done{0};
  std::atomic<uint64_t> bytes_total{0}, bytes_done{0};  // data bytes; done counts kept chunks too
};

struct PackResult {
  std::vector<uint32_t> crcs;    // per chunk
  uint64_t chunks_kept = 0;      // taken over from an interrupted run after re-checking
  uint64_t chunks_rejected = 0;  // claimed by the journal but failing the re-check: redone
  uint64_t chunks_written = 0;
  uint64_t bytes_written = 0;      // data bytes written by this run
  bool journal_discarded = false;  // a journal for other parameters was thrown away
  bool was_complete = false;       // every chunk was already written (and re-checked)
  // How this run's copy read the sources and wrote the data file: "direct" (O_DIRECT),
  // "buffered" (the filesystem refused O_DIRECT, or the job asked for buffered I/O), or
  // "none" when it copied nothing.
  std::string read_io = "none", write_io = "none";
};

// What a layout provides. Const and thread-safe: workers call it concurrently.
class PackTarget {
 public:
  // One worker's state (source descriptors, buffers); used by one thread at a time.
  class Worker {
   public:
    virtual ~Worker() = default;
    // Reads chunk k from the sources into staging slot `slot` (0 or 1) and returns its CRC-32.
    // Runs on the worker's background thread while the other slot is being written.
    virtual Status Stage(uint64_t k, int slot, uint32_t* crc) = 0;
    // Writes chunk k, staged in `slot`, to the data file.
    virtual Status Write(uint64_t k, int slot, const SpanWriter& out) = 0;
    // Whether this worker's source reads are O_DIRECT.
    virtual bool ReadsDirect() const = 0;
    // Reads chunk k back from a data file: its CRC-32, *complete false when the file ends first.
    virtual Status Recheck(uint64_t k, int fd, const std::string& path, uint32_t* crc, bool* complete) = 0;
  };

  virtual ~PackTarget() = default;
  virtual uint64_t chunk_count() const = 0;
  virtual uint64_t chunk_bytes(uint64_t k) const = 0;
  virtual uint64_t total_bytes() const = 0;
  // Checks the sources hold what the job reads, before any file is touched.
  virtual Status CheckSources() const = 0;
  // Gives a new or resumed data file its size, reservations and fixed bytes (headers).
  virtual Status Prepare(int fd, const std::string& path) const = 0;
  virtual Status NewWorker(std::unique_ptr<Worker>* out) const = 0;
  // Drops chunk k's written pages from the page cache (it is durable and will not be read).
  virtual void DropWritten(int fd, uint64_t k) const = 0;
};

// A target's NewWorker in one line: constructs W from the target, then opens it.
template <typename W, typename T>
Status MakeWorker(const T& target, std::unique_ptr<PackTarget::Worker>* out) {
  auto w = std::make_unique<W>(target);
  Status s = w->Open();
  *out = std::move(w);
  return s;
}

struct PackFileJob {
  const PackDir* dir = nullptr;
  std::string name;  // the final data file's name in dir
  std::string key;   // the job's identity: resume only for the same key
  uint32_t threads = 4;
  ThreadPool* pool = nullptr;                 // hosts the workers (the caller works too)
  RateLimiter* rate = nullptr;                // optional bandwidth cap on the bytes copied
  uint64_t commit_bytes = uint64_t{1} << 30;  // commit after this many bytes ...
  double commit_seconds = 2.0;                // ... or this long, whichever comes first
  bool drop_cache = true;                     // drop written pages once durable
  bool direct_io = true;                      // O_DIRECT reads and writes where the filesystem allows it
  DirectRefusal direct_refusal_for_tests = DirectRefusal::kNone;
  // Tests only: writes after this many chunks fail with EIO, as a dying disk's would (0: off).
  uint64_t fault_after_chunks = 0;
  // A complete copy is being replaced and must stay usable until the new one is whole: an
  // existing <name> (the old copy's file) is left alone, and the job stops at a synced
  // <name>.partial with every chunk journaled; the caller renames it once every file is done.
  bool finish_as_partial = false;
};

std::string PartialName(const std::string& name);
std::string JournalName(const std::string& name);

Status PackFile(const PackFileJob& job, const PackTarget& target, PackProgress* progress, PackResult* result);

}  // namespace spark
