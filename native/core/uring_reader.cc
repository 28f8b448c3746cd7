#include "core/uring_reader.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>

#include "core/checked.h"
#include "core/uring.h"

namespace spark {

namespace {

// One read call asks for at most this much (an SQE's length is 32 bits); a longer read is
// continued like a short one. A multiple of kDirectAlign.
constexpr uint64_t kMaxCall = 1ull << 30;
constexpr uint64_t kWakeTag = ~0ull;  // user_data of the eventfd poll that wakes the thread

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void Count(const ReadContext& ctx, std::atomic<uint64_t> ReadCounters::*which) {
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

}  // namespace

struct UringReader::Impl {
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
  std::vector<uint32_t> free;   // slot indices
  std::vector<uint32_t> ready;  // slots whose next call must be issued
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

UringReader::UringReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Status UringReader::Create(const std::vector<ReadFile*>& files, const UringReaderOptions& options, const ReadContext& ctx,
                           const std::atomic<bool>* closed, std::unique_ptr<UringReader>* out) {
  auto m = std::make_unique<Impl>();
  const unsigned depth = std::clamp(options.depth, 1u, 4096u);
  Status st = Uring::Create(depth + 1, options.refuse_errno, &m->ring);  // + 1: the wake-up poll
  if (!st.ok()) return st;
  // A buffered read of pages not in the cache may go to a kernel worker: let as many work as
  // there are reads in flight (an older kernel keeps its default; that is not an error).
  m->ring->SetMaxWorkers(depth, 0);
  m->files = files;
  m->ctx = ctx;
  m->closed = closed;
  for (ReadFile* f : files) m->registered.push_back(f->fd());
  if (!files.empty()) {
    int r = m->ring->RegisterFiles(m->registered.data(), static_cast<unsigned>(files.size()));
    if (r < 0) return ErrnoStatus(-r, "io_uring_register (files)", {});
  }
  m->slot_bytes = std::clamp<uint64_t>((options.slot_bytes + kDirectAlign - 1) / kDirectAlign * kDirectAlign,
                                       kDirectAlign, 1u << 20);
  auto arena_bytes = CheckedMul(m->slot_bytes, depth);
  if (!arena_bytes || *arena_bytes > SIZE_MAX) return Status::Error(Code::E_USAGE, "io_uring staging arena too large");
  m->arena = static_cast<uint8_t*>(std::aligned_alloc(kDirectAlign, *arena_bytes));
  if (m->arena == nullptr) return Status::Error(Code::E_INTERNAL, "out of memory for the io_uring staging arena");
  // Registration pins the arena; a tight RLIMIT_MEMLOCK (kernels before 5.12 count it there)
  // refuses it, and the slots are then read into with plain IORING_OP_READ.
  m->fixed_buffers = m->ring->RegisterBuffer(m->arena, *arena_bytes) == 0;
  m->slots.reset(new Slot[depth]);
  m->depth = depth;
  for (uint32_t i = 0; i < depth; ++i) {
    m->slots[i].arena = m->arena + i * m->slot_bytes;
    m->free.push_back(depth - 1 - i);
  }
  m->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (m->wake_fd < 0) return ErrnoStatus(errno, "eventfd", {});
  Impl* raw = m.get();
  try {
    m->thread = std::thread([raw] { raw->Loop(); });
  } catch (const std::system_error& e) {
    return Status::Error(Code::E_THREAD_START, std::string("could not start the io_uring submitting thread: ") + e.what());
  }
  out->reset(new UringReader(std::move(m)));
  return Status::Ok();
}

UringReader::~UringReader() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->Wake();
  impl_->thread.join();
}

bool UringReader::registered_buffers() const { return impl_->fixed_buffers; }
unsigned UringReader::depth() const { return impl_->depth; }

Status UringReader::Run(const std::vector<ReadOp>& ops, const std::vector<Piece>& pieces, uint8_t* out) {
  if (ops.empty()) return Status::Ok();
  Batch b;
  b.ops = ops.data();
  b.pieces = pieces.data();
  b.out = out;
  b.n = ops.size();
  b.unfinished = ops.size();
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->queue.push_back(&b);
  }
  impl_->Wake();
  std::unique_lock<std::mutex> lock(b.mu);
  b.cv.wait(lock, [&b] { return b.done; });
  return b.first;
}

void UringReader::Impl::Loop() {
  for (;;) {
    bool stop = Admit();
    if (stop) return;
    int64_t timeout = -1;
    if (!deferred.empty()) {
      uint64_t due = std::min_element(deferred.begin(), deferred.end())->first;
      uint64_t now = NowNs();
      timeout = due > now ? static_cast<int64_t>(due - now) : 0;
    }
    int r = ring->Enter(1, timeout);
    if (r < 0 && r != -ETIME && r != -EINTR && r != -EAGAIN && r != -EBUSY) {
      // Not expected with a ring this thread alone uses: the SQEs stay queued and are
      // submitted by the next call; wait a moment instead of spinning.
      usleep(1000);
    }
    ring->Reap([this](uint64_t tag, int res) {
      if (tag == kWakeTag) {
        uint64_t v;
        while (read(wake_fd, &v, sizeof v) < 0 && errno == EINTR) {
        }
        wake_armed = false;
      } else {
        Complete(static_cast<uint32_t>(tag), res);
      }
    });
  }
}

// Gives queued ops free slots, issues every ready call the ring has room for, and arms the
// wake-up poll. Returns true when the reader is stopping and nothing is in flight.
bool UringReader::Impl::Admit() {
  if (!deferred.empty()) {
    uint64_t now = NowNs();
    for (size_t i = 0; i < deferred.size();) {
      if (deferred[i].first <= now) {
        ready.push_back(deferred[i].second);
        deferred[i] = deferred.back();
        deferred.pop_back();
      } else {
        ++i;
      }
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    if (stopping && busy == 0 && queue.empty()) return true;
    while (!queue.empty()) {
      Batch& b = *queue.front();
      if (!b.failed && closed->load(std::memory_order_relaxed)) {
        Fail(b, Status::Error(Code::E_STORE_CLOSED, "the row store was closed while this batch was in flight"));
      }
      if (b.failed) {
        b.unfinished -= b.n - b.next;  // never issued
        b.next = b.n;
      }
      while (b.next < b.n && !free.empty()) {
        uint32_t s = free.back();
        free.pop_back();
        ++busy;
        Slot& slot = slots[s];
        slot.batch = &b;
        slot.op = static_cast<uint32_t>(b.next++);
        slot.done = 0;
        slot.failures = 0;
        const ReadOp& op = b.ops[slot.op];
        if (op.into_dest) {
          slot.buf = b.out + b.pieces[op.first].dest;
          slot.fixed = false;
        } else if (op.len <= slot_bytes) {
          slot.buf = slot.arena;
          slot.fixed = fixed_buffers;
        } else {
          slot.buf = slot.big.Reserve(op.len);
          slot.fixed = false;
          if (slot.buf == nullptr) {
            Fail(b, Status::Error(Code::E_INTERNAL, "out of memory for a " + std::to_string(op.len) + "-byte read buffer"));
            Release(s);
            continue;
          }
        }
        ready.push_back(s);
      }
      if (b.next < b.n) break;  // no free slot: the rest waits
      queue.pop_front();
      b.queued = false;
      if (b.unfinished == 0) Finish(b);
    }
  }
  while (!ready.empty()) {
    uint32_t s = ready.back();
    ready.pop_back();
    if (!Issue(s)) {
      ready.push_back(s);
      break;
    }
  }
  if (!wake_armed) {
    io_uring_sqe* sqe = ring->NextSqe();
    if (sqe != nullptr) {
      sqe->opcode = IORING_OP_POLL_ADD;
      sqe->fd = wake_fd;
      sqe->poll32_events = POLLIN;
      sqe->user_data = kWakeTag;
      wake_armed = true;
    }
  }
  return false;
}

// Issues the slot's next read call (or completes it at once when a fault is injected).
// False when the ring has no free SQE: the caller keeps the slot ready.
bool UringReader::Impl::Issue(uint32_t s) {
  Slot& slot = slots[s];
  Batch& b = *slot.batch;
  if (b.failed) {
    Release(s);
    return true;
  }
  const ReadOp& op = b.ops[slot.op];
  const uint64_t at = op.offset + slot.done;
  size_t want = static_cast<size_t>(std::min<uint64_t>(op.len - slot.done, kMaxCall));
  uint8_t* dst = slot.buf + slot.done;
  slot.trim = false;
  if (ctx.faults != nullptr) {
    FaultDecision d;
    try {
      d = ctx.faults->Next(registered[op.file], dst, want, at, Align(op));
    } catch (const std::exception& e) {
      Fail(b, Status::Error(Code::E_INTERNAL, std::string("a read failed: ") + e.what(), files[op.file]->path()).At(at));
      Release(s);
      return true;
    }
    if (d.err != 0) {
      Complete(s, -d.err);
      return true;
    }
    want = d.len;
    slot.trim = d.trim;
  }
  io_uring_sqe* sqe = ring->NextSqe();
  if (sqe == nullptr) return false;
  sqe->opcode = slot.fixed ? IORING_OP_READ_FIXED : IORING_OP_READ;
  sqe->flags = IOSQE_FIXED_FILE;
  sqe->fd = static_cast<int>(op.file);
  sqe->addr = reinterpret_cast<uint64_t>(dst);
  sqe->len = static_cast<uint32_t>(want);
  sqe->off = at;
  sqe->buf_index = 0;
  sqe->user_data = s;
  return true;
}

// What one read call's result means for its op: done, continued, retried or failed.
void UringReader::Impl::Complete(uint32_t s, int res) {
  Slot& slot = slots[s];
  Batch& b = *slot.batch;
  if (b.failed) {
    Release(s);
    return;
  }
  const ReadOp& op = b.ops[slot.op];
  ReadFile& f = *files[op.file];
  const size_t align = Align(op);
  const uint64_t at = op.offset + slot.done;
  if (res == -EINTR || res == -EAGAIN) {
    Count(ctx, &ReadCounters::retries);
    ready.push_back(s);
    return;
  }
  if (res < 0) {
    if (!Retry(s, -res)) {
      Fail(b, ReadCallError(f, "io_uring read", op.len - slot.done, -res, false, res, at, slot.failures));
      Release(s);
    }
    return;
  }
  size_t r = static_cast<size_t>(res);
  if (slot.trim && r >= align) r -= align / 2;
  ReadStep step = ReadStep::kEnd;
  if (r > 0) {
    bool continued = false;
    step = AdvanceRead(f.fd(), op.offset, op.len, align, r, &slot.done, &continued);
    if (continued) Count(ctx, &ReadCounters::retries);
  }
  if (step == ReadStep::kShortBlock) {
    if (!Retry(s, 0)) {
      Fail(b, ReadCallError(f, "io_uring read", op.len - slot.done, 0, true, static_cast<long>(r), at, slot.failures));
      Release(s);
    }
    return;
  }
  if (step == ReadStep::kMore && slot.done < op.len) {
    ready.push_back(s);
    return;
  }
  if (slot.done < op.need) {
    Fail(b, EndOfFileError(f, op.need, slot.done, op.offset));
    Release(s);
    return;
  }
  Succeed(s);
}

// A transient error (err) or a short O_DIRECT block (err 0): backs off and issues the call
// again, reopening the file after ESTALE. False when the error is permanent or the retries
// are spent.
bool UringReader::Impl::Retry(uint32_t s, int err) {
  Slot& slot = slots[s];
  if ((err != 0 && !IsTransientReadError(err)) || slot.failures >= ctx.retry.retries) return false;
  ++slot.failures;
  Count(ctx, &ReadCounters::error_retries);
  const uint32_t index = slot.batch->ops[slot.op].file;
  if (err == ESTALE) {
    ReadFile& f = *files[index];
    bool reopened = false;
    Status st = f.Reopen(registered[index], &reopened);
    if (!st.ok()) {
      Fail(*slot.batch, st.At(slot.batch->ops[slot.op].offset + slot.done));
      Release(s);
      return true;
    }
    if (reopened) Count(ctx, &ReadCounters::reopens);
    if (f.fd() != registered[index]) {
      int r = ring->UpdateFile(index, f.fd());
      if (r < 0) {
        Fail(*slot.batch, ErrnoStatus(-r, "io_uring_register (file update after reopening)", f.path()));
        Release(s);
        return true;
      }
      registered[index] = f.fd();
    }
  }
  deferred.emplace_back(NowNs() + RetryDelayMicros(ctx.retry, slot.failures) * 1000, s);
  return true;
}

void UringReader::Impl::Succeed(uint32_t s) {
  Slot& slot = slots[s];
  Batch& b = *slot.batch;
  const ReadOp& op = b.ops[slot.op];
  if (!op.into_dest) {
    for (uint32_t k = op.first; k < op.first + op.count; ++k) {
      const Piece& p = b.pieces[k];
      std::memcpy(b.out + p.dest, slot.buf + (p.offset - op.offset), p.len);
    }
  }
  Release(s);
}

void UringReader::Impl::Fail(Batch& b, Status st) {
  if (!b.failed) b.first = std::move(st);
  b.failed = true;
}

void UringReader::Impl::Release(uint32_t s) {
  Batch& b = *slots[s].batch;
  slots[s].batch = nullptr;
  free.push_back(s);
  --busy;
  if (--b.unfinished == 0 && !b.queued) Finish(b);
}

// Hands the result back. `b` lives on the waiting thread's stack: it is not touched after the
// lock is released.
void UringReader::Impl::Finish(Batch& b) {
  std::lock_guard<std::mutex> lock(b.mu);
  b.done = true;
  b.cv.notify_one();
}

}  // namespace spark
