// Every field of librow_store.so's row_store_stats as the Mia stack reports it (docs/engine-libs.md),
// in every mode: no cache, a budget too small for one set, ways 1/4/16/0/99, resident scales on
// and off, a pack, OFFLOAD_MODE=ram, two layers side by side; and its reads, never more per miss
// than the original's.
// Each case runs in a forked child (the pool and DSV41_IO_THREADS are the process's).
#include "test/mia_abi.h"

namespace {

// One mode of the stats table: the environment, the budget, a pack or not, and what each
// field must say.
struct Mode {
  const char* name;
  Env env;
  uint64_t budget;
  bool pack;
  uint64_t sets, ways, threads;
  bool pinned, ram;
};

// Three lookups: [a, b, a, hi, 5] (two distinct misses, a repeat, two ids outside the range),
// [b, c] (a hit when there is a cache), [] (nothing). a, b and c lie far apart: no read
// serves two of them, in either column or a pack.
void KnownSequence(void* s) {
  const int64_t a = kLo, b = kLo + 3001, c = kLo + 6002;  // sets 0, 1 and 2 of 100
  std::vector<int64_t> first = {a, b, a, kHi, 5}, second = {b, c};
  CHECK(RowsAre(Lookup(s, first), first, kLo, kHi));
  CHECK(RowsAre(Lookup(s, second), second, kLo, kHi));
  Lookup(s, {});
}

void CheckMode(const Mode& m, const Stats& got) {
  const bool cache = m.sets != 0;
  // A repeat within a lookup is served from the row read for its first position (a hit);
  // without a cache every other owned position is a miss.
  const uint64_t hits = cache ? 2 : 1, misses = cache ? 3 : 4;
  // The original's reads per miss: one with a pack or pinned scales, two without; none from
  // memory (OFFLOAD_MODE=ram).
  const uint64_t per_miss = m.ram ? 0 : (m.pack || m.pinned) ? 1 : 2;
  const Stats want{hits,
                   misses,
                   misses * per_miss,
                   cache ? CacheBytes(m.sets, m.ways) : 0,
                   m.sets * m.ways,
                   m.pinned ? (kHi - kLo) * kS : 0,
                   m.ways,
                   m.threads,
                   m.pack ? 1u : 0u};
  const bool same = std::memcmp(&want, &got, sizeof want) == 0;
  if (!same) {
    std::printf("  mode %s:\n", m.name);
    Print("got ", got);
    Print("want", want);
  }
  CHECK(same);
}

}  // namespace

// Every field of row_store_stats in every mode: hits, misses, reads, cache bytes, cache slots,
// pinned scale bytes, ways (DSV41_CACHE_WAYS clamped to 1-16, also with no cache), threads
// (DSV41_IO_THREADS; 1 when it is <= 1), packed.
TEST(stats_every_field_in_every_mode) {
  const Table& t = Shard();
  const std::string pack = WritePack("engram-l1-stats.bin", {.lo = kLo, .hi = kHi, .n = t.rows});
  const Env off = {{"DSV41_RESIDENT_SCALES", "0"}};
  std::vector<Mode> modes = {
      {"no cache (budget 0)", off, 0, false, 0, 4, 32, false, false},
      {"no cache, scales pinned", {{"DSV41_RESIDENT_SCALES", "1"}}, 0, false, 0, 4, 32, true, false},
      {"a budget smaller than one set",
       {{"DSV41_CACHE_WAYS", "16"}, {"DSV41_RESIDENT_SCALES", "off"}},
       BudgetFor(1, 16) - 1,
       false,
       0,
       16,
       32,
       false,
       false},
      {"100 sets of 1 way",
       {{"DSV41_CACHE_WAYS", "1"}, {"DSV41_IO_THREADS", "1"}},
       BudgetFor(100, 1),
       false,
       100,
       1,
       1,
       true,
       false},
      {"100 sets of 4 ways (the default)",
       {{"DSV41_IO_THREADS", "6"}},
       BudgetFor(100, 4),
       false,
       100,
       4,
       6,
       true,
       false},
      {"100 sets of 16 ways",
       {{"DSV41_CACHE_WAYS", "16"}, {"DSV41_IO_THREADS", "0"}, {"DSV41_RESIDENT_SCALES", "false"}},
       BudgetFor(100, 16),
       false,
       100,
       16,
       1,
       false,
       false},
      {"ways 0 is 1", {{"DSV41_CACHE_WAYS", "0"}}, BudgetFor(100, 1), false, 100, 1, 32, true, false},
      {"ways 99 is 16", {{"DSV41_CACHE_WAYS", "99"}}, BudgetFor(100, 16), false, 100, 16, 32, true, false},
      {"ways 99 with no cache", {{"DSV41_CACHE_WAYS", "99"}}, 0, false, 0, 16, 32, true, false},
      {"scales: \"no\" is not off", {{"DSV41_RESIDENT_SCALES", "no"}}, 0, false, 0, 4, 32, true, false},
      {"OFFLOAD_MODE=ram",
       {{"OFFLOAD_MODE", "ram"}, {"DSV41_CACHE_WAYS", "8"}},
       BudgetFor(100, 8),
       false,
       0,
       8,
       32,
       true,
       false},
      {"OFFLOAD_MODE=ram, scales off",
       {{"OFFLOAD_MODE", "ram"}, {"DSV41_RESIDENT_SCALES", "0"}},
       0,
       false,
       0,
       4,
       32,
       false,
       false},
  };
  for (Mode& m : modes)
    m.ram = std::any_of(m.env.begin(), m.env.end(), [](auto& kv) { return kv.first == "OFFLOAD_MODE"; });
  if (DirectHere()) {
    modes.push_back({"a pack, no cache", off, 0, true, 0, 4, 32, false, false});
    modes.push_back(
        {"a pack, scales pinned too", {{"DSV41_CACHE_WAYS", "2"}}, BudgetFor(100, 2), true, 100, 2, 32, true, false});
  }
  for (const Mode& m : modes) {
    ExpectOk(
        m.name,
        [&] {
          void* s = Open(m.budget);
          if (s == nullptr) return;
          row_store_range(s, kLo, kHi);
          if (m.pack) CHECK_EQ(row_store_attach_packed(s, pack.c_str(), 1), 1);
          KnownSequence(s);
          CheckMode(m, StatsOf(s));
          row_store_close(s);
        },
        m.env);
  }
}

