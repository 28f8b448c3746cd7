// The engine libraries' row cache (native/engine-libs/common/row_cache.h): what a budget buys, the
// frequency sketch counted inside it, frequency-aware admission, and many threads at once
// (run under TSan by run.sh --tsan).
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "engine-libs/common/freq_sketch.h"
#include "engine-libs/common/row_cache.h"
#include "test/testing.h"

using spark::engines::FreqSketch;
using spark::engines::kRowBytes;
using spark::engines::RowCache;

namespace {

struct Row {
  uint8_t w[256], s[8];
  explicit Row(uint64_t id) {
    for (int i = 0; i < 256; ++i) w[i] = static_cast<uint8_t>(id * 31 + i);
    for (int i = 0; i < 8; ++i) s[i] = static_cast<uint8_t>(id * 7 + i);
  }
  bool Is(uint64_t id) const {
    const Row want(id);
    return std::memcmp(w, want.w, 256) == 0 && std::memcmp(s, want.s, 8) == 0;
  }
};

// Bytes of this process's memory in RAM (/proc/self/statm's second field).
uint64_t ResidentBytes() {
  unsigned long size = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  const int got = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  return got == 2 ? uint64_t{resident} * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

// Whether this kernel maps an anonymous range's pages on MADV_POPULATE_WRITE (Linux 5.14;
// an emulator may take the advice and do nothing).
bool KernelPopulates() {
  const size_t bytes = size_t{16} << 20;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return false;
  const uint64_t before = ResidentBytes();
  const bool ok = madvise(p, bytes, 23 /* MADV_POPULATE_WRITE */) == 0 && ResidentBytes() >= before + bytes / 2;
  munmap(p, bytes);
  return ok;
}

bool Has(RowCache& c, uint64_t id) {
  Row got(id + 1);  // not id's bytes until a hit copies them
  return c.Lookup(id, got.w, got.s, false) && got.Is(id);
}

}  // namespace

TEST(budget_covers_slots_sets_and_sketch) {
  for (uint32_t ways : {1u, 4u, 8u, 16u}) {
    for (uint64_t budget : {uint64_t{0}, uint64_t{64}, uint64_t{300}, uint64_t{4096}, uint64_t{1} << 20,
                            uint64_t{1} << 30, (uint64_t{1} << 30) + 12345}) {
      const uint64_t sets = RowCache::SetsFor(budget, ways);
      RowCache c;
      CHECK(c.Init(sets, ways));
      CHECK(c.footprint() <= budget);
      CHECK_EQ(c.footprint(), sets == 0 ? 0 : c.slots() * 272 + sets + FreqSketch::BytesFor(c.slots()));
      // The sketch costs at most 2 bytes a slot and one 64-byte block.
      if (sets > 0) CHECK(FreqSketch::BytesFor(c.slots()) <= 2 * c.slots() + 64);
      // One set more would not fit: the budget is used, not left over.
      if (budget > 64) {
        RowCache more;
        CHECK(more.Init(sets + 1, ways));
        CHECK(more.footprint() > budget);
      }
    }
  }
}

TEST(sketch_counts_and_ages) {
  const uint64_t slots = 1000;
  std::vector<uint64_t> words(FreqSketch::BytesFor(slots) / 8, 0);
  FreqSketch f;
  f.Init(words.data(), slots);
  CHECK_EQ(f.Estimate(42), 0u);
  for (int i = 0; i < 5; ++i) f.Count(42);
  CHECK(f.Estimate(42) >= 5u);
  for (int i = 0; i < 40; ++i) f.Count(7);
  CHECK_EQ(f.Estimate(7), 15u);  // 4-bit counters stop at 15
  // Ten times the slots in counts halves every counter once, a few words per count after.
  for (uint64_t i = 0; i < 10 * slots; ++i) f.Count(42);
  CHECK_EQ(f.Estimate(7), 7u);
  CHECK_EQ(f.Estimate(42), 15u);
}

TEST(admission_keeps_the_rows_asked_again) {
  RowCache c;
  const uint64_t sets = 1024;
  CHECK(c.Init(sets, 4));
  // Every id below is a multiple of `sets`: all in set 0, four ways. Four rows asked for
  // (looked up, missing) three times each, then kept.
  for (uint64_t id = 0; id < 4 * sets; id += sets) {
    Row r(id);
    for (int k = 0; k < 3; ++k) c.Lookup(id, r.w, r.s);
    c.Insert(id, r.w, r.s);
  }
  // A stream of ids asked once each: none displaces a row asked three times.
  for (uint64_t id = 100 * sets; id < 400 * sets; id += sets) {
    Row r(id);
    CHECK(!c.Lookup(id, r.w, r.s));
    c.Insert(id, r.w, r.s);
  }
  bool kept = true;
  for (uint64_t id = 0; id < 4 * sets; id += sets) kept = kept && Has(c, id);
  CHECK(kept);
  CHECK_EQ(c.declined(), 300u);
  // One asked more often than the rows there does get in, and a row read ahead always does.
  Row hot(500 * sets);
  for (int k = 0; k < 6; ++k) c.Lookup(500 * sets, hot.w, hot.s);
  c.Insert(500 * sets, hot.w, hot.s);
  CHECK(Has(c, 500 * sets));
  Row ahead(600 * sets);
  c.Insert(600 * sets, ahead.w, ahead.s, true);
  CHECK(Has(c, 600 * sets));
  CHECK_EQ(c.rows(), 4u);
  // Clear empties the rows and the counts.
  c.Clear();
  CHECK_EQ(c.rows(), 0u);
  CHECK(!Has(c, 500 * sets));
  Row fresh(700 * sets);
  c.Insert(700 * sets, fresh.w, fresh.s);
  CHECK(Has(c, 700 * sets));
}

// Relayout (the overlay's release, once its scales are unpinned): empty, and as many slots as
// the new layout has, every page of the old one given back.
TEST(relayout_empties_and_resizes) {
  RowCache c;
  CHECK(c.Init(10, 8));
  for (uint64_t id = 0; id < 200; ++id) c.Insert(id, Row(id).w, Row(id).s);
  CHECK_EQ(c.rows(), 80u);
  CHECK(c.Relayout(40, 8));
  CHECK_EQ(c.rows(), 0u);
  CHECK_EQ(c.slots(), 320u);
  CHECK_EQ(c.footprint(), 320u * 272 + 40 + FreqSketch::BytesFor(320));
  for (uint64_t id = 0; id < 320; ++id) c.Insert(id, Row(id).w, Row(id).s);
  CHECK_EQ(c.rows(), 320u);
  bool all = true;
  for (uint64_t id = 0; id < 320; ++id) all = all && Has(c, id);
  CHECK(all);
  CHECK(c.Relayout(0, 8));
  CHECK(!c.enabled());
  CHECK_EQ(c.rows(), 0u);
}

// The arena's pages are mapped at Init, so no gather pays a fault per slot it fills; a Clear
// (the overlay's release) gives them back and a Relayout after it does not map them again.
TEST(arena_mapped_at_init_and_given_back_on_clear) {
  if (!KernelPopulates()) {
    std::printf("  (skipped: this kernel does not map pages on MADV_POPULATE_WRITE)\n");
    return;
  }
  const uint64_t budget = uint64_t{64} << 20;
  const uint64_t before = ResidentBytes();
  RowCache c;
  CHECK(c.Init(RowCache::SetsFor(budget, 8), 8));
  const uint64_t opened = ResidentBytes();
  CHECK(opened >= before + c.footprint() * 9 / 10);
  c.Clear();
  CHECK(ResidentBytes() + c.footprint() * 9 / 10 <= opened);
  CHECK(c.Relayout(RowCache::SetsFor(budget, 8), 8));
  CHECK(ResidentBytes() + c.footprint() * 9 / 10 <= opened);
}

TEST(threads_at_once_get_their_own_rows) {
  RowCache c;
  CHECK(c.Init(RowCache::SetsFor(64 * 1024, 4), 4));
  std::atomic<bool> wrong{false};
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < 4; ++t) {
    ts.emplace_back([&, t] {
      for (uint64_t i = 0; i < 20000; ++i) {
        const uint64_t id = (i * 2654435761u + t) % 600;
        Row r(id + 1);
        if (c.Lookup(id, r.w, r.s)) {
          if (!r.Is(id)) wrong.store(true);
        } else {
          const Row fill(id);
          c.Insert(id, fill.w, fill.s, (i & 7) == 0);
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  CHECK(!wrong.load());
  CHECK(c.rows() <= c.slots());
}

int main() { return spark_test::RunAll("engine_row_cache_test"); }
