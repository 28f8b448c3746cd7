// The one way native code runs work on other threads: a pool of worker threads, and
// RunParallel (core/threads/parallel.h) to fan a piece of work out over it. libuv's pool is 4 threads
// shared with fs, dns and zlib; the row store wants 64-96 blocking readers, the packer and the
// header reader their own widths, so the addon brings its own pools (one set per Node
// environment, see binding/addon_env.h).
//
// Starting threads can fail (a container's pid limit, ulimit -u): Grow() reports that as a
// Status instead of throwing out of a half-built pool. Stopping has two forms: the destructor
// finishes queued work and joins (tests, a row store being disposed); Abandon() is for an
// environment that is going away, where waiting for a read stuck on a dead NFS server would
// hang the exit.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/base/status.h"

namespace spark {

class ThreadPool {
 public:
  ThreadPool() = default;
  // A pool of `threads` (at least 1). Throws std::system_error, after joining the threads it
  // did start, when one cannot be started; code that must not throw uses Grow().
  explicit ThreadPool(size_t threads);
  ~ThreadPool();  // finishes queued tasks, then joins (nothing to do after Abandon)
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Starts threads until the pool has `threads`. When one fails to start, the pool keeps the
  // threads it has (all usable) and the error is E_THREAD_START naming which one and why.
  // Not thread-safe against itself: one owner grows a pool.
  Status Grow(size_t threads);
  size_t size() const { return size_.load(std::memory_order_acquire); }
  // Tasks waiting for a thread (tests: proves a batch queued no helper).
  size_t queued() const;

  // Tasks must not throw (RunParallel and the binding's batons catch what they run); one
  // that does is contained so the worker survives. A pool that is stopping destroys the task
  // instead of queueing it.
  void Submit(std::function<void()> task);

  // Environment teardown: queued tasks are dropped (destroyed, not run), running ones see
  // cancelled() and the threads exit after their current task. Waits up to `grace` for that,
  // then leaves the stragglers detached: they hold only state they share with their task.
  // Returns true when every thread exited within the grace period.
  bool Abandon(std::chrono::milliseconds grace);
  // True once Abandon() was called: long-running tasks poll it and stop early.
  bool cancelled() const { return state_->cancelled.load(std::memory_order_acquire); }

  // Tests only: the start of the nth thread (1-based, counted over the pool's life) fails as
  // if the system had refused it (EAGAIN). 0 turns it off.
  void FailThreadStartForTesting(size_t nth) { fail_start_at_ = nth; }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;      // work queued or stopping
    std::condition_variable exited;  // a worker left its loop
    std::deque<std::function<void()>> queue;
    bool stopping = false;
    size_t alive = 0;  // workers still in their loop
    std::atomic<bool> cancelled{false};
  };
  static void WorkerLoop(const std::shared_ptr<State>& state);

  std::shared_ptr<State> state_ = std::make_shared<State>();
  std::vector<std::thread> workers_;
  std::atomic<size_t> size_{0};
  size_t started_ = 0;  // threads ever started (for the test switch)
  size_t fail_start_at_ = 0;
  bool abandoned_ = false;
};

}  // namespace spark
