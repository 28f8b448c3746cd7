// librow_store.so's ABI as the Mia stack relies on it (docs/engine-libs.md): open's NULL and
// abort, the range and attach rules (each abort in a child process of its own), zeros outside
// [lo, hi) (every stats field in every mode, and two layers: mia_stats_test.cc), the
// process-wide pool, the environment's integers, a shard cut under OFFLOAD_MODE=ram, and the
// stats line that never blocks the looking-up thread. Each case runs in a forked child: the
// pool and DSV41_IO_THREADS are the process's, read once. The library's code is linked in;
// run.sh runs this under ASan/UBSan (--sanitize) and on aarch64 (--arm64) too.
#include "test/mia_abi.h"

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
// dropped and counted; the next line that gets out is the next one, and says so. Each pool size
// is a child of its own, all three at once (each spends its ~2.4 s waiting for the line).
TEST(stats_line_never_blocks_on_a_full_stderr) {
  const auto body = [] {
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
  };
  std::vector<std::pair<const char*, StartedChild>> children;
  for (const char* io : {"1", "0", "4"})
    children.emplace_back(io, StartChild(body, {{"DSV41_IO_THREADS", io}, {"DSV41_STATS_SECONDS", "1"}}));
  for (const auto& [io, child] : children) ExpectOk(io, FinishChild(child));
}

int main() {
  for (const char* k :
       {"DSV41_IO_THREADS", "DSV41_CACHE_WAYS", "DSV41_RESIDENT_SCALES", "DSV41_STATS_SECONDS", "OFFLOAD_MODE"})
    unsetenv(k);
  Shard();  // written once, before any child
  return spark_test::RunAll("mia_abi_test");
}
