// librow_store.so's ABI as the Mia stack relies on it (docs/engine-libs.md): open's NULL and
// abort, the range and attach rules (each abort in a child process of its own), zeros outside
// [lo, hi), every stats field in every mode (no cache, a budget too small for one set, ways
// 1/4/16/0/99, resident scales on and off, a pack, OFFLOAD_MODE=ram, two layers), the
// process-wide pool, the environment's integers, a shard cut under OFFLOAD_MODE=ram, and the
// stats line that never blocks the looking-up thread. Each case runs in a forked child: the
// pool and DSV41_IO_THREADS are the process's, read once. The library's code is linked in;
// run.sh runs this under ASan/UBSan (--sanitize) and on aarch64 (--arm64) too.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "test/child.h"
#include "test/direct_probe.h"
#include "test/engine_abi.h"
#include "test/full_pipe.h"

using namespace engine_abi;
using spark_test::ChildResult;
using spark_test::Env;
using spark_test::RunChild;

namespace {

// 10,000 rows; a store owns [kLo, kHi) unless a test says otherwise.
constexpr int64_t kLo = 1000, kHi = 9000;

const Table& Shard() {
  static const Table t = WriteTable("mia-shard.bin", 10000);
  return t;
}

struct Stats {
  uint64_t hits, misses, reads, cache_bytes, cache_slots, pinned, ways, threads, packed;
};

Stats StatsOf(void* store) {
  uint64_t out[9];
  std::fill(out, out + 9, ~uint64_t{0});
  row_store_stats(store, out);
  return {out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7], out[8]};
}

void Print(const char* what, const Stats& s) {
  std::printf(
      "  %s: hits=%llu misses=%llu reads=%llu cache_bytes=%llu slots=%llu pinned=%llu ways=%llu threads=%llu "
      "packed=%llu\n",
      what, (unsigned long long)s.hits, (unsigned long long)s.misses, (unsigned long long)s.reads,
      (unsigned long long)s.cache_bytes, (unsigned long long)s.cache_slots, (unsigned long long)s.pinned,
      (unsigned long long)s.ways, (unsigned long long)s.threads, (unsigned long long)s.packed);
}

void* Open(uint64_t budget, const Table& t = Shard()) {
  void* s = row_store_open(t.path.c_str(), t.rows, t.woff, t.soff, budget);
  CHECK(s != nullptr);
  return s;
}

// The budget that buys exactly `sets` sets of `ways` ways: 272 bytes a slot and 2 of frequency
// sketch, 1 a set, and 64 bytes of sketch slack.
uint64_t BudgetFor(uint64_t sets, uint64_t ways) { return sets * (274 * ways + 1) + 64; }
// What such a cache takes: its slots, one byte a set, the sketch in whole 64-byte blocks.
uint64_t CacheBytes(uint64_t sets, uint64_t ways) { return sets * ways * 272 + sets + (sets * ways + 31) / 32 * 64; }

bool DirectHere() {
  static const bool direct = spark_test::DirectAllowedIn(row_fixtures::TempDir());
  return direct;
}

// Runs `body` in a child expected to abort with one "librow_store: " line holding `says`.
void ExpectAbort(const char* what, const std::function<void()>& body, const std::string& says, const Env& env = {}) {
  const ChildResult r = RunChild(
      [&] {
        body();
        std::printf("  %s: returned\n", what);
      },
      env);
  const auto lines = spark_test::LinesStarting(r.err, "librow_store: ");
  const bool ok = r.signal == SIGABRT && lines.size() == 1 && lines[0].find(says) != std::string::npos;
  if (!ok) std::printf("  %s: signal %d exit %d, stderr: %s\n", what, r.signal, r.exit_code, r.err.c_str());
  CHECK(ok);
}

void ExpectOk(const char* what, const std::function<void()>& body, const Env& env = {}) {
  const ChildResult r = RunChild(body, env);
  if (!r.ok())
    std::printf("  %s: child %s (exit %d, signal %d): %s\n", what, r.timed_out ? "hung" : "failed", r.exit_code,
                r.signal, r.err.c_str());
  CHECK(r.ok());
}

}  // namespace

