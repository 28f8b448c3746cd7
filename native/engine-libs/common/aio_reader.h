// Reads of O_DIRECT files kept in flight by the calling thread alone, through Linux native AIO
// (io_setup/io_submit/io_getevents): a cold batch's reads all go to the device at once, up to
// `depth`, and the calling thread copies each row out as its read lands. Unlike io_uring, AIO
// on an O_DIRECT file never hands work to kernel threads of the process, so a store still has
// exactly the threads it started; unlike a pool of blocking preads, the queue is as deep as
// the batch, not as wide as the pool.
//
// Every buffer is allocated at Init. A read the kernel fails, cuts short, or will not take is
// read again with the core's PreadAll (bounded retries; the caller aborts on what survives).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/base/noncopyable.h"
#include "core/io/random_read.h"

namespace spark::engines {

class AioReader : NonCopyable {
 public:
  // One aligned read: [offset, offset + len) of file, both multiples of kDirectAlign, len at
  // most kSlotBytes. `tag` comes back with the bytes.
  struct Op {
    ReadFile* file;
    uint64_t offset;
    uint32_t len;
    uint32_t need;  // bytes that must come back (the last block may run past the end of the file)
    uint32_t tag;
  };
  using DoneFn = void (*)(void* ctx, uint32_t tag, const uint8_t* data);
  // The longest read: rows whose blocks lie close together share one read (gatherer.h says
  // which); past 16 KiB a read costs the device more than the rows it could hold are worth.
  static constexpr uint32_t kSlotBytes = 4 * kDirectAlign;

  AioReader();
  ~AioReader();
  // False when the kernel refuses a context (no AIO, aio-max-nr reached): use another engine.
  bool Init(unsigned depth);

  // Runs ops[0..n): done(ctx, tag, data) on this thread as each completes, data pointing at
  // the op's bytes. Calls from one thread at a time. A read that fails even when read again
  // goes to `fail`, which does not return.
  void Run(const Op* ops, size_t n, DoneFn done, void* ctx, void (*fail)(const Status&));

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spark::engines
