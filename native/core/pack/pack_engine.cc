#include "core/pack/pack_engine.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>

#include "core/io/durable_file.h"
#include "core/pack/pack_journal.h"
#include "core/threads/background.h"
#include "core/threads/parallel.h"

namespace spark {

std::string PartialName(const std::string& name) { return name + ".partial"; }
std::string JournalName(const std::string& name) { return name + ".journal"; }

namespace {

using Clock = std::chrono::steady_clock;

// Runs fn(i) for i in [0, n) at once on the pool (the caller too), or in turn without one.
void RunItems(ThreadPool* pool, size_t n, const std::function<void(size_t)>& fn) {
  if (pool == nullptr) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  RunParallel(*pool, n, n, fn);
}

// The journal key of a data file: the job's key and the file's identity, so the journal
// never vouches for a file that replaced the one it was written for.
Status KeyFor(const PackFileJob& job, int fd, const std::string& path, std::string* key) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoStatus(errno, "stat", path);
  *key = FileJournalKey(job.key, st.st_dev, st.st_ino);
  return Status::Ok();
}

void KeepFirst(std::mutex* mu, Status* first, const Status& s) {
  if (s.ok()) return;
  std::lock_guard<std::mutex> lock(*mu);
  if (first->ok()) *first = s;
}

// Re-reads the chunks a journal claims and keeps those whose bytes still match. Latest record
// per chunk wins (a chunk is only re-journaled after being rewritten).
Status RecheckChunks(const PackFileJob& job, const PackTarget& target, const std::vector<JournalRecord>& records,
                     PackProgress* progress, std::vector<uint8_t>* valid, PackResult* result) {
  std::vector<int64_t> claimed(target.chunk_count(), -1);
  for (const auto& r : records) claimed[r.chunk] = r.crc;
  std::vector<uint64_t> todo;
  for (uint64_t k = 0; k < claimed.size(); ++k) {
    if (claimed[k] >= 0) todo.push_back(k);
  }
  const std::string partial = PartialName(job.name);
  std::atomic<uint64_t> bad{0};
  std::mutex mu;
  Status first_error;
  size_t workers = std::clamp<size_t>(job.threads, 1, std::max<size_t>(todo.size(), 1));
  RunItems(job.pool, workers, [&](size_t w) {
    // Each reader its own descriptor and a contiguous run: one sequential stream each.
    Fd fd;
    bool exists = false;
    std::unique_ptr<PackTarget::Worker> worker;
    Status s = job.dir->OpenExisting(partial, O_RDONLY, &fd, &exists);
    if (s.ok() && !exists) s = Status::Error(Code::E_IO, "disappeared during the re-check", job.dir->PathOf(partial));
    if (s.ok()) s = target.NewWorker(&worker);
    if (s.ok()) ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
    auto [lo, hi] = ContiguousRun(todo.size(), workers, w);
    for (size_t i = lo; s.ok() && i < hi; ++i) {
      uint64_t k = todo[i];
      uint32_t crc = 0;
      bool complete = false;
      s = worker->Recheck(k, fd.get(), job.dir->PathOf(partial), &crc, &complete);
      if (!s.ok()) break;
      if (complete && crc == static_cast<uint32_t>(claimed[k])) {
        (*valid)[k] = 1;
        result->crcs[k] = crc;
        progress->chunks_done.fetch_add(1);
        progress->bytes_done.fetch_add(target.chunk_bytes(k));
      } else {
        bad.fetch_add(1);
      }
    }
    KeepFirst(&mu, &first_error, s);
  });
  result->chunks_rejected = bad.load();
  return first_error;
}

// Sets up <name>.partial and its journal, keeping whatever an interrupted run left that is
// still good: `valid` marks the chunks that passed the re-check.
Status PrepareFiles(const PackFileJob& job, const PackTarget& target, PackProgress* progress, PackResult* result,
                    Fd* out_fd, PackJournal* journal, std::vector<uint8_t>* valid) {
  const PackDir& dir = *job.dir;
  const std::string partial = PartialName(job.name), jname = JournalName(job.name);
  const uint64_t chunks = target.chunk_count();
  std::string key;
  std::vector<JournalRecord> records;
  bool matches = false;
  // A finished file whose manifest was never written: check it through the resume path,
  // or drop it when no journal vouches for it.
  Fd fin;
  bool have_final = false;
  Status s = job.finish_as_partial ? Status::Ok() : dir.OpenExisting(job.name, O_RDONLY, &fin, &have_final);
  if (!s.ok()) return s;
  if (have_final) {
    s = KeyFor(job, fin.get(), dir.PathOf(job.name), &key);
    if (s.ok()) s = PackJournal::Read(dir, jname, key, chunks, &records, &matches);
    if (!s.ok()) return s;
    std::vector<uint8_t> seen(chunks, 0);
    for (const auto& r : records) seen[r.chunk] = 1;
    bool covered = matches && std::all_of(seen.begin(), seen.end(), [](uint8_t v) { return v != 0; });
    fin.Close();
    s = covered ? dir.Remove(partial) : dir.Remove(job.name);
    if (s.ok() && covered) s = dir.Rename(job.name, partial);
    if (!s.ok()) return s;
  }
  // The data file of an interrupted run, if its journal is for this job and this very file.
  bool have_partial = false;
  s = dir.OpenExisting(partial, O_RDWR, out_fd, &have_partial);
  if (!s.ok()) return s;
  matches = false;
  if (have_partial) {
    s = KeyFor(job, out_fd->get(), dir.PathOf(partial), &key);
    if (s.ok()) s = PackJournal::Read(dir, jname, key, chunks, &records, &matches);
    if (!s.ok()) return s;
    result->journal_discarded = !matches;
  }
  if (!matches) {
    // The data file goes before its journal, so that a kill in between never leaves a
    // .partial without the journal that proves it spark's (pack_journal.h).
    out_fd->Close();
    s = dir.Remove(partial);
    if (s.ok()) s = dir.Remove(jname);
    if (s.ok()) s = dir.Create(partial, out_fd);
    if (s.ok()) s = KeyFor(job, out_fd->get(), dir.PathOf(partial), &key);
    if (!s.ok()) return s;
  }
  bool reused = false;
  s = PackJournal::Open(dir, jname, key, chunks, journal, &reused);
  if (!s.ok()) return s;
  s = target.Prepare(out_fd->get(), dir.PathOf(partial));
  if (s.ok() && !reused) s = SyncAll(out_fd->get(), dir.PathOf(partial));
  if (s.ok() && !reused) s = dir.Sync();
  if (!s.ok()) return s;
  if (reused && !journal->records().empty()) {
    progress->phase.store(static_cast<uint64_t>(PackPhase::kChecking));
    s = RecheckChunks(job, target, journal->records(), progress, valid, result);
  }
  return s;
}

struct CopyState {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<uint64_t> todo;
  size_t workers = 1;
  size_t active = 0;
  std::atomic<uint64_t> writes{0};  // for fault_after_chunks
  std::atomic<bool> reads_buffered{false};
  std::vector<JournalRecord> completed;  // written, not yet journaled
  uint64_t completed_bytes = 0;
  Status error;
  bool stop = false;
};

// Records a worker's first error and stops everyone; says whether to stop.
bool ReportAndCheckStop(CopyState* st, const Status& s) {
  std::lock_guard<std::mutex> lock(st->mu);
  if (!s.ok() && st->error.ok()) {
    st->error = s;
    st->stop = true;
  }
  return st->stop;
}

// Worker w copies a contiguous run of the chunks to do, in order: its source descriptors see
// one sequential stream each. Double buffered: chunk k + 1 is staged (read, checksummed) on
// the worker's background thread while chunk k is written here. The rate limiter is asked
// for a chunk's bytes before its read starts.
void CopyItem(const PackFileJob& job, const PackTarget& target, size_t w, const SpanWriter& out, CopyState* st,
              PackProgress* progress) {
  std::unique_ptr<PackTarget::Worker> worker;
  Status s = target.NewWorker(&worker);
  Background ahead;  // declared after the worker: joined before the worker goes
  if (s.ok() && !worker->ReadsDirect()) st->reads_buffered.store(true);
  auto [next, end] = ContiguousRun(st->todo.size(), st->workers, w);
  uint32_t crcs[2] = {0, 0};
  auto stage = [&](uint64_t k, int slot) {
    if (job.rate != nullptr) job.rate->Acquire(target.chunk_bytes(k));
    return worker->Stage(k, slot, &crcs[slot]);
  };
  int slot = 0;
  bool have = s.ok() && next < end && !ReportAndCheckStop(st, s);
  uint64_t k = have ? st->todo[next++] : 0;
  if (have) s = stage(k, slot);
  while (have && !ReportAndCheckStop(st, s)) {
    const bool more = next < end;
    const uint64_t after = more ? st->todo[next++] : 0;
    if (more) ahead.Start([&stage, after, slot] { return stage(after, 1 - slot); });
    if (job.fault_after_chunks != 0 && st->writes.fetch_add(1) >= job.fault_after_chunks) {
      s = ErrnoStatus(EIO, "write", out.path());
    } else {
      s = worker->Write(k, slot, out);
    }
    Status read = more ? ahead.Wait() : Status::Ok();
    if (s.ok()) {
      progress->bytes_done.fetch_add(target.chunk_bytes(k));
      std::lock_guard<std::mutex> lock(st->mu);
      st->completed.push_back({k, crcs[slot]});
      st->completed_bytes += target.chunk_bytes(k);
      st->cv.notify_all();
      s = read;
    }
    have = more;
    k = after;
    slot = 1 - slot;
  }
  ReportAndCheckStop(st, s);
  std::lock_guard<std::mutex> lock(st->mu);
  --st->active;
  st->cv.notify_all();
}

// Commits completed chunks (fdatasync of the data, then their journal records) until the
// workers are done.
Status CommitLoop(const PackFileJob& job, const PackTarget& target, int out_fd, PackJournal* journal, CopyState* st,
                  PackProgress* progress, PackResult* result) {
  const std::string partial = job.dir->PathOf(PartialName(job.name));
  auto last = Clock::now();
  const auto interval = std::chrono::duration<double>(job.commit_seconds);
  Status commit_error;
  for (;;) {
    std::vector<JournalRecord> batch;
    bool finished = false;
    {
      std::unique_lock<std::mutex> lock(st->mu);
      st->cv.wait_for(lock, std::chrono::milliseconds(100),
                      [&] { return st->active == 0 || st->completed_bytes >= job.commit_bytes; });
      finished = st->active == 0;
      bool due = st->completed_bytes >= job.commit_bytes || Clock::now() - last >= interval;
      if (finished || (due && !st->completed.empty())) {
        batch.swap(st->completed);
        st->completed_bytes = 0;
      }
    }
    if (!batch.empty() && commit_error.ok()) {
      Status s = SyncData(out_fd, partial);
      if (s.ok()) s = journal->Append(batch);
      if (s.ok()) {
        for (const auto& r : batch) {
          result->crcs[r.chunk] = r.crc;
          ++result->chunks_written;
          result->bytes_written += target.chunk_bytes(r.chunk);
          progress->chunks_done.fetch_add(1);
          if (job.drop_cache) target.DropWritten(out_fd, r.chunk);
        }
      } else {
        commit_error = s;
        std::lock_guard<std::mutex> lock(st->mu);
        st->stop = true;
      }
      last = Clock::now();
    }
    if (finished) {
      std::lock_guard<std::mutex> lock(st->mu);
      if (st->completed.empty()) break;
    }
  }
  if (!st->error.ok()) return st->error;  // the first worker error explains more than a sync error
  return commit_error;
}

Status PackFileInner(const PackFileJob& job, const PackTarget& target, PackProgress* progress, PackResult* result) {
  const uint64_t chunks = target.chunk_count();
  *result = PackResult{};
  result->crcs.assign(chunks, 0);
  progress->phase.store(static_cast<uint64_t>(PackPhase::kPreparing));
  progress->chunks_total.store(chunks);
  progress->bytes_total.store(target.total_bytes());
  progress->chunks_done.store(0);
  progress->bytes_done.store(0);
  if (job.dir == nullptr) return Status::Error(Code::E_INTERNAL, "pack job without a directory");
  Status s = target.CheckSources();
  if (!s.ok()) return s;

  Fd out_fd;
  PackJournal journal;
  std::vector<uint8_t> valid(chunks, 0);
  s = PrepareFiles(job, target, progress, result, &out_fd, &journal, &valid);
  if (!s.ok()) return s;

  CopyState st;
  for (uint64_t k = 0; k < chunks; ++k) {
    if (valid[k]) {
      ++result->chunks_kept;
    } else {
      st.todo.push_back(k);
    }
  }
  result->was_complete = st.todo.empty() && result->chunks_rejected == 0 && chunks > 0;
  progress->phase.store(static_cast<uint64_t>(PackPhase::kCopying));
  if (!st.todo.empty()) {
    size_t workers = std::clamp<size_t>(job.threads, 1, st.todo.size());
    st.active = workers;
    st.workers = workers;
    SpanWriter out;
    s = out.Open(*job.dir, PartialName(job.name), out_fd.get(), job.direct_io, job.direct_refusal_for_tests);
    if (!s.ok()) return s;
    // Items 0..workers-1 copy; the last one commits. Items are handed out in order, so the
    // committer starts only once every copier has, and copiers never wait for it.
    Status commit;
    RunItems(job.pool, workers + 1, [&](size_t i) {
      if (i < workers) {
        CopyItem(job, target, i, out, &st, progress);
      } else {
        commit = CommitLoop(job, target, out_fd.get(), &journal, &st, progress, result);
      }
    });
    if (!commit.ok()) return commit;
    result->read_io = IoModeName(!st.reads_buffered.load());
    result->write_io = IoModeName(out.direct());
  }
  progress->phase.store(static_cast<uint64_t>(PackPhase::kFinishing));
  const std::string partial = PartialName(job.name);
  s = SyncAll(out_fd.get(), job.dir->PathOf(partial));
  if (!s.ok()) return s;
  out_fd.Close();
  if (!job.finish_as_partial) s = job.dir->Rename(partial, job.name);
  if (!s.ok()) return s;
  progress->phase.store(static_cast<uint64_t>(PackPhase::kDone));
  return Status::Ok();
}

}  // namespace

Status PackFile(const PackFileJob& job, const PackTarget& target, PackProgress* progress, PackResult* result) {
  Status s = PackFileInner(job, target, progress, result);
  // Advice that fits the cause: a read-only or forbidden --out is not fixed by freeing space.
  if (s.code == Code::E_NO_SPACE) {
    s.message += "; chunks already written are kept: free space and re-run the same command to resume";
  } else if (s.code == Code::E_IO) {
    s.message += "; chunks already written are kept: fix the cause and re-run the same command to resume";
  }
  return s;
}

}  // namespace spark