// NULL when the file cannot be opened; a line and abort when the columns do not fit it.
TEST(open_null_or_abort) {
  const Table& t = Shard();
  ExpectOk("a missing file", [] {
    CHECK(row_store_open("/nonexistent/shard.safetensors", 10, 0, 0, 1 << 20) == nullptr);
    CHECK(row_store_open(nullptr, 10, 0, 0, 1 << 20) == nullptr);
  });
  ExpectAbort("N past the file", [&] { row_store_open(t.path.c_str(), t.rows + 1, t.woff, t.soff, 0); }, "do not fit");
  ExpectAbort(
      "weights past the file", [&] { row_store_open(t.path.c_str(), t.rows, t.soff, t.soff, 0); }, "do not fit");
  ExpectAbort(
      "scales past the file", [&] { row_store_open(t.path.c_str(), t.rows, t.woff, t.soff + 1, 0); }, "do not fit");
  ExpectAbort(
      "N that overflows", [&] { row_store_open(t.path.c_str(), ~uint64_t{0} / 8, t.woff, t.soff, 0); }, "do not fit");
  ExpectOk("the columns exactly", [&] {
    void* s = Open(0);
    if (s != nullptr) row_store_close(s);
  });
}

// Until row_store_range a store owns [0, N); the range call aborts if lo > hi, hi > N, or the
// range moves after scales were pinned (or a pack attached); the same range again is no move.
TEST(range_rules) {
  const Table& t = Shard();
  const int64_t n = static_cast<int64_t>(t.rows);
  ExpectOk("no range call", [&] {
    void* s = Open(1 << 20);
    if (s == nullptr) return;
    const std::vector<int64_t> ids = {0, 1, n - 1, 4321, 0};
    CHECK(RowsAre(Lookup(s, ids), ids, 0, n));
    row_store_close(s);
  });
  ExpectOk("the same range again after scales were pinned", [&] {
    void* s = Open(1 << 20);
    if (s == nullptr) return;
    row_store_range(s, kLo, kHi);
    row_store_range(s, kLo, kHi);
    const std::vector<int64_t> ids = {kLo - 1, kLo, kHi - 1, kHi, 0, n - 1};
    CHECK(RowsAre(Lookup(s, ids), ids, kLo, kHi));
    CHECK_EQ(StatsOf(s).pinned, (kHi - kLo) * kS);
    row_store_close(s);
  });
  ExpectOk("a range that moves while nothing is pinned",
           [&] {
             void* s = Open(1 << 20);
             if (s == nullptr) return;
             row_store_range(s, 0, 10);
             row_store_range(s, 5, n);
             row_store_range(s, kLo, kHi);
             const std::vector<int64_t> ids = {kLo - 1, kLo, kHi - 1, kHi, 0, n - 1};
             CHECK(RowsAre(Lookup(s, ids), ids, kLo, kHi));
             row_store_close(s);
           },
           {{"DSV41_RESIDENT_SCALES", "0"}});
  ExpectAbort("lo > hi", [&] { row_store_range(Open(0), 300, 200); }, "is not inside");
  ExpectAbort("hi > N", [&] { row_store_range(Open(0), 0, t.rows + 1); }, "is not inside");
  ExpectAbort(
      "moved after scales were pinned",
      [&] {
        void* s = Open(0);
        row_store_range(s, 100, 200);
        row_store_range(s, 100, 250);
      },
      "after scales");
  if (DirectHere()) {
    const std::string pack = WritePack("engram-l1-range.bin", {.lo = 100, .hi = 200, .n = t.rows});
    ExpectAbort("moved after a pack was attached",
                [&] {
                  void* s = Open(0);
                  row_store_range(s, 100, 200);
                  CHECK_EQ(row_store_attach_packed(s, pack.c_str(), 1), 1);
                  row_store_range(s, 100, 201);
                },
                "after a pack", {{"DSV41_RESIDENT_SCALES", "0"}});
  }
}

// Lookups: ids outside [lo, hi) give zeros; an id < 0 or >= N aborts.
TEST(lookup_zeros_and_aborts) {
  const Table& t = Shard();
  const int64_t n = static_cast<int64_t>(t.rows);
  ExpectOk("zeros outside the range", [&] {
    for (uint64_t budget : {uint64_t{0}, uint64_t{1} << 20}) {
      void* s = Open(budget);
      if (s == nullptr) return;
      row_store_range(s, kLo, kHi);
      std::vector<int64_t> ids = Ids(3, 3000, 0, n);
      for (int64_t id : {kLo - 1, kLo, kHi - 1, kHi, int64_t{0}, n - 1, kLo, kLo}) ids.push_back(id);
      for (int pass = 0; pass < 2; ++pass) CHECK(RowsAre(Lookup(s, ids), ids, kLo, kHi));
      MiaWork none{s, nullptr, nullptr, nullptr, 0};  // count 0: a legal call that counts nothing
      row_store_lookup(&none);
      row_store_close(s);
    }
  });
  for (int64_t bad : {int64_t{-1}, INT64_MIN, n, INT64_MAX}) {
    ExpectAbort(
        "an id outside the table",
        [&] {
          void* s = Open(0);
          row_store_range(s, kLo, kHi);
          Lookup(s, {kLo, bad});
        },
        "is outside the table");
  }
}

