#include "engine-libs/common/worker_team.h"

#include <pthread.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include "engine-libs/common/stderr_line.h"

namespace spark::engines {

void WorkerTeam::FreeAligned::operator()(uint8_t* p) const { std::free(p); }

WorkerTeam::~WorkerTeam() { Stop(); }

void WorkerTeam::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  workers_ = 0;
  task_ = nullptr;  // a task posted but never run: its owner is going away with the team
  task_waiting_.store(false, std::memory_order_relaxed);
}

bool WorkerTeam::Start(unsigned workers, IdleFn idle, void* idle_ctx) {
  idle_ = idle;
  idle_ctx_ = idle_ctx;
  for (unsigned i = 0; i <= workers; ++i) {
    void* p = std::aligned_alloc(kDirectAlign, kStagingBytes);
    if (p == nullptr) {
      errno = ENOMEM;
      return false;
    }
    staging_.emplace_back(static_cast<uint8_t*>(p));
  }
  threads_.reserve(workers);
  for (unsigned i = 1; i <= workers; ++i) {
    try {
      threads_.emplace_back([this, i] { WorkerLoop(i); });
    } catch (const std::system_error&) {
      Stop();
      errno = EAGAIN;
      return false;
    }
  }
  workers_ = workers;
  return true;
}

void WorkerTeam::RunItems(unsigned thread) {
  for (;;) {
    const size_t first = next_.fetch_add(run_, std::memory_order_relaxed);
    if (first >= n_) return;
    const size_t end = std::min(n_, first + run_);
    for (size_t i = first; i < end; ++i) fn_(ctx_, i, thread);
    completed_.fetch_add(end - first, std::memory_order_acq_rel);
  }
}

void WorkerTeam::Run(ItemFn fn, void* ctx, size_t n) {
  if (n == 0) return;
  std::lock_guard<std::mutex> run_lock(run_mu_);
  const unsigned helpers = static_cast<unsigned>(std::min<size_t>(workers_, n - 1));
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = fn;
    ctx_ = ctx;
    n_ = n;
    // Items are claimed in runs: a few per thread and round, so a large batch of quick items
    // (cache hits) is not a contended counter per item, while slow ones (reads) stay spread.
    run_ = std::clamp<size_t>(n / ((workers_ + 1) * 8), 1, 16);
    next_.store(0, std::memory_order_relaxed);
    completed_.store(0, std::memory_order_relaxed);
    ++generation_;
    job_open_.store(helpers > 0, std::memory_order_relaxed);
  }
  // Wake only as many workers as there are items for besides this thread's.
  if (helpers == workers_) {
    work_cv_.notify_all();
  } else {
    for (unsigned k = 0; k < helpers; ++k) work_cv_.notify_one();
  }
  RunItems(0);
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return completed_.load(std::memory_order_acquire) == n_ && active_ == 0; });
  job_open_.store(false, std::memory_order_relaxed);
  fn_ = nullptr;
  ctx_ = nullptr;
}

void WorkerTeam::WorkerLoop(unsigned index) {
  pthread_setname_np(pthread_self(), "spark-rows");
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] {
      return stopping_ || (job_open_.load(std::memory_order_relaxed) && generation_ != seen) || idle_wanted_ != 0 ||
             (task_ != nullptr && !task_running_) || line_len_.load(std::memory_order_relaxed) != 0;
    });
    if (stopping_) return;
    if (job_open_.load(std::memory_order_relaxed) && generation_ != seen) {
      seen = generation_;
      ++active_;
      lock.unlock();
      RunItems(index);
      lock.lock();
      if (--active_ == 0) done_cv_.notify_all();
      continue;
    }
    if (task_ != nullptr && !task_running_) {
      task_running_ = true;
      task_waiting_.store(false, std::memory_order_relaxed);
      const TaskFn fn = task_;
      void* ctx = task_ctx_;
      lock.unlock();
      fn(ctx);
      lock.lock();
      task_ = nullptr;
      task_running_ = false;
      task_cv_.notify_all();
      continue;
    }
    const bool idle = idle_wanted_ != 0;
    if (idle) --idle_wanted_;
    lock.unlock();
    {
      std::lock_guard<std::mutex> line_lock(line_mu_);
      if (const size_t len = line_len_.load(std::memory_order_relaxed); len != 0) {
        WriteStderrLine(line_, len);  // never waits: a full stderr drops the line
        line_len_.store(0, std::memory_order_relaxed);
      }
    }
    if (idle && idle_ != nullptr) idle_(idle_ctx_, index);
    lock.lock();
  }
}

void WorkerTeam::PostLine(const char* line, size_t len) {
  len = std::min(len, sizeof line_);
  if (workers_ == 0) {
    WriteStderrLine(line, len);
    return;
  }
  {
    std::unique_lock<std::mutex> line_lock(line_mu_, std::try_to_lock);
    if (!line_lock.owns_lock() || line_len_.load(std::memory_order_relaxed) != 0) {
      CountDroppedLine();  // the previous line is still being written
      return;
    }
    std::memcpy(line_, line, len);
    line_len_.store(len, std::memory_order_relaxed);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
  }
  work_cv_.notify_one();
}

void WorkerTeam::Post(TaskFn fn, void* ctx) {
  if (workers_ == 0) {
    fn(ctx);
    return;
  }
  {
    std::unique_lock<std::mutex> lock(mu_);
    task_cv_.wait(lock, [&] { return task_ == nullptr; });
    task_ = fn;
    task_ctx_ = ctx;
    task_waiting_.store(true, std::memory_order_relaxed);
  }
  work_cv_.notify_one();
}

void WorkerTeam::WaitPosted() {
  if (workers_ == 0) return;
  std::unique_lock<std::mutex> lock(mu_);
  task_cv_.wait(lock, [&] { return task_ == nullptr; });
}

void WorkerTeam::Nudge(unsigned count) {
  count = std::min(count, workers_);
  if (count == 0) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    idle_wanted_ = std::max(idle_wanted_, count);
  }
  for (unsigned k = 0; k < count; ++k) work_cv_.notify_one();
}

}  // namespace spark::engines
