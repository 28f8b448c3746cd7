// The batch planner's de-duplication: the radix sort must give exactly the rows and copies the
// comparison sort of (id, position) pairs gave, on random and adversarial batches.
#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "core/row_store/row_plan.h"
#include "test/testing.h"

namespace {

using Copies = std::vector<std::pair<uint32_t, uint32_t>>;

// The planner before the radix sort, kept here as the reference.
void ReferenceDistinct(const std::vector<uint64_t>& ids, std::vector<spark::DistinctRow>* rows, Copies* copies) {
  rows->clear();
  copies->clear();
  for (size_t i = 0; i < ids.size(); ++i) rows->push_back({ids[i], static_cast<uint32_t>(i)});
  std::sort(rows->begin(), rows->end(), [](const spark::DistinctRow& a, const spark::DistinctRow& b) {
    return a.id != b.id ? a.id < b.id : a.pos < b.pos;
  });
  size_t kept = 0;
  for (const spark::DistinctRow& r : *rows) {
    if (kept > 0 && (*rows)[kept - 1].id == r.id) {
      copies->emplace_back(r.pos, (*rows)[kept - 1].pos);
    } else {
      (*rows)[kept++] = r;
    }
  }
  rows->resize(kept);
}

// One scratch for every call, as a store reuses its plan memory across batches.
spark::SortScratch scratch;

bool SameAsReference(const std::vector<uint64_t>& ids) {
  std::vector<spark::DistinctRow> want, got;
  Copies want_copies, got_copies;
  ReferenceDistinct(ids, &want, &want_copies);
  spark::DistinctRows(ids.data(), ids.size(), true, &got, &got_copies, &scratch);
  bool same = want.size() == got.size() && want_copies == got_copies;
  for (size_t i = 0; same && i < want.size(); ++i) same = want[i].id == got[i].id && want[i].pos == got[i].pos;
  if (!same)
    std::printf("  differs for a batch of %zu ids (first %llu)\n", ids.size(),
                ids.empty() ? 0ull : (unsigned long long)ids[0]);
  return same;
}

// Sizes on both sides of the switch from the comparison sort to the radix sort.
const size_t kSizes[] = {0, 1, 2, 24, 144, 255, 256, 257, 1000, 4097, 49152};

}  // namespace

TEST(RadixDedupMatchesTheComparisonSortOnRandomBatches) {
  std::mt19937_64 rng(7);
  // Id ranges: small tables (many repeats), a rank's 96M rows, the full 384M table, past
  // 2^33 (a fourth pass), and the whole 64-bit range (six passes).
  const uint64_t ranges[] = {10, 2048, 96000000, 384016682, uint64_t{1} << 40, UINT64_MAX};
  for (uint64_t range : ranges) {
    for (size_t n : kSizes) {
      std::vector<uint64_t> ids(n);
      const uint64_t base = range == UINT64_MAX ? 0 : rng() % 1000000;
      for (auto& id : ids) id = base + (range == UINT64_MAX ? rng() : rng() % range);
      CHECK(SameAsReference(ids));
    }
  }
}

TEST(RadixDedupMatchesTheComparisonSortOnAdversarialBatches) {
  std::mt19937_64 rng(11);
  for (size_t n : kSizes) {
    std::vector<uint64_t> ids(n);
    for (auto& id : ids) id = 5;  // one id: every row but the first is a copy
    CHECK(SameAsReference(ids));
    for (size_t i = 0; i < n; ++i) ids[i] = n - i;  // descending
    CHECK(SameAsReference(ids));
    for (size_t i = 0; i < n; ++i) ids[i] = i;  // already sorted, no repeats
    CHECK(SameAsReference(ids));
    for (size_t i = 0; i < n; ++i) ids[i] = UINT64_MAX - (i % 3);  // the top of the id space
    CHECK(SameAsReference(ids));
    for (size_t i = 0; i < n; ++i) ids[i] = (i % 2) ? 0 : UINT64_MAX;  // the widest span, two ids
    CHECK(SameAsReference(ids));
    // Ids that differ only in one 11-bit digit, so the other passes are skipped.
    for (size_t i = 0; i < n; ++i) ids[i] = (uint64_t{7} << 40) | ((rng() % 2048) << 22);
    CHECK(SameAsReference(ids));
    // Ids one apart across the boundaries of the 11-bit digits, repeated in shuffled order.
    for (size_t i = 0; i < n; ++i) ids[i] = (uint64_t{1} << (11 * (1 + i % 5))) - 1 + (i % 4);
    std::shuffle(ids.begin(), ids.end(), rng);
    CHECK(SameAsReference(ids));
  }
}

TEST(DistinctRowsSortsAndListsCopies) {
  std::vector<uint64_t> ids = {9, 3, 9, 1, 3, 9};
  std::vector<spark::DistinctRow> rows;
  Copies copies;
  spark::DistinctRows(ids.data(), ids.size(), true, &rows, &copies, &scratch);
  CHECK_EQ(rows.size(), 3u);
  CHECK(rows[0].id == 1 && rows[0].pos == 3);
  CHECK(rows[1].id == 3 && rows[1].pos == 1);
  CHECK(rows[2].id == 9 && rows[2].pos == 0);
  CHECK((copies == Copies{{4, 1}, {2, 0}, {5, 0}}));
  spark::DistinctRows(ids.data(), ids.size(), false, &rows, &copies, &scratch);
  CHECK_EQ(rows.size(), 6u);
  CHECK(rows[1].id == 3 && rows[1].pos == 1);  // batch order
  CHECK(copies.empty());
}

TEST(PlanReadsMergesSharedAndNeighbouringPagesOnly) {
  std::vector<spark::Piece> p = {{100, 66, 0}, {166, 66, 66}, {5000, 66, 132}, {20000, 66, 198}};
  std::vector<spark::ReadOp> ops;
  spark::PlanReads(p, 0, p.size(), 0, true, 64 * 1024, 1, &ops);
  CHECK_EQ(ops.size(), 2u);  // 100..5066 (pages 0 and 1), then 20000
  CHECK(ops[0].offset == 100 && ops[0].len == 4966 && ops[0].count == 3 && !ops[0].into_dest);
  CHECK(ops[1].offset == 20000 && ops[1].len == 66 && ops[1].into_dest);
  ops.clear();
  spark::PlanReads(p, 0, p.size(), 0, false, 64 * 1024, 1, &ops);
  CHECK_EQ(ops.size(), 4u);
  ops.clear();
  spark::PlanReads(p, 0, p.size(), 0, true, 64 * 1024, 4096, &ops);  // O_DIRECT: aligned
  CHECK(ops[0].offset == 0 && ops[0].len == 8192 && ops[0].need == 5066);
  CHECK(ops[1].offset == 16384 && ops[1].len == 4096 && !ops[1].into_dest);
  ops.clear();
  spark::PlanReads(p, 0, p.size(), 0, true, 100, 1, &ops);  // the size cap splits reads
  CHECK_EQ(ops.size(), 4u);
}

int main() { return spark_test::RunAll("row_plan_test"); }
