// The io_uring engine's insides, shared by uring_reader.cc (setup, the submitting loop, issuing
// calls) and uring_reader_complete.cc (what a completion means: done, continued, retried,
// failed). Not part of the core's interface: include core/row_store/uring_reader.h.
#pragma once

#include <time.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "core/io/uring.h"
#include "core/row_store/uring_reader.h"

namespace spark {

namespace uring_detail {
// One read call asks for at most this much (an SQE's length is 32 bits); a longer read is
// continued like a short one. A multiple of kDirectAlign.
inline constexpr uint64_t kMaxCall = 1ull << 30;
inline constexpr uint64_t kWakeTag = ~0ull;  // user_data of the eventfd poll that wakes the thread

inline uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline void Count(const ReadContext& ctx, std::atomic<uint64_t> ReadCounters::* which) {
  if (ctx.counters != nullptr) (ctx.counters->*which).fetch_add(1, std::memory_order_relaxed);
}

// A batch as the submitting thread tracks it. Lives on the stack of the Run that waits for it.
struct Batch {
  const ReadOp* ops = nullptr;
  const Piece* pieces = nullptr;
  uint8_t* out = nullptr;
  size_t n = 0;
  // Submitting thread only, until `done`:
  size_t next = 0;        // first op not yet given a slot
  size_t unfinished = 0;  // ops neither finished nor skipped
  bool queued = true;     // still in the queue (set before it is pushed): not finished from Release
  bool failed = false;
  Status first;
  // Handing the result back:
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
};

// One read in flight (or waiting to be issued again); user_data of its SQE is its index.
struct Slot {
  Batch* batch = nullptr;
  uint32_t op = 0;
  size_t done = 0;        // bytes of the op read so far
  uint32_t failures = 0;  // transient errors met
  bool trim = false;      // fault injection: report align/2 fewer bytes
  bool fixed = false;     // buf is in the registered arena
  uint8_t* buf = nullptr;
  uint8_t* arena = nullptr;  // this slot's part of the registered arena
  AlignedBuffer big;         // staging for a read larger than a slot
};

}  // namespace uring_detail

struct UringReader::Impl {
  using Batch = uring_detail::Batch;
  using Slot = uring_detail::Slot;
  std::unique_ptr<Uring> ring;
  std::vector<ReadFile*> files;
  std::vector<int> registered;  // descriptor registered at each file index
  ReadContext ctx;
  const std::atomic<bool>* closed = nullptr;
  uint64_t slot_bytes = 0;
  bool fixed_buffers = false;
  uint8_t* arena = nullptr;
  std::unique_ptr<Slot[]> slots;
  unsigned depth = 0;
  int wake_fd = -1;
  std::thread thread;

  std::mutex mu;  // guards queue and stopping
  std::deque<Batch*> queue;
  bool stopping = false;

  // Submitting thread only:
  std::vector<uint32_t> free;                           // slot indices
  std::vector<uint32_t> ready;                          // slots whose next call must be issued
  std::vector<std::pair<uint64_t, uint32_t>> deferred;  // (due ns, slot): retries backing off
  bool wake_armed = false;
  size_t busy = 0;  // slots not free

  ~Impl() {
    std::free(arena);
    if (wake_fd >= 0) close(wake_fd);
  }

  void Wake() {
    uint64_t one = 1;
    while (write(wake_fd, &one, sizeof one) < 0 && errno == EINTR) {
    }
  }

  void Loop();
  bool Admit();
  bool Issue(uint32_t slot);
  void Complete(uint32_t slot, int res);
  void Succeed(uint32_t slot);
  void Fail(Batch& b, Status st);
  void Release(uint32_t slot);
  void Finish(Batch& b);
  bool Retry(uint32_t slot, int err);
  size_t Align(const ReadOp& op) const { return files[op.file]->direct() ? kDirectAlign : 1; }
};

}  // namespace spark
