// The row store's io_uring engine: runs a batch's planned reads (row_plan.h's ReadOps) through
// one ring per store, owned by one submitting thread, instead of one blocking pread per pool
// thread. Every gather hands its whole list of reads to that thread and sleeps until the
// last one lands; the thread keeps up to `depth` reads in flight across all batches, issues
// many with one io_uring_enter, and reaps as they complete.
//
//   - The store's files are registered (IOSQE_FIXED_FILE), and so is one arena of staging
//     slots, one per read in flight (IORING_OP_READ_FIXED): every O_DIRECT read and every
//     merged read lands in a slot and is copied out to its rows. A single-row buffered read
//     goes straight into the batch's output. A staged read larger than a slot uses its own
//     unregistered buffer.
//   - Short reads are continued as PreadAll continues them (AdvanceRead: O_DIRECT from the
//     last whole block); -EINTR and -EAGAIN are issued again at once; transient errors
//     (IsTransientReadError) back off and retry under the store's RetryPolicy, ESTALE
//     reopening the file and updating its registered slot; other errors fail the batch with
//     the same Status the pread pool gives (E_IO naming file, offset and errno).
//   - A closed store fails the batch's reads not yet issued with E_STORE_CLOSED; reads in
//     flight always finish before Run returns, so the kernel never writes into memory the
//     caller has freed.
//   - Fault injection (FaultConfig) is honoured per read call, as in the pread pool, except
//     delay_us (it models NFS latency, and NFS mounts use the pread pool: sleeping on the one
//     submitting thread would stall every batch), which is ignored here.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/base/status.h"
#include "core/io/random_read.h"
#include "core/row_store/row_plan.h"

namespace spark {

struct UringReaderOptions {
  unsigned depth = 128;             // reads in flight at once, across all batches
  uint64_t slot_bytes = 64 * 1024;  // staging per read in flight (rounded to kDirectAlign)
  int refuse_errno = 0;             // tests: io_uring_setup fails with this errno
};

class UringReader {
 public:
  // Sets up the ring, registers `files` (by index, as ReadOp::file counts them) and the
  // staging arena, and starts the submitting thread. Fails when io_uring cannot be used here
  // (the Status names the call and errno). The files, the counters and `closed` must outlive
  // the reader.
  static Status Create(const std::vector<ReadFile*>& files, const UringReaderOptions& options, const ReadContext& ctx,
                       const std::atomic<bool>* closed, std::unique_ptr<UringReader>* out);
  ~UringReader();  // joins the submitting thread: no Run may be in progress
  UringReader(const UringReader&) = delete;
  UringReader& operator=(const UringReader&) = delete;

  // Reads every op of `ops` (fed by `pieces`, landing in `out` as row_plan.h says). Safe from
  // many threads at once. Returns the batch's first error, after its last read has finished.
  Status Run(const std::vector<ReadOp>& ops, const std::vector<Piece>& pieces, uint8_t* out);

  bool registered_buffers() const;
  unsigned depth() const;

  struct Impl;

 private:
  explicit UringReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace spark
