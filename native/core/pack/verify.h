// Verifies one packed data file: its size, its header block, every chunk checksum (chunks
// read in parallel, one large read each, O_DIRECT where possible, the next read while the
// current chunk is checked) and, given the source tensors, the rows themselves:
// all of them (chunk by chunk, rebuilt from the source exactly as the packer builds them) or a
// sample of row indices (one pread per row on each side).
// Also the data pass over one table of a sparse copy (the overlay's layout: rows at their
// offsets in a shard-sized file), read the same way: VerifySparseTable.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/pack/pack.h"
#include "core/pack/pack_format.h"
#include "core/threads/thread_pool.h"

namespace spark {

struct VerifyJob {
  std::string path;  // the data file
  PackGeometry geometry;
  std::string header;          // the expected header block, exactly kPackHeaderBytes bytes
  std::vector<uint32_t> crcs;  // expected, one per chunk
  uint32_t threads = 4;
  ThreadPool* pool = nullptr;  // runs the workers (the caller works too); cancelled() stops them
  bool check_chunks = true;
  bool has_source = false;
  PackSource weight, scale;
  uint64_t start = 0;                 // global id of local row 0
  bool all_rows = false;              // compare every row with the source
  std::vector<uint64_t> sample_rows;  // else these local row indices
  bool drop_cache = true;
  bool direct_io = true;   // O_DIRECT chunk reads where the filesystem allows it
  size_t max_report = 16;  // bad chunks / rows listed (all are counted)
};

struct VerifyProgress {
  std::atomic<uint64_t> bytes_total{0}, bytes_done{0};
};

struct VerifyResult {
  uint64_t file_bytes = 0;  // actual size
  bool size_ok = false;
  bool header_ok = false;
  uint64_t chunks_checked = 0;
  uint64_t bad_chunk_count = 0;
  std::vector<uint64_t> bad_chunks;  // ascending, at most max_report
  uint64_t rows_compared = 0;
  uint64_t bad_row_count = 0;
  std::vector<uint64_t> bad_rows;  // local indices, ascending, at most max_report
  uint64_t bytes_read = 0;
  std::string read_io = "none";  // the chunk pass: "direct", "buffered" (or "none": no pass)
};

Status VerifyLayer(const VerifyJob& job, VerifyProgress* progress, VerifyResult* result);

// One table of a sparse copy: rows [start, end) in chunks of chunk_rows; per chunk the weight
// bytes of its rows then their scale bytes (dim / 32 per row), read from the copy's two
// columns (usually one file). Bytes past the end of a file read as zeros, so a truncated copy
// fails its checksums and comparisons instead of stopping the pass.
struct SparseVerifyJob {
  PackSource weight, scale;  // the copy's columns: path and absolute offset of row 0
  uint64_t dim = 0, start = 0, end = 0, chunk_rows = 0;
  bool check_chunks = false;
  std::vector<uint32_t> crcs;  // per chunk: CRC-32 of its weight bytes followed by its scale bytes
  bool compare_rows = false;   // every row against the source's columns
  PackSource source_weight, source_scale;
  uint32_t threads = 4;
  ThreadPool* pool = nullptr;  // runs the workers (the caller works too); cancelled() stops them
  bool drop_cache = true;      // buffered reads only: drop the pages behind
  bool direct_io = true;       // O_DIRECT where the filesystem allows it
  size_t max_report = 16;
};

// Fills chunks_checked (chunks whose checksum was compared), the bad chunk indices, rows
// compared and the bad rows (global ids), bytes_read and read_io; the file fields stay unset.
Status VerifySparseTable(const SparseVerifyJob& job, VerifyProgress* progress, VerifyResult* result);

}  // namespace spark
