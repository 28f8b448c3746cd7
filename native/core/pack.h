// Packs one layer's rows [start, start + rows) of an Engram table into a data file of format
// version 1 (core/pack_format.h), crash-safely and resumably.
//
// Pipeline: `threads` workers (items of RunParallel on job.pool) each take contiguous chunks,
// read its weight rows (pieces of up to 8 MiB) and scale rows with large preads on their own
// descriptors, interleave them, checksum the chunk while it is in memory and write it with one
// pwrite; as chunks complete, one worker at a time commits (fdatasync of the data, then the
// journal records of the chunks that sync covered). Reading, interleaving and writing of
// different chunks overlap across workers.
//
// Files: <out>.partial (data), <out>.journal (core/pack_journal.h). On success the data file is
// fsync'd and renamed to <out>; the journal stays until the caller has written the manifest.
// Resume: a journal for the same key has its chunks re-read and re-checked; only chunks that
// match are kept. A complete <out> whose journal covers every chunk is re-checked the same way.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "core/pack_format.h"
#include "core/status.h"
#include "core/thread_pool.h"

namespace spark {

struct PackSource {
  std::string path;
  uint64_t offset = 0;  // absolute file offset of the tensor's row 0
};

struct PackJob {
  PackSource weight, scale;
  uint64_t start = 0;  // global id of local row 0
  PackGeometry geometry;
  std::string out_path;  // the final data file
  std::string header;    // header block JSON, at most 4096 bytes (padded with spaces here)
  std::string key;       // the job's identity in the journal: resume only for the same key
  uint32_t threads = 4;
  ThreadPool* pool = nullptr;  // runs the workers (the caller works too); cancelled() stops the copy
  uint64_t commit_bytes = uint64_t{1} << 30;  // commit after this many bytes ...
  double commit_seconds = 2.0;                // ... or this long, whichever comes first
  bool drop_cache = true;                     // drop source and written pages once done with
  // Tests only: writes after this many chunks fail with EIO, as a dying disk's would (0: off).
  uint64_t fault_after_chunks = 0;
};

enum class PackPhase : uint64_t { kPreparing = 0, kChecking = 1, kCopying = 2, kFinishing = 3, kDone = 4 };

// Written by the packer, read by anyone (polled for progress).
struct PackProgress {
  std::atomic<uint64_t> phase{0};
  std::atomic<uint64_t> chunks_total{0}, chunks_done{0};
  std::atomic<uint64_t> bytes_total{0}, bytes_done{0};  // data bytes; done counts kept chunks too
};

struct PackResult {
  std::vector<uint32_t> crcs;       // per chunk
  uint64_t chunks_kept = 0;         // taken over from an interrupted run after re-checking
  uint64_t chunks_rejected = 0;     // claimed by the journal but failing the re-check: redone
  uint64_t chunks_written = 0;
  uint64_t bytes_written = 0;       // data bytes written by this run
  bool journal_discarded = false;   // a journal for other parameters was thrown away
  bool was_complete = false;        // every chunk was already written (and re-checked)
};

Status PackLayer(const PackJob& job, PackProgress* progress, PackResult* result);

std::string PartialPath(const std::string& out_path);
std::string JournalPath(const std::string& out_path);
// The 4096-byte header block for `json`, or an error when it does not fit.
Status HeaderBlock(const std::string& json, std::string* block);

}  // namespace spark
