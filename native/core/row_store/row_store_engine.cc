// RowStore::StartIoEngine: which engine runs a store's reads (StoreOptions::io_engine).
//
// auto takes io_uring when every file is on a local filesystem (an O_DIRECT pack, a sparse
// copy or a snapshot on the node's NVMe) and the kernel lets this process set a ring up. It
// keeps the pread pool when
//   - a file is on a network filesystem (statfs magic): NFS reads are not asynchronous inside
//     the kernel (io_uring would hand each one to a worker thread, a pread pool by another
//     name), and they fail in ways the pool's blocking retries were built for;
//   - io_uring_setup fails: ENOSYS (an old kernel, or qemu-user, which does not emulate it),
//     EPERM (sysctl kernel.io_uring_disabled, a container's seccomp filter);
//   - faults are injected (tests): they were written against the pool's read calls; a test
//     that wants them under io_uring asks for kUring.
// kUring that cannot be set up is an error; kPread never tries.
#include <cstdint>
#include <string>

#include "core/row_store/row_store.h"

namespace spark {

Status RowStore::StartIoEngine() {
  if (options_.io_engine == IoEngine::kPread) return Status::Ok();
  if (options_.io_engine == IoEngine::kAuto) {
    if (options_.faults.any()) {
      io_engine_note_ = "faults are injected into the pread pool's reads";
      return Status::Ok();
    }
    for (const auto& f : files_) {
      if (OnNetworkFilesystem(f->fd())) {
        io_engine_note_ = f->path() + " is on a network filesystem";
        return Status::Ok();
      }
    }
  }
  std::vector<ReadFile*> files;
  for (const auto& f : files_) files.push_back(f.get());
  UringReaderOptions uo;
  uo.depth = options_.io_depth;
  uo.slot_bytes = options_.max_merge_bytes;
  uo.refuse_errno = options_.uring_refuse_errno;
  Status st = UringReader::Create(files, uo, Context(), &closed_, &uring_);
  if (st.ok()) return st;
  if (options_.io_engine == IoEngine::kAuto) {
    io_engine_note_ = "io_uring unavailable: " + st.ToString();
    return Status::Ok();
  }
  return Status::Error(Code::E_IO, "ioEngine 'uring' was asked for but io_uring cannot be used here (" + st.ToString() +
                                       "; is sysctl kernel.io_uring_disabled set, or a seccomp filter in the way?); "
                                       "use ioEngine 'auto' or 'pread'");
}

}  // namespace spark
