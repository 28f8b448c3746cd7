#include "core/threads/parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

namespace spark {

namespace {

struct Shared {
  size_t n = 0;
  std::atomic<size_t> next{0};
  size_t done = 0;  // guarded by mu
  std::mutex mu;
  std::condition_variable cv;
  std::exception_ptr error;  // the first exception an item threw; guarded by mu
  const std::function<void(size_t)>* fn = nullptr;

  void Work() {
    size_t finished = 0;
    std::exception_ptr caught;
    for (size_t i = next.fetch_add(1, std::memory_order_relaxed); i < n;
         i = next.fetch_add(1, std::memory_order_relaxed)) {
      try {
        (*fn)(i);
      } catch (...) {
        if (!caught) caught = std::current_exception();
        // Skip the items nobody has taken yet; the taken ones still finish and are counted.
        size_t taken = next.exchange(n, std::memory_order_relaxed);
        if (taken < n) finished += n - taken;
      }
      ++finished;
    }
    if (finished == 0) return;  // late helper: fn may already be gone, touch nothing else
    std::lock_guard<std::mutex> lock(mu);
    if (caught && !error) error = caught;
    done += finished;
    if (done == n) cv.notify_all();
  }
};

}  // namespace

void RunParallel(ThreadPool& pool, size_t n, size_t width, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  if (width > n) width = n;
  if (width > pool.size()) width = pool.size();
  auto shared = std::make_shared<Shared>();
  shared->n = n;
  shared->fn = &fn;
  for (size_t t = 1; t < width; ++t) pool.Submit([shared] { shared->Work(); });
  shared->Work();
  std::unique_lock<std::mutex> lock(shared->mu);
  shared->cv.wait(lock, [&] { return shared->done == n; });
  // Taken out of `shared`, which a late helper may free on its own thread: the exception then
  // lives and dies on this one.
  std::exception_ptr error = std::move(shared->error);
  lock.unlock();
  if (error) std::rethrow_exception(error);
}

void RunParallel(ThreadPool* pool, size_t n, size_t width, const std::function<void(size_t)>& fn) {
  if (pool != nullptr) {
    RunParallel(*pool, n, width, fn);
  } else {
    for (size_t i = 0; i < n; ++i) fn(i);
  }
}

size_t Cores() {
  static const size_t cores = std::max<size_t>(1, std::thread::hardware_concurrency());
  return cores;
}

}  // namespace spark