// attach_packed: 0 when absent, 1 when it matches (then each miss is one read of it), a line
// and abort when magic, layer, lo, hi, N or row bytes differ or it is shorter than its rows.
TEST(attach_rules) {
  const Table& t = Shard();
  const std::string good = WritePack("engram-l1-good.bin", {.lo = kLo, .hi = kHi, .n = t.rows});
  ExpectOk("absent, then present",
           [&] {
             void* s = Open(0);
             if (s == nullptr) return;
             row_store_range(s, kLo, kHi);
             CHECK_EQ(row_store_attach_packed(s, (row_fixtures::TempDir() + "/engram-l1-absent.bin").c_str(), 1), 0);
             CHECK_EQ(row_store_attach_packed(s, nullptr, 1), 0);
             CHECK_EQ(StatsOf(s).packed, 0u);
             CHECK_EQ(row_store_attach_packed(s, good.c_str(), 1), DirectHere() ? 1 : 0);
             CHECK_EQ(StatsOf(s).packed, DirectHere() ? 1u : 0u);
             const std::vector<int64_t> ids = Ids(5, 500, 0, t.rows);
             CHECK(RowsAre(Lookup(s, ids), ids, kLo, kHi));
             row_store_close(s);
           },
           {{"DSV41_RESIDENT_SCALES", "0"}});
  if (!DirectHere()) return;  // a filesystem that refuses O_DIRECT: every pack is absent
  const std::string larger =
      WritePack("engram-l1-larger.bin", {.lo = kLo, .hi = kHi, .n = t.rows, .rows = kHi - kLo + 9});
  ExpectOk("a larger file", [&] {
    void* s = Open(0);
    row_store_range(s, kLo, kHi);
    CHECK_EQ(row_store_attach_packed(s, larger.c_str(), 1), 1);
    row_store_close(s);
  });
  struct Bad {
    const char* field;
    PackSpec spec;
  };
  const Bad bad[] = {
      {"magic", {.magic = kMiaMagic + 1, .lo = kLo, .hi = kHi, .n = t.rows}},
      {"layer", {.layer = 14, .lo = kLo, .hi = kHi, .n = t.rows}},
      {"lo", {.lo = kLo + 1, .hi = kHi, .n = t.rows}},
      {"hi", {.lo = kLo, .hi = kHi - 1, .n = t.rows}},
      {"N (rows of the layer)", {.lo = kLo, .hi = kHi, .n = t.rows + 1}},
      {"row bytes", {.lo = kLo, .hi = kHi, .n = t.rows, .row_bytes = 272}},
      {"shorter than its rows", {.lo = kLo, .hi = kHi, .n = t.rows, .rows = kHi - kLo - 1}},
  };
  for (const Bad& b : bad) {
    const std::string path = WritePack(std::string("engram-l1-bad-") + std::to_string(&b - bad) + ".bin", b.spec);
    ExpectAbort(
        b.field,
        [&] {
          void* s = Open(0);
          row_store_range(s, kLo, kHi);
          row_store_attach_packed(s, path.c_str(), 1);
        },
        b.field);
  }
}

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

// One pool per process, made at the first lookup or stats call: DSV41_IO_THREADS - 1 workers
// (<= 1: none); a second store adds none, a close removes none.
TEST(pool_threads) {
  for (const auto& [value, workers] :
       std::vector<std::pair<const char*, int>>{{"1", 0}, {"0", 0}, {"-7", 0}, {"5", 4}, {nullptr, 31}}) {
    Env env;
    if (value != nullptr) env.push_back({"DSV41_IO_THREADS", value});
    ExpectOk(
        value == nullptr ? "unset" : value,
        [&, workers = workers] {
          const int base = Threads();
          void* a = Open(0);
          void* b = Open(0);
          row_store_range(a, 0, 100);
          CHECK_EQ(Threads(), base);
          StatsOf(a);
          CHECK_EQ(Threads(), base + workers);
          Lookup(b, {1, 2, 3});
          CHECK_EQ(Threads(), base + workers);
          CHECK_EQ(StatsOf(b).threads, static_cast<uint64_t>(workers + 1));
          row_store_close(a);
          row_store_close(b);
          CHECK_EQ(Threads(), base + workers);
        },
        env);
  }
}

