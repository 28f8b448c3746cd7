// A minimal io_uring ring over the raw system calls (no liburing: `npm install` must build
// where its headers are absent, and the row store needs only reads, one poll, file and buffer
// registration). One thread owns a Uring: nothing here is safe to call from two threads.
//
// The submission and completion rings are memory shared with the kernel. Their head and tail
// indices are published with release stores and read with acquire loads, so that on a weakly
// ordered CPU (arm64) an SQE is complete before the kernel can see the tail that covers it,
// and a CQE is read only after the tail that announced it.
#pragma once

#include <linux/io_uring.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/base/status.h"

namespace spark {

class Uring {
 public:
  // A ring of `entries` submission slots (a power of two is not required: the kernel rounds
  // up) and twice as many completion slots. Fails with E_IO naming the call and errno when
  // the kernel refuses (ENOSYS: no io_uring or an emulator without it; EPERM: disabled by
  // sysctl kernel.io_uring_disabled or a seccomp filter) or lacks a feature the row store
  // needs. `refuse_errno` != 0 makes io_uring_setup fail with that errno (tests).
  static Status Create(unsigned entries, int refuse_errno, std::unique_ptr<Uring>* out);
  ~Uring();
  Uring(const Uring&) = delete;
  Uring& operator=(const Uring&) = delete;

  unsigned sq_entries() const { return sq_entries_; }

  // The next free submission slot, zeroed, or nullptr when every slot is queued and not yet
  // taken by the kernel. It is submitted by the next Enter().
  io_uring_sqe* NextSqe();

  // Submits what NextSqe handed out and waits for at least `wait` completions, at most
  // `timeout_ns` when it is >= 0. Returns 0 or -errno (-ETIME: the timeout passed; -EINTR,
  // -EAGAIN, -EBUSY: reap what is there and call again).
  int Enter(unsigned wait, int64_t timeout_ns);

  // Calls fn(user_data, res) for every completion posted so far, then frees their slots.
  template <typename Fn>
  unsigned Reap(Fn&& fn) {
    uint32_t head = *cq_head_;  // only this thread writes it
    const uint32_t tail = LoadAcquire(cq_tail_);
    unsigned n = 0;
    for (; head != tail; ++head, ++n) {
      const io_uring_cqe& c = cqes_[head & cq_mask_];
      fn(c.user_data, c.res);
    }
    StoreRelease(cq_head_, head);
    return n;
  }

  // Registered files (IOSQE_FIXED_FILE: the SQE's fd is an index into `fds`) and one
  // registered buffer (IORING_OP_READ_FIXED with buf_index 0). Return 0 or -errno.
  int RegisterFiles(const int* fds, unsigned count);
  int UpdateFile(unsigned index, int fd);
  int RegisterBuffer(void* base, size_t bytes);
  // Caps the kernel's worker threads for reads it cannot start without blocking (buffered
  // reads of uncached pages on some filesystems). The default for reads of regular files is
  // 4 per CPU, which on a small machine is far below the queue depth. 5.15+.
  int SetMaxWorkers(unsigned bound, unsigned unbound);

 private:
  Uring() = default;
  static uint32_t LoadAcquire(const uint32_t* p);
  static void StoreRelease(uint32_t* p, uint32_t v);
  int Register(unsigned opcode, const void* arg, unsigned count);

  int fd_ = -1;
  unsigned sq_entries_ = 0;
  // Mappings of the rings and the SQE array (the rings may share one mapping).
  void* sq_map_ = nullptr;
  size_t sq_map_bytes_ = 0;
  void* cq_map_ = nullptr;
  size_t cq_map_bytes_ = 0;
  io_uring_sqe* sqes_ = nullptr;
  size_t sqes_bytes_ = 0;
  uint32_t* sq_head_ = nullptr;  // advanced by the kernel as it takes SQEs
  uint32_t* sq_tail_ = nullptr;  // published by us
  uint32_t sq_mask_ = 0;
  uint32_t sqe_tail_ = 0;        // SQEs handed out, published to sq_tail_ by Enter
  uint32_t* cq_head_ = nullptr;  // advanced by us as we consume CQEs
  uint32_t* cq_tail_ = nullptr;  // published by the kernel
  uint32_t cq_mask_ = 0;
  io_uring_cqe* cqes_ = nullptr;
};

}  // namespace spark
