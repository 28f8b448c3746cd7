// A fixed team of worker threads that runs one job at a time, with nothing allocated per job:
// a gather hands the team a function and a count of items, the caller and the workers claim
// items from one counter, and the call returns when every item has run and no worker still
// touches the job. Each thread has an index (0 = the calling thread, 1..workers) and its own
// staging buffer for O_DIRECT reads under that index.
//
// Between jobs the workers do background work: a task handed over by Post (one at a time), one
// log line handed over by PostLine (written there rather than on the gathering thread;
// stderr_line.h: never waiting on stderr either way), then the owner's idle hook (the overlay
// library's prefetch reads), which must return soon after job_open() turns true.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/base/noncopyable.h"
#include "core/io/random_read.h"

namespace spark::engines {

// Bytes of staging per thread: a row of up to 264 bytes spans at most two 4 KiB blocks.
inline constexpr size_t kStagingBytes = 2 * kDirectAlign;

class WorkerTeam : NonCopyable {
 public:
  using ItemFn = void (*)(void* ctx, size_t item, unsigned thread);
  using IdleFn = void (*)(void* ctx, unsigned thread);
  using TaskFn = void (*)(void* ctx);

  WorkerTeam() = default;
  ~WorkerTeam();  // stops and joins every worker

  // Allocates the staging buffers and starts `workers` threads. On failure (errno set:
  // ENOMEM, or EAGAIN when a thread cannot start) the team has no workers and returns false.
  bool Start(unsigned workers, IdleFn idle = nullptr, void* idle_ctx = nullptr);
  unsigned workers() const { return workers_; }

  // Runs fn(ctx, item, thread) for every item in [0, n) and returns when all have run.
  // Calls from several threads at once run one after the other.
  void Run(ItemFn fn, void* ctx, size_t n);
  // A job runs or a posted task waits for a worker: idle work must return soon.
  bool job_open() const {
    return job_open_.load(std::memory_order_relaxed) || task_waiting_.load(std::memory_order_relaxed);
  }

  // The staging buffer of thread index `thread` (kStagingBytes, aligned for O_DIRECT).
  uint8_t* staging(unsigned thread) const { return staging_[thread].get(); }

  // Writes `line` to stderr from a worker; with no workers, on this thread (stderr_line.h:
  // never waiting). A line posted while the previous one is still waiting is dropped (and
  // counted).
  void PostLine(const char* line, size_t len);
  // Wakes up to `count` workers to run the idle hook (no effect without workers).
  void Nudge(unsigned count);
  // Runs fn(ctx) once on a worker after this call returns: work a caller need not wait for
  // (a gather's cache inserts, done while the engine uses the rows). One task at a time: Post
  // first waits for the one before. With no workers, runs it here and now.
  void Post(TaskFn fn, void* ctx);
  // Returns when no posted task is waiting or running (at once when none was posted).
  void WaitPosted();

 private:
  struct FreeAligned {
    void operator()(uint8_t* p) const;
  };
  void WorkerLoop(unsigned index);
  void RunItems(unsigned thread);
  void Stop();

  unsigned workers_ = 0;
  std::vector<std::thread> threads_;
  std::vector<std::unique_ptr<uint8_t, FreeAligned>> staging_;
  IdleFn idle_ = nullptr;
  void* idle_ctx_ = nullptr;

  std::mutex run_mu_;  // one job at a time
  std::mutex mu_;      // the fields below
  std::condition_variable work_cv_, done_cv_;
  bool stopping_ = false;
  uint64_t generation_ = 0;
  unsigned active_ = 0;       // workers inside the current job
  unsigned idle_wanted_ = 0;  // workers still to run the idle hook
  ItemFn fn_ = nullptr;
  void* ctx_ = nullptr;
  size_t n_ = 0;
  size_t run_ = 1;         // items claimed at once
  TaskFn task_ = nullptr;  // the posted task, until it has run
  void* task_ctx_ = nullptr;
  bool task_running_ = false;
  std::atomic<bool> task_waiting_{false};  // posted, not yet taken by a worker
  std::condition_variable task_cv_;
  std::atomic<bool> job_open_{false};
  std::atomic<size_t> next_{0}, completed_{0};

  std::mutex line_mu_;
  char line_[512];
  std::atomic<size_t> line_len_{0};  // 0: no line waiting (written under line_mu_)
};

}  // namespace spark::engines
