#include "core/row_store/uring_reader.h"

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

#include "core/base/checked.h"
#include "core/io/uring.h"
#include "core/row_store/uring_reader_impl.h"

namespace spark {

using uring_detail::Batch;
using uring_detail::Count;
using uring_detail::kMaxCall;
using uring_detail::kWakeTag;
using uring_detail::NowNs;
using uring_detail::Slot;

UringReader::UringReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Status UringReader::Create(const std::vector<ReadFile*>& files, const UringReaderOptions& options,
                           const ReadContext& ctx, const std::atomic<bool>* closed, std::unique_ptr<UringReader>* out) {
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
    return Status::Error(Code::E_THREAD_START,
                         std::string("could not start the io_uring submitting thread: ") + e.what());
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
            Fail(b, Status::Error(Code::E_INTERNAL,
                                  "out of memory for a " + std::to_string(op.len) + "-byte read buffer"));
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
      Fail(b,
           Status::Error(Code::E_INTERNAL, std::string("a read failed: ") + e.what(), files[op.file]->path()).At(at));
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

}  // namespace spark
