#include "core/row_store/row_plan.h"

#include <algorithm>

namespace spark {

namespace {
constexpr uint64_t kPage = 4096;

// Sorts rows by id, keeping batch order among equal ids: a least-significant-digit radix sort
// on (id - smallest id), 11 bits a pass (3 passes cover ids spanning 2^33), digits every row
// shares skipped. The rows start in position order, so a stable sort by id is the order of
// (id, position) pairs. Small batches use a comparison sort, which is cheaper below a few
// hundred rows than clearing the digit counts.
void SortByIdStable(std::vector<DistinctRow>* rows, SortScratch* scratch) {
  constexpr size_t kBits = 11, kBuckets = size_t{1} << kBits, kSmall = 256;
  const size_t n = rows->size();
  if (n < kSmall) {
    std::sort(rows->begin(), rows->end(),
              [](const DistinctRow& a, const DistinctRow& b) { return a.id != b.id ? a.id < b.id : a.pos < b.pos; });
    return;
  }
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const DistinctRow& r : *rows) {
    lo = std::min(lo, r.id);
    hi = std::max(hi, r.id);
  }
  const uint64_t span = hi - lo;
  size_t passes = 0;
  while (passes * kBits < 64 && (span >> (passes * kBits)) != 0) ++passes;
  if (passes == 0) return;  // one id only: already in position order
  // Every pass's digit counts in one read of the rows.
  std::vector<uint32_t>& counts = scratch->counts;
  counts.assign(passes * kBuckets, 0);
  for (const DistinctRow& r : *rows) {
    const uint64_t key = r.id - lo;
    for (size_t p = 0; p < passes; ++p) ++counts[p * kBuckets + ((key >> (p * kBits)) & (kBuckets - 1))];
  }
  std::vector<DistinctRow>& other = scratch->rows;
  other.resize(n);
  std::vector<DistinctRow>* src = rows;
  std::vector<DistinctRow>* dst = &other;
  for (size_t p = 0; p < passes; ++p) {
    uint32_t* c = &counts[p * kBuckets];
    const size_t shift = p * kBits;
    if (c[((*src)[0].id - lo) >> shift & (kBuckets - 1)] == n) continue;  // every row has this digit
    uint32_t sum = 0;
    for (size_t b = 0; b < kBuckets; ++b) {
      const uint32_t here = c[b];
      c[b] = sum;
      sum += here;
    }
    for (const DistinctRow& r : *src) (*dst)[c[((r.id - lo) >> shift) & (kBuckets - 1)]++] = r;
    std::swap(src, dst);
  }
  if (src != rows) rows->swap(other);  // O(1): both are the caller's reusable memory
}

}  // namespace

void DistinctRows(const uint64_t* ids, size_t n, bool dedup, std::vector<DistinctRow>* rows,
                  std::vector<std::pair<uint32_t, uint32_t>>* copies, SortScratch* scratch) {
  rows->clear();
  copies->clear();
  rows->reserve(n);
  for (size_t i = 0; i < n; ++i) rows->push_back({ids[i], static_cast<uint32_t>(i)});
  if (!dedup) return;
  // Sorted by (id, position), the first position of each id is the one that is read.
  SortByIdStable(rows, scratch);
  size_t kept = 0;
  for (size_t i = 0; i < rows->size(); ++i) {
    const DistinctRow r = (*rows)[i];
    if (kept > 0 && (*rows)[kept - 1].id == r.id) {
      copies->emplace_back(r.pos, (*rows)[kept - 1].pos);
    } else {
      (*rows)[kept++] = r;
    }
  }
  rows->resize(kept);
}

void PlanReads(const std::vector<Piece>& pieces, size_t begin, size_t end, uint32_t file, bool merge,
               uint64_t max_bytes, uint64_t align, std::vector<ReadOp>* ops) {
  size_t i = begin;
  while (i < end) {
    const Piece& head = pieces[i];
    uint64_t start = head.offset;
    uint64_t stop = head.offset + head.len;
    if (align > 1) start -= start % align;
    size_t j = i + 1;
    if (merge) {
      for (; j < end; ++j) {
        const Piece& p = pieces[j];
        if (p.offset / kPage > (stop - 1) / kPage + 1) break;  // more than one page away
        uint64_t new_stop = std::max(stop, p.offset + p.len);
        uint64_t span = new_stop - start;
        if (align > 1) span = (span + align - 1) / align * align;
        if (span > max_bytes) break;
        stop = new_stop;
      }
    }
    ReadOp op;
    op.file = file;
    op.offset = start;
    op.need = stop - start;
    op.len = align > 1 ? (op.need + align - 1) / align * align : op.need;
    op.first = static_cast<uint32_t>(i);
    op.count = static_cast<uint32_t>(j - i);
    op.into_dest = op.count == 1 && align <= 1;
    ops->push_back(op);
    i = j;
  }
}

std::unique_ptr<PlanMemory> PlanMemoryPool::Take() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!spare_.empty()) {
      std::unique_ptr<PlanMemory> plan = std::move(spare_.back());
      spare_.pop_back();
      return plan;
    }
  }
  return std::make_unique<PlanMemory>();
}

void PlanMemoryPool::Give(std::unique_ptr<PlanMemory> plan) {
  std::lock_guard<std::mutex> lock(mu_);
  if (spare_.size() < kKeep) spare_.push_back(std::move(plan));
  // else: freed here; a batch burst wider than kKeep does not pin its memory for ever.
}

}  // namespace spark