// Integers from the environment: one that overflows is no number (the fallback), not what it
// wraps to; a number out of range is clamped.
TEST(environment_integers_never_wrap) {
  struct Case {
    const char* ways;
    const char* threads;
    uint64_t want_ways, want_threads;
  };
  const Case cases[] = {
      {"18446744073709551618", "18446744073709551618", 4, 32},  // 2^64 + 2, not 2
      {"18446744073709551616", "18446744073709551617", 4, 32},  // 2^64, 2^64 + 1
      {"9223372036854775808", "9223372036854775808", 4, 32},    // 2^63
      {"9223372036854775807", "-9223372036854775808", 16, 1},   // the largest and smallest: clamped
      {"-3", "1", 1, 1},
      {"99999999999999999999999", "-99999999999999999999999", 4, 32},
      {"4x", "7 ", 4, 32},
      {"+8", "+2", 8, 2},
  };
  for (const Case& c : cases) {
    ExpectOk(c.ways,
             [&] {
               void* s = Open(BudgetFor(10, 16));
               const Stats st = StatsOf(s);
               if (st.ways != c.want_ways || st.threads != c.want_threads)
                 std::printf("  ways %s threads %s: stats say %llu ways, %llu threads\n", c.ways, c.threads,
                             (unsigned long long)st.ways, (unsigned long long)st.threads);
               CHECK_EQ(st.ways, c.want_ways);
               CHECK_EQ(st.threads, c.want_threads);
               row_store_close(s);
             },
             {{"DSV41_CACHE_WAYS", c.ways}, {"DSV41_IO_THREADS", c.threads}});
  }
}

// OFFLOAD_MODE=ram maps and locks the shard: one cut after open (a re-download, a copy that
// stopped) makes the next lookup print one line naming the file and the offset and abort, as
// every other read path does, instead of dying of SIGBUS in the mapping.
TEST(ram_mode_shard_cut_after_open) {
  const Table& t = Shard();
  for (int64_t id : {kHi - 1, kLo}) {
    ExpectAbort("a shard cut under OFFLOAD_MODE=ram",
                [&] {
                  const Table copy = WriteTable("mia-ram-cut-" + std::to_string(getpid()) + ".bin", t.rows);
                  void* s = Open(0, copy);
                  row_store_range(s, kLo, kHi);
                  const std::vector<int64_t> ids = {kLo, kHi - 1};
                  CHECK(RowsAre(Lookup(s, ids), ids, kLo, kHi));
                  CHECK_EQ(truncate(copy.path.c_str(), static_cast<off_t>(copy.soff)), 0);  // the scales gone
                  Lookup(s, {id});
                },
                "OFFLOAD_MODE=ram", {{"OFFLOAD_MODE", "ram"}});
  }
}

namespace {

using full_pipe::Drain;
using full_pipe::FullStderrPipe;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

// The stats line never blocks: with stderr a full pipe nobody reads, a lookup whose end is due
// to print it returns at once, with no pool (DSV41_IO_THREADS <= 1: the line is the caller's
// to write) or with one (a worker writes it, and must not be stuck writing it). The line is
// dropped and counted; the next line that gets out is the next one, and says so.
TEST(stats_line_never_blocks_on_a_full_stderr) {
  for (const char* io : {"1", "0", "4"}) {
    ExpectOk(io,
             [] {
               const int pipe_read = FullStderrPipe();
               void* s = Open(0);
               row_store_range(s, 0, 9000);
               Lookup(s, {1, 3000, 6000, 9500});
               std::this_thread::sleep_for(std::chrono::milliseconds(1100));
               const auto start = std::chrono::steady_clock::now();
               Lookup(s, {1, 3000});  // the line is due
               CHECK(Seconds(start) < 0.5);
               std::this_thread::sleep_for(std::chrono::milliseconds(100));  // a worker's turn at it
               Drain(pipe_read);
               std::this_thread::sleep_for(std::chrono::milliseconds(1000));
               Lookup(s, {6000});  // due again, and the pipe has room
               std::this_thread::sleep_for(std::chrono::milliseconds(200));
               const std::string got = Drain(pipe_read);
               const bool right = got.find("librow_store: lookups=6 ") == 0 &&
                                  got.find(" lines_dropped=1\n") != std::string::npos &&
                                  std::count(got.begin(), got.end(), '\n') == 1;
               if (!right) std::printf("  after the drop: %s\n", got.c_str());
               CHECK(right);
               row_store_close(s);
             },
             {{"DSV41_IO_THREADS", io}, {"DSV41_STATS_SECONDS", "1"}});
  }
}

int main() {
  for (const char* k :
       {"DSV41_IO_THREADS", "DSV41_CACHE_WAYS", "DSV41_RESIDENT_SCALES", "DSV41_STATS_SECONDS", "OFFLOAD_MODE"})
    unsetenv(k);
  Shard();  // written once, before any child
  return spark_test::RunAll("mia_abi_test");
}
