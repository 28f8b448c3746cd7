// A fixed-size pool of worker threads owned by the addon. libuv's pool is 4 threads shared
// with fs, dns and zlib; the row store wants 64-96 blocking readers, so it brings its own.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace spark {

class ThreadPool {
 public:
  explicit ThreadPool(size_t threads);
  ~ThreadPool();  // finishes queued tasks, then joins
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t size() const { return workers_.size(); }
  void Submit(std::function<void()> task);
  // To fan one piece of work out over the pool, see RunParallel (core/parallel.h).

 private:
  void WorkerLoop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace spark
