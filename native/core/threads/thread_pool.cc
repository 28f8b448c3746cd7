#include "core/threads/thread_pool.h"

#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>

namespace spark {

ThreadPool::ThreadPool(size_t threads) {
  Status st = Grow(threads == 0 ? 1 : threads);
  if (!st.ok()) {
    Abandon(std::chrono::milliseconds::max());  // joins what did start
    throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again), st.message);
  }
}

ThreadPool::~ThreadPool() {
  if (abandoned_) return;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stopping = true;
  }
  state_->cv.notify_all();
  for (auto& t : workers_) {
    // The last owner may be a task running on this very pool: it cannot join itself.
    if (t.get_id() == std::this_thread::get_id()) {
      t.detach();
    } else {
      t.join();
    }
  }
}

Status ThreadPool::Grow(size_t threads) {
  if (abandoned_) return Status::Error(Code::E_INTERNAL, "this thread pool was shut down");
  const size_t wanted = threads;
  workers_.reserve(wanted);
  while (workers_.size() < wanted) {
    size_t nth = workers_.size() + 1;
    int err = 0;
    if (fail_start_at_ != 0 && started_ + 1 == fail_start_at_) {
      err = EAGAIN;
    } else {
      {
        std::lock_guard<std::mutex> lock(state_->mu);
        ++state_->alive;
      }
      try {
        workers_.emplace_back([state = state_] { WorkerLoop(state); });
      } catch (const std::system_error& e) {
        err = e.code().value() != 0 ? e.code().value() : EAGAIN;
      } catch (const std::exception&) {
        err = ENOMEM;
      }
      if (err != 0) {
        std::lock_guard<std::mutex> lock(state_->mu);
        --state_->alive;
      }
    }
    ++started_;
    if (err != 0) {
      return Status::Error(Code::E_THREAD_START,
                           "could not start thread " + std::to_string(nth) + " of " + std::to_string(wanted) + ": " +
                               std::strerror(err) +
                               " (a pid limit: ulimit -u, or the container's pids limit); use fewer threads or raise "
                               "the limit");
    }
    size_.store(workers_.size(), std::memory_order_release);
  }
  return Status::Ok();
}

size_t ThreadPool::queued() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->queue.size();
}

void ThreadPool::Submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (!state_->stopping) {
      state_->queue.push_back(std::move(task));
      state_->cv.notify_one();
      return;
    }
  }
  // A stopping pool takes no new work (a RunParallel caller then does every item itself);
  // the task is destroyed here, outside the lock.
  task = nullptr;
}

bool ThreadPool::Abandon(std::chrono::milliseconds grace) {
  if (abandoned_) return true;
  abandoned_ = true;
  std::deque<std::function<void()>> dropped;
  bool all_exited = false;
  {
    std::unique_lock<std::mutex> lock(state_->mu);
    state_->stopping = true;
    state_->cancelled.store(true, std::memory_order_release);
    dropped.swap(state_->queue);
    state_->cv.notify_all();
    // wait_for with milliseconds::max() would overflow the clock: wait without a bound then.
    auto exited = [&] { return state_->alive == 0; };
    if (grace == std::chrono::milliseconds::max()) {
      state_->exited.wait(lock, exited);
      all_exited = true;
    } else {
      all_exited = state_->exited.wait_for(lock, grace, exited);
    }
  }
  dropped.clear();  // outside the lock: a task's destructor may do real work
  for (auto& t : workers_) {
    if (all_exited) {
      t.join();
    } else {
      t.detach();
    }
  }
  workers_.clear();
  size_.store(0, std::memory_order_release);
  return all_exited;
}

void ThreadPool::WorkerLoop(const std::shared_ptr<State>& state) {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(state->mu);
      state->cv.wait(lock, [&] { return state->stopping || !state->queue.empty(); });
      if (state->queue.empty()) {
        --state->alive;
        state->exited.notify_all();
        return;  // stopping and drained
      }
      task = std::move(state->queue.front());
      state->queue.pop_front();
    }
    try {
      task();
    } catch (...) {
      // A task broke its promise not to throw. Losing the worker (std::terminate) would take
      // the whole process down; the task's owner is responsible for reporting its failure.
    }
  }
}

}  // namespace spark
