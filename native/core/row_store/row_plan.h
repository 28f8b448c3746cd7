// Planning a gather: which distinct rows to read, which batch positions are copies, and how
// the rows' byte ranges group into read operations. Pure functions, no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace spark {

// One distinct row of a batch and the first batch position that asked for it.
struct DistinctRow {
  uint64_t id;
  uint32_t pos;
};

// Memory the radix sort reuses across batches.
struct SortScratch {
  std::vector<DistinctRow> rows;
  std::vector<uint32_t> counts;
};

// With dedup: ids sorted ascending, each once, with the first position that asked for it;
// `copies` lists (to, from) batch positions for the repeats, in (id, position) order. Without:
// every position in batch order, no copies. n must be at most UINT32_MAX.
void DistinctRows(const uint64_t* ids, size_t n, bool dedup, std::vector<DistinctRow>* rows,
                  std::vector<std::pair<uint32_t, uint32_t>>* copies, SortScratch* scratch);

// A byte range of a file that lands at out[dest].
struct Piece {
  uint64_t offset;
  uint64_t len;
  uint64_t dest;
};

// One read: [offset, offset + len) of file `file`. It feeds pieces [first, first + count).
// At least `need` bytes must come back (an aligned read may run past the end of the file).
// `into_dest`: a single piece read straight into the output, no staging copy.
struct ReadOp {
  uint32_t file;
  uint64_t offset;
  uint64_t len;
  uint64_t need;
  uint32_t first;
  uint32_t count;
  bool into_dest;
};

// Groups pieces[begin, end) of one file into reads. With merge (pieces must be sorted by
// offset), a piece joins the current read when it starts in the page the read ends in or the
// next one, and the read stays within max_bytes. With `align`, reads are widened to multiples
// of it (O_DIRECT) and always staged.
void PlanReads(const std::vector<Piece>& pieces, size_t begin, size_t end, uint32_t file, bool merge,
               uint64_t max_bytes, uint64_t align, std::vector<ReadOp>* ops);

// Everything one batch's plan holds. A store keeps a few and lends one to each batch, so a
// steady stream of batches plans without allocating.
struct PlanMemory {
  std::vector<DistinctRow> rows;
  std::vector<std::pair<uint32_t, uint32_t>> copies;
  SortScratch sort;
  std::vector<Piece> pieces;
  std::vector<ReadOp> ops;
  std::vector<uint32_t> pending;               // indices of the ops left for the pool's blocking readers
  std::vector<ReadOp> engine_ops;              // the pending ops, in order, for the io_uring engine
  std::vector<uint32_t> missed, missed_count;  // warm batches: what each run found uncached
};

// The store's spare PlanMemory. Batches running at once on one store each take their own;
// up to kKeep are kept when they come back, the rest freed.
class PlanMemoryPool {
 public:
  std::unique_ptr<PlanMemory> Take();
  void Give(std::unique_ptr<PlanMemory> plan);

 private:
  static constexpr size_t kKeep = 4;
  std::mutex mu_;
  std::vector<std::unique_ptr<PlanMemory>> spare_;
};

}  // namespace spark
