// The io_uring engine's completion side: what one read call's result means for its op (done,
// continued like a short pread, retried after a transient error, or failed), and handing a
// finished batch back to the thread that waits for it.
#include <cerrno>
#include <cstring>
#include <mutex>

#include "core/row_store/uring_reader_impl.h"

namespace spark {

using uring_detail::Batch;
using uring_detail::Count;
using uring_detail::kMaxCall;
using uring_detail::NowNs;
using uring_detail::Slot;

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
