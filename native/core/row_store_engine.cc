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
#include <sys/statfs.h>

#include <cstdint>
#include <string>

#include "core/row_store.h"

namespace spark {

namespace {

// statfs f_type of the network (or userspace) filesystems Engram tables may live on.
bool IsNetworkFs(int64_t magic) {
  switch (static_cast<uint32_t>(magic)) {
    case 0x6969:      // NFS
    case 0xFF534D42:  // CIFS
    case 0xFE534D42:  // SMB2
    case 0x517B:      // SMB
    case 0x00C36400:  // Ceph
    case 0x0BD00BD0:  // Lustre
    case 0x47504653:  // GPFS
    case 0x01021997:  // 9p
    case 0x65735546:  // FUSE (sshfs, s3fs, ...: whatever is behind it, not a local block device)
      return true;
    default:
      return false;
  }
}

}  // namespace

Status RowStore::StartIoEngine() {
  if (options_.io_engine == IoEngine::kPread) return Status::Ok();
  if (options_.io_engine == IoEngine::kAuto) {
    if (options_.faults.any()) {
      io_engine_note_ = "faults are injected into the pread pool's reads";
      return Status::Ok();
    }
    for (const auto& f : files_) {
      struct statfs sf;
      if (fstatfs(f->fd(), &sf) == 0 && IsNetworkFs(static_cast<int64_t>(sf.f_type))) {
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