// Reads where rows share them: fewer than the original's, never more than its per miss.
TEST(reads_at_most_the_originals_per_miss) {
  const Table& t = Shard();
  const std::string pack = WritePack("engram-l1-dense.bin", {.lo = kLo, .hi = kHi, .n = t.rows});
  for (const char* scales : {"0", "1"}) {
    for (bool with_pack : {false, true}) {
      if (with_pack && !DirectHere()) continue;
      ExpectOk("a dense batch",
               [&] {
                 void* s = Open(BudgetFor(50, 4));
                 row_store_range(s, kLo, kHi);
                 if (with_pack) row_store_attach_packed(s, pack.c_str(), 1);
                 const std::vector<int64_t> ids = Ids(7, 4000, kLo - 100, kHi);
                 CHECK(RowsAre(Lookup(s, ids), ids, kLo, kHi));
                 const Stats st = StatsOf(s);
                 const uint64_t per_miss = with_pack || scales[0] == '1' ? 1 : 2;
                 uint64_t owned = 0;
                 for (int64_t id : ids) owned += id >= kLo && id < kHi;
                 CHECK_EQ(st.hits + st.misses, owned);
                 CHECK(st.reads >= 1 && st.reads <= st.misses * per_miss);
                 row_store_close(s);
               },
               {{"DSV41_RESIDENT_SCALES", scales}});
    }
  }
}

// Two layers' stores side by side (each its own shard, range, pack and stats); one pool.
TEST(two_layers) {
  const Table& t = Shard();
  const Table other = WriteTable("mia-shard-14.bin", 5000);
  const std::string pack = WritePack("engram-l1-two.bin", {.lo = kLo, .hi = kHi, .n = t.rows});
  ExpectOk(
      "layers 1 and 14",
      [&] {
        const int base = Threads();
        void* a = Open(BudgetFor(100, 4));
        void* b = Open(0, other);
        if (a == nullptr || b == nullptr) return;
        row_store_range(a, kLo, kHi);
        row_store_range(b, 2500, 5000);
        const int attached = row_store_attach_packed(a, pack.c_str(), 1);
        CHECK_EQ(attached, DirectHere() ? 1 : 0);
        KnownSequence(a);
        const std::vector<int64_t> ids = {2499, 2500, 4999, 2500};
        Out o = Lookup(b, ids);
        CHECK(RowIs(o, 0, 0, false) && RowIs(o, 1, 2500, true) && RowIs(o, 2, 4999, true) && RowIs(o, 3, 2500, true));
        const Stats sa = StatsOf(a), sb = StatsOf(b);
        CheckMode({"layer 1", {}, 0, attached == 1, 100, 4, 3, true, false}, sa);
        CHECK(sb.hits == 1 && sb.misses == 2 && sb.reads == 2 && sb.cache_slots == 0 && sb.packed == 0);
        CHECK_EQ(sb.pinned, 2500 * kS);
        CHECK_EQ(sb.threads, 3u);
        CHECK_EQ(Threads(), base + 2);
        row_store_close(a);
        row_store_close(b);
      },
      {{"DSV41_IO_THREADS", "3"}});
}

int main() {
  for (const char* k :
       {"DSV41_IO_THREADS", "DSV41_CACHE_WAYS", "DSV41_RESIDENT_SCALES", "DSV41_STATS_SECONDS", "OFFLOAD_MODE"})
    unsetenv(k);
  Shard();  // written once, before any child
  return spark_test::RunAll("mia_stats_test");
}
