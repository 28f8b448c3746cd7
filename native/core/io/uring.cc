#include "core/io/uring.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>

namespace spark {

namespace {

int SysSetup(unsigned entries, io_uring_params* p) {
  return static_cast<int>(syscall(__NR_io_uring_setup, entries, p));
}

Status SetupError(int err, const std::string& what) { return ErrnoStatus(err, what, {}); }

void* MapRing(int fd, size_t bytes, uint64_t offset) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, static_cast<off_t>(offset));
  return p == MAP_FAILED ? nullptr : p;
}

template <typename T>
T* At(void* base, uint32_t offset) {
  return reinterpret_cast<T*>(static_cast<uint8_t*>(base) + offset);
}

}  // namespace

uint32_t Uring::LoadAcquire(const uint32_t* p) {
  return std::atomic_ref<uint32_t>(*const_cast<uint32_t*>(p)).load(std::memory_order_acquire);
}

void Uring::StoreRelease(uint32_t* p, uint32_t v) { std::atomic_ref<uint32_t>(*p).store(v, std::memory_order_release); }

Status Uring::Create(unsigned entries, int refuse_errno, std::unique_ptr<Uring>* out) {
  if (refuse_errno != 0) return SetupError(refuse_errno, "io_uring_setup (refused for a test)");
  io_uring_params p;
  std::memset(&p, 0, sizeof p);
  p.flags = IORING_SETUP_CQSIZE;
  p.cq_entries = entries * 2;
  std::unique_ptr<Uring> r(new Uring());
  r->fd_ = SysSetup(entries, &p);
  if (r->fd_ < 0) return SetupError(errno, "io_uring_setup");
  // The batch engine waits with a timeout while retries back off (5.11+), and relies on the
  // kernel keeping SQE contents it has taken stable (5.5+) and never dropping a CQE (5.5+).
  const unsigned need = IORING_FEAT_EXT_ARG | IORING_FEAT_SUBMIT_STABLE | IORING_FEAT_NODROP;
  if ((p.features & need) != need) {
    return Status::Error(Code::E_IO,
                         "io_uring lacks the timed wait and stable submissions spark needs (kernel before 5.11)");
  }
  r->sq_entries_ = p.sq_entries;
  r->sq_map_bytes_ = p.sq_off.array + p.sq_entries * sizeof(uint32_t);
  r->cq_map_bytes_ = p.cq_off.cqes + p.cq_entries * sizeof(io_uring_cqe);
  const bool single = (p.features & IORING_FEAT_SINGLE_MMAP) != 0;
  if (single) r->sq_map_bytes_ = r->cq_map_bytes_ = std::max(r->sq_map_bytes_, r->cq_map_bytes_);
  r->sq_map_ = MapRing(r->fd_, r->sq_map_bytes_, IORING_OFF_SQ_RING);
  if (r->sq_map_ == nullptr) return SetupError(errno, "mmap of the io_uring submission ring");
  if (single) {
    r->cq_map_ = r->sq_map_;
  } else {
    r->cq_map_ = MapRing(r->fd_, r->cq_map_bytes_, IORING_OFF_CQ_RING);
    if (r->cq_map_ == nullptr) return SetupError(errno, "mmap of the io_uring completion ring");
  }
  r->sqes_bytes_ = p.sq_entries * sizeof(io_uring_sqe);
  r->sqes_ = static_cast<io_uring_sqe*>(MapRing(r->fd_, r->sqes_bytes_, IORING_OFF_SQES));
  if (r->sqes_ == nullptr) return SetupError(errno, "mmap of the io_uring submission entries");
  r->sq_head_ = At<uint32_t>(r->sq_map_, p.sq_off.head);
  r->sq_tail_ = At<uint32_t>(r->sq_map_, p.sq_off.tail);
  r->sq_mask_ = *At<uint32_t>(r->sq_map_, p.sq_off.ring_mask);
  r->cq_head_ = At<uint32_t>(r->cq_map_, p.cq_off.head);
  r->cq_tail_ = At<uint32_t>(r->cq_map_, p.cq_off.tail);
  r->cq_mask_ = *At<uint32_t>(r->cq_map_, p.cq_off.ring_mask);
  r->cqes_ = At<io_uring_cqe>(r->cq_map_, p.cq_off.cqes);
  // Slot i of the SQE array always goes in ring position i: the indirection array is filled
  // once and never changes.
  uint32_t* array = At<uint32_t>(r->sq_map_, p.sq_off.array);
  for (uint32_t i = 0; i < p.sq_entries; ++i) array[i] = i;
  r->sqe_tail_ = *r->sq_tail_;
  *out = std::move(r);
  return Status::Ok();
}

Uring::~Uring() {
  if (sqes_ != nullptr) munmap(sqes_, sqes_bytes_);
  if (cq_map_ != nullptr && cq_map_ != sq_map_) munmap(cq_map_, cq_map_bytes_);
  if (sq_map_ != nullptr) munmap(sq_map_, sq_map_bytes_);
  if (fd_ >= 0) close(fd_);
}

io_uring_sqe* Uring::NextSqe() {
  // Acquire: the kernel has finished reading every SQE before the head it publishes.
  if (sqe_tail_ - LoadAcquire(sq_head_) >= sq_entries_) return nullptr;
  io_uring_sqe* sqe = &sqes_[sqe_tail_ & sq_mask_];
  std::memset(sqe, 0, sizeof *sqe);
  ++sqe_tail_;
  return sqe;
}

int Uring::Enter(unsigned wait, int64_t timeout_ns) {
  // Release: every SQE written before this store is visible to the kernel with the tail.
  StoreRelease(sq_tail_, sqe_tail_);
  const unsigned to_submit = sqe_tail_ - LoadAcquire(sq_head_);
  unsigned flags = wait > 0 ? IORING_ENTER_GETEVENTS : 0;
  long r;
  if (timeout_ns >= 0 && wait > 0) {
    __kernel_timespec ts;
    ts.tv_sec = timeout_ns / 1000000000;
    ts.tv_nsec = timeout_ns % 1000000000;
    io_uring_getevents_arg arg;
    std::memset(&arg, 0, sizeof arg);
    arg.ts = reinterpret_cast<uint64_t>(&ts);
    r = syscall(__NR_io_uring_enter, fd_, to_submit, wait, flags | IORING_ENTER_EXT_ARG, &arg, sizeof arg);
  } else {
    r = syscall(__NR_io_uring_enter, fd_, to_submit, wait, flags, nullptr, _NSIG / 8);
  }
  return r < 0 ? -errno : 0;
}

int Uring::Register(unsigned opcode, const void* arg, unsigned count) {
  long r = syscall(__NR_io_uring_register, fd_, opcode, arg, count);
  return r < 0 ? -errno : 0;
}

int Uring::RegisterFiles(const int* fds, unsigned count) { return Register(IORING_REGISTER_FILES, fds, count); }

int Uring::UpdateFile(unsigned index, int fd) {
  io_uring_files_update u;
  std::memset(&u, 0, sizeof u);
  u.offset = index;
  u.fds = reinterpret_cast<uint64_t>(&fd);
  return Register(IORING_REGISTER_FILES_UPDATE, &u, 1);
}

int Uring::RegisterBuffer(void* base, size_t bytes) {
  iovec v{base, bytes};
  return Register(IORING_REGISTER_BUFFERS, &v, 1);
}

int Uring::SetMaxWorkers(unsigned bound, unsigned unbound) {
  uint32_t counts[2] = {bound, unbound};
  return Register(IORING_REGISTER_IOWQ_MAX_WORKERS, counts, 2);
}

}  // namespace spark
