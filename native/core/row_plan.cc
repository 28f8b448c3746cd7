#include "core/row_plan.h"

#include <algorithm>

namespace spark {

namespace {
constexpr uint64_t kPage = 4096;
}

void DistinctRows(const uint64_t* ids, size_t n, bool dedup, std::vector<DistinctRow>* rows,
                  std::vector<std::pair<uint32_t, uint32_t>>* copies) {
  rows->clear();
  copies->clear();
  rows->reserve(n);
  for (size_t i = 0; i < n; ++i) rows->push_back({ids[i], static_cast<uint32_t>(i)});
  if (!dedup) return;
  // Sorting by (id, position) makes the first position of each id the one that is read.
  std::sort(rows->begin(), rows->end(), [](const DistinctRow& a, const DistinctRow& b) {
    return a.id != b.id ? a.id < b.id : a.pos < b.pos;
  });
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

}  // namespace spark
