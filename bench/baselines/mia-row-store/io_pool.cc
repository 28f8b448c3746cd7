#include "io_pool.h"

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace mia {
namespace {

struct Job {
  uint64_t count = 0;
  TicketFn fn = nullptr;
  void* ctx = nullptr;
};

class Pool {
 public:
  explicit Pool(unsigned threads) : threads_(threads), worker_count_(threads - 1) {
    for (unsigned i = 1; i < threads_; i++) workers_.emplace_back([this] { Work(); });
  }
  unsigned threads() const { return threads_; }

  void Run(uint64_t count, TicketFn fn, void* ctx) {
    std::lock_guard<std::mutex> one_job(job_lock_);
    if (threads_ <= 1 || count < kSerialBelow) {
      uint8_t* buf = ThreadBuffer();
      for (uint64_t i = 0; i < count; i++) fn(ctx, i, buf);
      return;
    }
    {
      std::lock_guard<std::mutex> l(m_);
      job_ = Job{count, fn, ctx};
      next_.store(0, std::memory_order_relaxed);
      arrived_ = 0;
      generation_++;
    }
    wake_.notify_all();
    Take(ThreadBuffer());
    // Every worker takes part in every job (with no ticket left, at least the failed take):
    // none can still be reading this job's fields when the next one is written.
    std::unique_lock<std::mutex> l(m_);
    finished_.wait(l, [&] { return arrived_ == worker_count_; });
  }

 private:
  // Takes tickets, one id each, until none is left.
  void Take(uint8_t* buf) {
    for (;;) {
      uint64_t i = next_.fetch_add(1, std::memory_order_relaxed);
      if (i >= job_.count) return;
      job_.fn(job_.ctx, i, buf);
    }
  }

  void Work() {
    uint8_t* buf = ThreadBuffer();
    uint64_t seen = 0;
    std::unique_lock<std::mutex> l(m_);
    for (;;) {
      wake_.wait(l, [&] { return generation_ != seen; });
      seen = generation_;
      l.unlock();
      Take(buf);
      l.lock();
      if (++arrived_ == worker_count_) finished_.notify_one();
    }
  }

  const unsigned threads_;
  const size_t worker_count_;
  std::vector<std::thread> workers_;  // never joined: the pool lives as long as the process
  std::mutex job_lock_;
  std::mutex m_;
  std::condition_variable wake_, finished_;
  Job job_;
  std::atomic<uint64_t> next_{0};
  size_t arrived_ = 0;
  uint64_t generation_ = 0;
};

unsigned ThreadsFromEnv() {
  const char* v = std::getenv("DSV41_IO_THREADS");
  if (!v || !*v) return 32;
  char* end = nullptr;
  long long n = std::strtoll(v, &end, 10);
  if (*end != '\0' || n <= 1) return 1;
  return n > 1024 ? 1024 : static_cast<unsigned>(n);
}

Pool& ThePool() {
  // Leaked on purpose: workers block on its condition variables until the process exits.
  static Pool* pool = new Pool(ThreadsFromEnv());
  return *pool;
}

}  // namespace

unsigned PoolThreads() { return ThePool().threads(); }

void RunTickets(uint64_t count, TicketFn fn, void* ctx) { ThePool().Run(count, fn, ctx); }

uint8_t* ThreadBuffer() {
  // Freed when its thread ends (a caller's thread may come and go).
  struct Owned {
    uint8_t* p = nullptr;
    ~Owned() { std::free(p); }
  };
  thread_local Owned buf;
  if (!buf.p) {
    void* p = nullptr;
    if (posix_memalign(&p, 4096, kBufferBytes) != 0) {
      std::fprintf(stderr, "row_store: cannot allocate a read buffer\n");
      std::abort();
    }
    buf.p = static_cast<uint8_t*>(p);
  }
  return buf.p;
}

}  // namespace mia
