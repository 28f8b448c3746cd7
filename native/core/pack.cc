#include "core/pack.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>

#include "core/crc32.h"
#include "core/pack_chunks.h"
#include "core/file_io.h"
#include "core/pack_journal.h"
#include "core/parallel.h"

namespace spark {

std::string PartialPath(const std::string& out_path) { return out_path + ".partial"; }
std::string JournalPath(const std::string& out_path) { return out_path + ".journal"; }

Status HeaderBlock(const std::string& json, std::string* block) {
  if (json.size() > kPackHeaderBytes) {
    return Status::Error(Code::E_USAGE, "header JSON is " + std::to_string(json.size()) + " bytes, more than 4096");
  }
  *block = json;
  block->resize(kPackHeaderBytes, ' ');
  return Status::Ok();
}

namespace {

using Clock = std::chrono::steady_clock;

// Re-reads the chunks a journal claims and keeps those whose bytes still match. Latest record
// per chunk wins (a chunk is only re-journaled after being rewritten).
Status RecheckChunks(const std::string& path, const PackJob& job, const std::vector<JournalRecord>& records,
                     PackProgress* progress, std::vector<uint8_t>* valid, std::vector<uint32_t>* crcs,
                     uint64_t* rejected) {
  const PackGeometry& g = job.geometry;
  std::vector<int64_t> claimed(g.chunk_count(), -1);
  for (const auto& r : records) claimed[r.chunk] = r.crc;
  std::vector<uint64_t> todo;
  for (uint64_t k = 0; k < claimed.size(); ++k) {
    if (claimed[k] >= 0) todo.push_back(k);
  }
  std::atomic<uint64_t> bad{0};
  std::mutex mu;
  Status first_error;
  size_t threads = std::min<size_t>(job.threads, std::max<size_t>(todo.size(), 1));
  RunParallel(job.pool, threads, threads, [&](size_t w) {
    ChunkReader reader;
    Status s = reader.Open(path, false);
    auto [lo, hi] = ContiguousRun(todo.size(), threads, w);
    for (size_t i = lo; s.ok() && i < hi; ++i) {
      uint64_t k = todo[i];
      uint32_t crc = 0;
      bool complete = false;
      s = reader.Read(g, k, &crc, &complete);
      if (!s.ok()) break;
      if (complete && crc == static_cast<uint32_t>(claimed[k])) {
        (*valid)[k] = 1;
        (*crcs)[k] = crc;
        progress->chunks_done.fetch_add(1);
        progress->bytes_done.fetch_add(g.Chunk(k).bytes);
      } else {
        bad.fetch_add(1);
      }
    }
    if (!s.ok()) {
      std::lock_guard<std::mutex> lock(mu);
      if (first_error.ok()) first_error = s;
    }
  });
  *rejected = bad.load();
  return first_error;
}

struct CopyState {
  std::mutex mu;
  std::vector<uint64_t> todo;
  size_t workers = 1;
  std::atomic<uint64_t> writes{0};  // for fault_after_chunks
  std::vector<JournalRecord> completed;  // written, not yet journaled
  uint64_t completed_bytes = 0;
  Clock::time_point last_commit = Clock::now();
  bool committing = false;  // one worker commits at a time
  Status error;             // the first worker error
  Status commit_error;      // the first commit error (then nothing more is committed)
  bool stop = false;
};

// Commits `batch`: fdatasync of the data, then the journal records of the chunks that sync
// covered. One committer at a time (CopyState::committing), so `result` needs no lock.
Status Commit(const PackJob& job, int out_fd, const std::string& partial, PackJournal* journal,
              const std::vector<JournalRecord>& batch, PackProgress* progress, PackResult* result) {
  Status s = SyncData(out_fd, partial);
  if (s.ok()) s = journal->Append(batch);
  if (!s.ok()) return s;
  for (const auto& r : batch) {
    result->crcs[r.chunk] = r.crc;
    ++result->chunks_written;
    ChunkSpan span = job.geometry.Chunk(r.chunk);
    result->bytes_written += span.bytes;
    progress->chunks_done.fetch_add(1);
    if (job.drop_cache) DropCache(out_fd, kPackHeaderBytes + span.offset, span.bytes);
  }
  return Status::Ok();
}

// Everything a copy worker needs besides its own state.
struct CopyContext {
  const PackJob* job;
  int out_fd;
  const std::string* partial;
  PackJournal* journal;
  CopyState* st;
  PackProgress* progress;
  PackResult* result;
};

// After a worker completed a chunk: commits what is pending when enough bytes or time have
// gathered and no other worker is committing.
void MaybeCommit(const CopyContext& c) {
  std::vector<JournalRecord> batch;
  {
    std::lock_guard<std::mutex> lock(c.st->mu);
    const auto interval = std::chrono::duration<double>(c.job->commit_seconds);
    bool due = c.st->completed_bytes >= c.job->commit_bytes || Clock::now() - c.st->last_commit >= interval;
    if (c.st->committing || !c.st->commit_error.ok() || !due || c.st->completed.empty()) return;
    c.st->committing = true;
    batch.swap(c.st->completed);
    c.st->completed_bytes = 0;
  }
  Status s = Commit(*c.job, c.out_fd, *c.partial, c.journal, batch, c.progress, c.result);
  std::lock_guard<std::mutex> lock(c.st->mu);
  c.st->committing = false;
  c.st->last_commit = Clock::now();
  if (!s.ok()) {
    c.st->commit_error = s;
    c.st->stop = true;
  }
}

// Worker w copies a contiguous run of the chunks to do, in order: its source descriptors see
// one sequential stream each, which the kernel's readahead serves best.
void CopyWorker(const CopyContext& c, size_t w) {
  const PackJob& job = *c.job;
  CopyState* st = c.st;
  const PackGeometry& g = job.geometry;
  SourceReader reader;
  Fd wfd, sfd;  // own descriptors: each worker gets its own readahead state
  Status s = OpenFile(job.weight.path, O_RDONLY, &wfd);
  if (s.ok()) s = OpenFile(job.scale.path, O_RDONLY, &sfd);
  if (s.ok()) {
    ::posix_fadvise(wfd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
    ::posix_fadvise(sfd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  }
  reader.weight_fd = wfd.get();
  reader.scale_fd = sfd.get();
  reader.weight = &job.weight;
  reader.scale = &job.scale;
  reader.start = job.start;
  reader.drop_cache = job.drop_cache;
  std::vector<uint8_t> out;
  auto [next, end] = ContiguousRun(st->todo.size(), st->workers, w);
  for (;;) {
    uint64_t k = 0;
    {
      std::lock_guard<std::mutex> lock(st->mu);
      if (s.ok() && job.pool != nullptr && job.pool->cancelled()) {
        s = Status::Error(Code::E_INTERNAL, "the pack was cancelled (the process is exiting); re-run to resume");
      }
      if (!s.ok() && st->error.ok()) {
        st->error = s;
        st->stop = true;
      }
      if (st->stop || next == end) break;
      k = st->todo[next++];
    }
    ChunkSpan span = g.Chunk(k);
    s = reader.BuildChunk(g, k, &out);
    uint32_t crc = 0;
    if (s.ok()) {
      crc = Crc32(0, out.data(), span.bytes);
      if (job.fault_after_chunks != 0 && st->writes.fetch_add(1) >= job.fault_after_chunks) {
        s = ErrnoStatus(EIO, "write", *c.partial).At(kPackHeaderBytes + span.offset);
      } else {
        s = PwriteFull(c.out_fd, out.data(), span.bytes, kPackHeaderBytes + span.offset, *c.partial);
      }
    }
    if (!s.ok()) continue;  // reported at the top of the loop
    StartWriteback(c.out_fd, kPackHeaderBytes + span.offset, span.bytes);
    c.progress->bytes_done.fetch_add(span.bytes);
    {
      std::lock_guard<std::mutex> lock(st->mu);
      st->completed.push_back({k, crc});
      st->completed_bytes += span.bytes;
    }
    MaybeCommit(c);
  }
}

// Copies the chunks to do on the job's pool (the calling thread works too), committing as
// they complete, then commits the rest.
Status CopyChunks(const CopyContext& c) {
  RunParallel(c.job->pool, c.st->workers, c.st->workers, [&](size_t w) { CopyWorker(c, w); });
  // Chunks written before a worker failed are still committed: a re-run keeps them.
  Status commit = c.st->commit_error;
  if (commit.ok() && !c.st->completed.empty()) {
    commit = Commit(*c.job, c.out_fd, *c.partial, c.journal, c.st->completed, c.progress, c.result);
  }
  if (!c.st->error.ok()) return c.st->error;  // the first worker error explains more than a sync error
  return commit;
}

// Sets up <out>.partial and its journal for the job, keeping whatever an interrupted run
// left that is still good: `valid` marks the chunks that passed the re-check.
Status PrepareFiles(const PackJob& job, PackProgress* progress, PackResult* result, Fd* out_fd, PackJournal* journal,
                    std::vector<uint8_t>* valid) {
  const PackGeometry& g = job.geometry;
  const std::string partial = PartialPath(job.out_path), jpath = JournalPath(job.out_path);
  std::vector<JournalRecord> records;
  bool matches = false;
  Status s = PackJournal::Read(jpath, job.key, g.chunk_count(), &records, &matches);
  if (!s.ok()) return s;
  if (PathExists(job.out_path)) {
    // A finished file whose manifest was never written: check it through the resume path,
    // or drop it when no journal vouches for it.
    bool covered = false;
    if (matches) {
      std::vector<uint8_t> seen(g.chunk_count(), 0);
      for (const auto& r : records) seen[r.chunk] = 1;
      covered = std::all_of(seen.begin(), seen.end(), [](uint8_t v) { return v != 0; });
    }
    if (covered) {
      s = RenameDurable(job.out_path, partial);
    } else if (::unlink(job.out_path.c_str()) != 0) {
      s = ErrnoStatus(errno, "remove", job.out_path);
    }
    if (!s.ok()) return s;
  }
  bool have_partial = PathExists(partial);
  if (matches && !have_partial) ::unlink(jpath.c_str());  // records about a file that is gone
  bool reused = false;
  s = PackJournal::Open(jpath, job.key, g.chunk_count(), journal, &reused);
  if (!s.ok()) return s;
  result->journal_discarded = !reused && have_partial;
  int flags = O_RDWR | O_CREAT | (reused && have_partial ? 0 : O_TRUNC);
  s = OpenFile(partial, flags, out_fd);
  if (!s.ok()) return s;
  uint64_t size = 0;
  s = FileSize(out_fd->get(), partial, &size);
  if (!s.ok()) return s;
  if (size != g.file_bytes()) s = ReserveFile(out_fd->get(), g.file_bytes(), partial);
  if (!s.ok()) return s;
  std::string block;
  s = HeaderBlock(job.header, &block);
  if (s.ok()) s = PwriteFull(out_fd->get(), block.data(), block.size(), 0, partial);
  if (s.ok() && !(reused && have_partial)) s = SyncAll(out_fd->get(), partial);
  if (s.ok() && !(reused && have_partial)) s = SyncParentDir(partial);
  if (!s.ok()) return s;
  if (reused && have_partial && !journal->records().empty()) {
    progress->phase.store(static_cast<uint64_t>(PackPhase::kChecking));
    s = RecheckChunks(partial, job, journal->records(), progress, valid, &result->crcs,
                      &result->chunks_rejected);
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace

namespace {

Status PackLayerInner(const PackJob& job, PackProgress* progress, PackResult* result);

}  // namespace

Status PackLayer(const PackJob& job, PackProgress* progress, PackResult* result) {
  Status s = PackLayerInner(job, progress, result);
  // Advice that fits the cause: a read-only or forbidden --out is not fixed by freeing space.
  if (s.code == Code::E_NO_SPACE) {
    s.message += "; chunks already written are kept: free space and re-run the same command to resume";
  } else if (s.code == Code::E_IO) {
    s.message += "; chunks already written are kept: fix the cause and re-run the same command to resume";
  }
  return s;
}

namespace {

Status PackLayerInner(const PackJob& job, PackProgress* progress, PackResult* result) {
  const PackGeometry& g = job.geometry;
  *result = PackResult{};
  result->crcs.assign(g.chunk_count(), 0);
  progress->phase.store(static_cast<uint64_t>(PackPhase::kPreparing));
  progress->chunks_total.store(g.chunk_count());
  progress->bytes_total.store(g.data_bytes());
  progress->chunks_done.store(0);
  progress->bytes_done.store(0);
  std::string block;
  Status s = HeaderBlock(job.header, &block);
  if (!s.ok()) return s;
  s = CheckSourceRange(job.weight, job.scale, job.start, g);
  if (!s.ok()) return s;

  const std::string partial = PartialPath(job.out_path);
  Fd out_fd;
  PackJournal journal;
  std::vector<uint8_t> valid(g.chunk_count(), 0);
  s = PrepareFiles(job, progress, result, &out_fd, &journal, &valid);
  if (!s.ok()) return s;

  CopyState st;
  for (uint64_t k = 0; k < g.chunk_count(); ++k) {
    if (valid[k]) {
      ++result->chunks_kept;
    } else {
      st.todo.push_back(k);
    }
  }
  result->was_complete = st.todo.empty() && result->chunks_rejected == 0 && g.chunk_count() > 0;
  progress->phase.store(static_cast<uint64_t>(PackPhase::kCopying));
  if (!st.todo.empty()) {
    st.workers = std::clamp<size_t>(job.threads, 1, st.todo.size());
    s = CopyChunks(CopyContext{&job, out_fd.get(), &partial, &journal, &st, progress, result});
    if (!s.ok()) return s;
  }
  progress->phase.store(static_cast<uint64_t>(PackPhase::kFinishing));
  s = SyncAll(out_fd.get(), partial);
  if (!s.ok()) return s;
  out_fd.Close();
  s = RenameDurable(partial, job.out_path);
  if (!s.ok()) return s;
  progress->phase.store(static_cast<uint64_t>(PackPhase::kDone));
  return Status::Ok();
}

}  // namespace

}  // namespace spark
