#include "engine-libs/common/aio_reader.h"

#include <linux/aio_abi.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace spark::engines {

namespace {
long IoSetup(unsigned n, aio_context_t* ctx) { return syscall(SYS_io_setup, n, ctx); }
long IoDestroy(aio_context_t ctx) { return syscall(SYS_io_destroy, ctx); }
long IoSubmit(aio_context_t ctx, long n, iocb** cbs) { return syscall(SYS_io_submit, ctx, n, cbs); }
long IoGetevents(aio_context_t ctx, long min, long max, io_event* events, timespec* timeout) {
  return syscall(SYS_io_getevents, ctx, min, max, events, timeout);
}
}  // namespace

struct AioReader::Impl {
  aio_context_t ctx = 0;
  unsigned depth = 0;
  uint8_t* arena = nullptr;  // depth slots of kSlotBytes
  std::vector<iocb> cbs;
  std::vector<iocb*> ready;     // submission list
  std::vector<uint32_t> free;   // slot indices
  std::vector<size_t> slot_op;  // op index of each slot in flight
  std::vector<io_event> events;
  ~Impl() {
    if (ctx != 0) IoDestroy(ctx);
    std::free(arena);
  }
};

AioReader::AioReader() = default;
AioReader::~AioReader() = default;

bool AioReader::Init(unsigned depth) {
  auto m = std::make_unique<Impl>();
  if (IoSetup(depth, &m->ctx) != 0) return false;
  m->depth = depth;
  m->arena = static_cast<uint8_t*>(std::aligned_alloc(kDirectAlign, size_t{depth} * kSlotBytes));
  if (m->arena == nullptr) return false;
  m->cbs.resize(depth);
  m->ready.reserve(depth);
  m->free.reserve(depth);
  m->slot_op.resize(depth);
  m->events.resize(depth);
  impl_ = std::move(m);
  return true;
}

void AioReader::Run(const Op* ops, size_t n, DoneFn done, void* ctx, void (*fail)(const Status&)) {
  Impl& m = *impl_;
  m.free.clear();
  for (uint32_t s = 0; s < m.depth; ++s) m.free.push_back(m.depth - 1 - s);
  size_t next = 0, in_flight = 0;
  // A read the kernel would not take, failed or cut short: read again the blocking way.
  auto again = [&](size_t op, uint8_t* buf) {
    const Op& o = ops[op];
    Status st = PreadAll(*o.file, buf, o.len, o.need, o.offset, ReadContext{});
    if (!st.ok()) {
      fail(st);
      std::abort();
    }
    done(ctx, o.tag, buf);
  };
  while (next < n || in_flight > 0) {
    m.ready.clear();
    while (next < n && !m.free.empty()) {
      const uint32_t s = m.free.back();
      m.free.pop_back();
      const Op& o = ops[next];
      iocb& cb = m.cbs[s];
      std::memset(&cb, 0, sizeof cb);
      cb.aio_data = s;
      cb.aio_lio_opcode = IOCB_CMD_PREAD;
      cb.aio_fildes = static_cast<uint32_t>(o.file->fd());
      cb.aio_buf = reinterpret_cast<uint64_t>(m.arena + size_t{s} * kSlotBytes);
      cb.aio_nbytes = o.len;
      cb.aio_offset = static_cast<int64_t>(o.offset);
      m.slot_op[s] = next++;
      m.ready.push_back(&cb);
    }
    for (size_t k = 0; k < m.ready.size();) {
      const long r = IoSubmit(m.ctx, static_cast<long>(m.ready.size() - k), m.ready.data() + k);
      if (r > 0) {
        k += static_cast<size_t>(r);
        in_flight += static_cast<size_t>(r);
      } else if (r < 0 && errno == EINTR) {
        continue;
      } else if (r < 0 && errno == EAGAIN && in_flight > 0) {
        // The kernel's queue is full: the rest go back, to be issued after some complete.
        for (size_t j = m.ready.size(); j > k; --j) m.free.push_back(static_cast<uint32_t>(m.ready[j - 1]->aio_data));
        next = m.slot_op[m.ready[k]->aio_data];
        break;
      } else {
        // Refused outright: this read the blocking way, then the rest.
        const uint32_t s = static_cast<uint32_t>(m.ready[k]->aio_data);
        again(m.slot_op[s], m.arena + size_t{s} * kSlotBytes);
        m.free.push_back(s);
        ++k;
      }
    }
    if (in_flight == 0) continue;
    const long got = IoGetevents(m.ctx, 1, static_cast<long>(m.depth), m.events.data(), nullptr);
    if (got < 0) {
      if (errno == EINTR) continue;
      fail(ErrnoStatus(errno, "io_getevents", {}));
      std::abort();
    }
    for (long e = 0; e < got; ++e) {
      const io_event& ev = m.events[e];
      const uint32_t s = static_cast<uint32_t>(ev.data);
      const size_t op = m.slot_op[s];
      uint8_t* buf = m.arena + size_t{s} * kSlotBytes;
      if (ev.res >= 0 && static_cast<uint64_t>(ev.res) >= ops[op].need) {
        done(ctx, ops[op].tag, buf);
      } else {
        again(op, buf);
      }
      m.free.push_back(s);
      --in_flight;
    }
  }
}

}  // namespace spark::engines
