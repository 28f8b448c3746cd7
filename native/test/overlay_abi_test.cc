// libengram_rows.so's ABI (version 3) as the overlay stack relies on it, one test per row of
// its table (docs/engine-libs.md): open's errors, the threads a store adds, gather's rows and
// zeros, count 0, stats after a known sequence, prefetch's return, resident and release as the
// overlay's governor and its own ABI test use them, concurrent callers, and the stats line that
// never blocks the gathering thread. The library's code is linked in; run.sh runs this under
// ASan/UBSan (--sanitize) and on aarch64 (--arm64) too.
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "test/child.h"
#include "test/engine_abi.h"
#include "test/full_pipe.h"

using namespace engine_abi;

namespace {

const Table& Small() {
  static const Table t = WriteTable("overlay-small.bin", 3000);
  return t;
}

std::vector<uint64_t> Stats(void* store) {
  std::vector<uint64_t> out(4, ~uint64_t{0});
  engram_rows_stats(store, out.data());
  return out;
}

// The budget settings of the next opens; unset again when it goes.
struct BudgetEnv {
  BudgetEnv(const char* governor_gb, const char* lib_gb) {
    Set("SPARK_ENGRAM_CACHE_GB", governor_gb);
    Set("SPARK_ENGRAM_LIB_CACHE_GB", lib_gb);
  }
  ~BudgetEnv() {
    unsetenv("SPARK_ENGRAM_CACHE_GB");
    unsetenv("SPARK_ENGRAM_LIB_CACHE_GB");
  }
  static void Set(const char* k, const char* v) {
    if (v != nullptr) {
      setenv(k, v, 1);
    } else {
      unsetenv(k);
    }
  }
};

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kFewPages = 4 * 4096;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

TEST(abi_version_is_3) { CHECK_EQ(engram_rows_abi_version(), 3); }

// NULL and errno are the only error channel; the file must cover row_hi of both columns.
TEST(open_fails_with_null_and_errno) {
  const Table& t = Small();
  const std::string fifo = row_fixtures::TempDir() + "/overlay-fifo";
  mkfifo(fifo.c_str(), 0644);
  struct Case {
    const char* what;
    std::string path;
    uint64_t woff, soff, lo, hi;
    int threads, err;
  };
  const Case cases[] = {
      {"a missing file", "/nonexistent/engram.safetensors", 0, 0, 0, 1, 1, ENOENT},
      {"a directory", row_fixtures::TempDir(), 0, 0, 0, 1, 1, EISDIR},
      {"a FIFO", fifo, 0, 0, 0, 1, 1, EINVAL},
      {"row_lo > row_hi", t.path, t.woff, t.soff, 10, 5, 1, EINVAL},
      {"threads < 0", t.path, t.woff, t.soff, 0, 1, -1, EINVAL},
      {"the weights past the file", t.path, t.end() - t.rows * kW + 1, t.soff, 0, t.rows, 1, EINVAL},
      {"the scales past the file", t.path, t.woff, t.soff + 1, 0, t.rows, 1, EINVAL},
      {"row_hi past the file", t.path, t.woff, t.soff, 0, t.rows + 1, 1, EINVAL},
      {"an offset that overflows", t.path, ~uint64_t{0}, t.soff, 0, 2, 1, EINVAL},
      {"row_hi that overflows", t.path, t.woff, t.soff, 0, uint64_t{1} << 61, 1, EINVAL},
  };
  for (const Case& c : cases) {
    errno = 0;
    void* s = engram_rows_open(c.path.c_str(), c.woff, c.soff, c.lo, c.hi, c.threads);
    if (s != nullptr || errno != c.err)
      std::printf("  %s: store %p errno %d, expected NULL and %d\n", c.what, s, errno, c.err);
    CHECK(s == nullptr);
    CHECK_EQ(errno, c.err);
    if (s != nullptr) engram_rows_close(s);
  }
  // Exactly covering row_hi of both columns is enough; an empty span opens.
  for (auto [lo, hi] : {std::pair<uint64_t, uint64_t>{0, t.rows}, {t.rows, t.rows}, {17, 17}}) {
    void* s = engram_rows_open(t.path.c_str(), t.woff, t.soff, lo, hi, 1);
    CHECK(s != nullptr);
    if (s != nullptr) engram_rows_close(s);
  }
}

// While a store is open the process has exactly `threads` more threads, none after close.
TEST(threads_exactly_while_open_none_after_close) {
  const Table& t = Small();
  for (int n : {0, 1, 3, 8}) {
    const int base = SettledThreads();
    void* s = engram_rows_open(t.path.c_str(), t.woff, t.soff, 0, t.rows, n);
    CHECK(s != nullptr);
    if (s == nullptr) return;
    const int open = ThreadsBecome(base + n);
    if (open != base + n) std::printf("  threads=%d: %d threads, %d before open\n", n, open, base);
    CHECK_EQ(open, base + n);
    std::vector<int64_t> ids = Range(0, static_cast<int64_t>(t.rows));
    CHECK(RowsAre(Gather(s, Ids(n, 2000, 0, t.rows)), Ids(n, 2000, 0, t.rows), 0, t.rows));
    CHECK_EQ(engram_rows_prefetch(s, ids.data(), ids.size()), t.rows);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK_EQ(Threads(), base + n);
    engram_rows_release(s);
    CHECK_EQ(Threads(), base + n);
    engram_rows_close(s);
    CHECK_EQ(ThreadsBecome(base), base);
  }
}

// threads = 0: everything on the caller, prefetch's reads included (done when it returns).
TEST(zero_threads_runs_inline) {
  const Table& t = Small();
  const int base = SettledThreads();
  void* s = engram_rows_open(t.path.c_str(), t.woff, t.soff, 100, 2100, 0);
  CHECK(s != nullptr);
  if (s == nullptr) return;
  const std::vector<int64_t> ids = {100, 101, 2099, 150};
  CHECK_EQ(engram_rows_prefetch(s, ids.data(), ids.size()), 4u);
  CHECK(engram_rows_resident(s) >= 4 * kRow);  // read before prefetch returned
  const std::vector<int64_t> all = Range(-3, static_cast<int64_t>(t.rows) + 3);
  CHECK(RowsAre(Gather(s, all), all, 100, 2100));
  CHECK_EQ(Threads(), base);
  engram_rows_close(s);
}

// Row ids[i] at w + 256 i and s + 8 i; ids outside [row_lo, row_hi), negative and past the
// file included, give 264 zero bytes; repeats and any order.
TEST(gather_rows_by_position_and_zeros) {
  const Table& t = Small();
  const int64_t lo = 1000, hi = 2000, n = static_cast<int64_t>(t.rows);
  void* s = engram_rows_open(t.path.c_str(), t.woff, t.soff, lo, hi, 3);
  CHECK(s != nullptr);
  if (s == nullptr) return;
  std::vector<int64_t> ids = Ids(1, 5000, -50, n + 50);
  for (int64_t id : {lo, hi - 1, hi, lo - 1, int64_t{-1}, INT64_MIN, INT64_MAX, n, n + 7, int64_t{0}, lo, lo})
    ids.push_back(id);
  for (int pass = 0; pass < 2; ++pass) CHECK(RowsAre(Gather(s, ids), ids, lo, hi));  // cold, then warm
  engram_rows_close(s);
}

// count == 0 is a legal call (null pointers and all) and counts as one.
TEST(count_zero_is_a_call) {
  const Table& t = Small();
  void* s = engram_rows_open(t.path.c_str(), t.woff, t.soff, 0, t.rows, 2);
  CHECK(s != nullptr);
  if (s == nullptr) return;
  OverlayWork work{0, s, nullptr, nullptr, nullptr};
  engram_rows_gather(&work);
  engram_rows_gather(&work);
  const std::vector<uint64_t> st = Stats(s);
  CHECK_EQ(st[0], 2u);
  CHECK_EQ(st[1], 0u);
  CHECK_EQ(st[2], 0u);
  engram_rows_close(s);
}

// {calls, owned, zeroed, ns} after a known sequence; prefetch is not a gather call.
TEST(stats_after_a_known_sequence) {
  const Table& t = Small();
  const int64_t lo = 200, hi = 400;
  void* s = engram_rows_open(t.path.c_str(), t.woff, t.soff, lo, hi, 2);
  CHECK(s != nullptr);
  if (s == nullptr) return;
  CHECK(Stats(s) == std::vector<uint64_t>({0, 0, 0, 0}));
  Gather(s, {lo, lo + 1, lo, -1, hi, static_cast<int64_t>(t.rows) + 1});  // 3 owned (a repeat), 3 zeroed
  Gather(s, {});
  const std::vector<int64_t> ahead = {lo + 5, 9};
  engram_rows_prefetch(s, ahead.data(), ahead.size());
  Gather(s, {hi - 1, INT64_MIN});  // 1 owned, 1 zeroed
  const std::vector<uint64_t> st = Stats(s);
  CHECK_EQ(st[0], 3u);
  CHECK_EQ(st[1], 4u);
  CHECK_EQ(st[2], 4u);
  CHECK(st[3] > 0);
  engram_rows_close(s);
}

// Returns how many ids are owned (repeats counted); called concurrently with gathers.
TEST(prefetch_returns_the_owned_count) {
  const Table& t = Small();
  const int64_t lo = 500, hi = 900;
  void* s = engram_rows_open(t.path.c_str(), t.woff, t.soff, lo, hi, 2);
  CHECK(s != nullptr);
  if (s == nullptr) return;
  const std::vector<int64_t> ids = {lo, lo, hi - 1, hi, -1, static_cast<int64_t>(t.rows) + 3, lo - 1, INT64_MIN};
  CHECK_EQ(engram_rows_prefetch(s, ids.data(), ids.size()), 3u);
  CHECK_EQ(engram_rows_prefetch(s, ids.data(), 0), 0u);
  CHECK_EQ(engram_rows_prefetch(s, nullptr, 0), 0u);
  // The rows a prefetch reads land in the store's memory without a gather.
  const auto start = std::chrono::steady_clock::now();
  while (engram_rows_resident(s) < 2 * kRow && Seconds(start) < 10)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK(engram_rows_resident(s) >= 2 * kRow);
  CHECK_EQ(Stats(s)[0], 0u);
  // Prefetches of everything from another thread while gathers run.
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> wrong{0};
  std::thread scheduler([&] {
    const std::vector<int64_t> all = Range(lo - 10, hi + 10);
    while (!stop.load()) {
      if (engram_rows_prefetch(s, all.data(), all.size()) != static_cast<uint64_t>(hi - lo)) wrong.fetch_add(1);
    }
  });
  bool right = true;
  for (int k = 0; k < 40; ++k) {
    const std::vector<int64_t> g = Ids(k, 144, lo - 20, hi + 20);
    right = right && RowsAre(Gather(s, g), g, lo, hi);
  }
  stop.store(true);
  scheduler.join();
  CHECK(right);
  CHECK_EQ(wrong.load(), 0u);
  CHECK_EQ(Stats(s)[0], 40u);
  engram_rows_close(s);
}

// After every owned row of a small table has been gathered once, resident is at least 90% of
// the span's weight bytes.
TEST(resident_after_every_owned_row_once) {
  const Table& t = Small();
  for (int threads : {0, 4}) {
    void* s = engram_rows_open(t.path.c_str(), t.woff, t.soff, 300, 2300, threads);
    CHECK(s != nullptr);
    if (s == nullptr) return;
    Gather(s, Range(300, 2300));
    CHECK(engram_rows_resident(s) >= 2000 * kW * 9 / 10);
    engram_rows_close(s);
  }
}

// The overlay's own ABI test: a store of 8 threads, release() at once, every owned row of a
// small table (1.79 MB of weights) gathered, resident() >= 90% of those bytes.
TEST(release_then_gather_every_row_refills) {
  const Table t = WriteTable("overlay-1_79MB.bin", 7000);
  void* s = engram_rows_open(t.path.c_str(), t.woff, t.soff, 0, t.rows, 8);
  CHECK(s != nullptr);
  if (s == nullptr) return;
  engram_rows_release(s);
  CHECK(engram_rows_resident(s) <= kFewPages);
  const std::vector<int64_t> all = Range(0, static_cast<int64_t>(t.rows));
  CHECK(RowsAre(Gather(s, all), all, 0, t.rows));
  const uint64_t resident = engram_rows_resident(s);
  if (resident < t.rows * kW * 9 / 10)
    std::printf("  resident %llu after release and every row\n", (unsigned long long)resident);
  CHECK(resident >= t.rows * kW * 9 / 10);
  // The same after a release of a full store, any number of times.
  for (int k = 0; k < 3; ++k) {
    engram_rows_release(s);
    CHECK(engram_rows_resident(s) <= kFewPages);
    Gather(s, all);
    CHECK(engram_rows_resident(s) >= t.rows * kW * 9 / 10);
  }
  engram_rows_close(s);
}

// What the governor sees: resident never passes the store's budget (45% of
// SPARK_ENGRAM_CACHE_GB), so two stores (its two layers) never reach the governor's budget;
// a release drops resident to a few pages, and gathers fill it to what it held before again
// (a release does not lower what the store may hold).
TEST(release_drops_resident_and_gathers_refill_to_the_budget) {
  const Table& t = Small();  // 792 KB of rows, more than either store may hold
  BudgetEnv env("0.001", nullptr);
  const uint64_t governor = kGiB / 1000;
  void* a = engram_rows_open(t.path.c_str(), t.woff, t.soff, 0, t.rows, 2);
  void* b = engram_rows_open(t.path.c_str(), t.woff, t.soff, 0, t.rows, 0);
  CHECK(a != nullptr && b != nullptr);
  if (a == nullptr || b == nullptr) return;
  const std::vector<int64_t> all = Range(0, static_cast<int64_t>(t.rows));
  auto fill = [&](void* s) {
    for (int pass = 0; pass < 3; ++pass) CHECK(RowsAre(Gather(s, all), all, 0, t.rows));
    return engram_rows_resident(s);
  };
  const uint64_t held_a = fill(a), held_b = fill(b);
  CHECK(held_a <= governor * 45 / 100 && held_b <= governor * 45 / 100);
  CHECK(held_a + held_b < governor);
  CHECK(held_a >= governor * 45 / 100 * 8 / 10);  // it does use its budget
  for (int round = 0; round < 4; ++round) {
    engram_rows_release(a);
    CHECK(engram_rows_resident(a) <= kFewPages);
    const uint64_t again = fill(a);
    if (again < held_a * 9 / 10)
      std::printf("  round %d: resident %llu after a release, %llu before\n", round, (unsigned long long)again,
                  (unsigned long long)held_a);
    CHECK(again >= held_a * 9 / 10);
    CHECK(again <= governor * 45 / 100);
    CHECK(again + engram_rows_resident(b) < governor);
  }
  engram_rows_close(a);
  engram_rows_close(b);
}

// A store budget above half the governor's makes the governor release: one line at open says
// so, once a process; at half or below, or with no governor limit, nothing is said.
TEST(a_budget_the_governor_would_release_is_named_at_open) {
  const Table& t = Small();
  struct Case {
    const char* governor;
    const char* lib;
    size_t lines;
  };
  for (const Case& c : {Case{"1", "0.6", 1}, Case{nullptr, "2.5", 1}, Case{"1", "0.5", 0}, Case{"0", "9", 0},
                        Case{"-1", "9", 0}, Case{"4", nullptr, 0}}) {
    spark_test::Env env;
    if (c.governor != nullptr) env.push_back({"SPARK_ENGRAM_CACHE_GB", c.governor});
    if (c.lib != nullptr) env.push_back({"SPARK_ENGRAM_LIB_CACHE_GB", c.lib});
    const spark_test::ChildResult r = spark_test::RunChild(
        [&] {
          for (int k = 0; k < 2; ++k) {  // two layers' stores
            void* s = engram_rows_open(t.path.c_str(), t.woff, t.soff, 0, t.rows, 1);
            CHECK(s != nullptr);
            if (s != nullptr) engram_rows_close(s);
          }
        },
        env);
    const auto lines = spark_test::LinesStarting(r.err, "libengram_rows: ");
    CHECK(r.ok());
    CHECK_EQ(lines.size(), c.lines);
    if (c.lines == 1) {
      const std::string want = std::string("libengram_rows: SPARK_ENGRAM_LIB_CACHE_GB=") + c.lib +
                               " is more than half of SPARK_ENGRAM_CACHE_GB=" + (c.governor ? c.governor : "4");
      CHECK(lines.size() == 1 && lines[0].rfind(want, 0) == 0);
    }
  }
}

// Concurrent gathers are serialised by the library; a governor releasing and a scheduler
// prefetching at the same time change no row.
TEST(concurrent_callers_with_prefetch_and_release) {
  const Table& t = Small();
  void* s = engram_rows_open(t.path.c_str(), t.woff, t.soff, 0, t.rows, 4);
  CHECK(s != nullptr);
  if (s == nullptr) return;
  std::atomic<int> wrong{0};
  std::atomic<bool> stop{false};
  auto caller = [&](uint64_t seed) {
    for (int k = 0; k < 60; ++k) {
      const size_t sizes[] = {1, 24, 144, 700};
      const std::vector<int64_t> ids = Ids(seed * 100 + k, sizes[k % 4], -2, t.rows + 2);
      if (!RowsAre(Gather(s, ids), ids, 0, t.rows)) wrong.fetch_add(1);
    }
  };
  std::thread governor([&] {
    const std::vector<int64_t> ahead = Ids(99, 300, 0, t.rows);
    while (!stop.load()) {
      engram_rows_resident(s);
      engram_rows_prefetch(s, ahead.data(), ahead.size());
      engram_rows_release(s);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  std::thread c1(caller, 1), c2(caller, 2);
  c1.join();
  c2.join();
  stop.store(true);
  governor.join();
  CHECK_EQ(wrong.load(), 0);
  CHECK_EQ(Stats(s)[0], 120u);
  engram_rows_close(s);
}

using full_pipe::Drain;
using full_pipe::FullStderrPipe;

// The stats line never blocks: with stderr a full pipe nobody reads, a gather whose end is due
// to print it returns at once (threads = 0: the line is the caller's to write), and so does
// close() (with workers, one of them writes it and must not be stuck in the write). The line
// is dropped and counted; the next line that gets out says how many were.
// Each thread count is a child of its own, both at once (each spends ~2.4 s waiting).
TEST(stats_line_never_blocks_on_a_full_stderr) {
  const Table& t = Small();
  std::vector<std::pair<int, spark_test::StartedChild>> children;
  for (int threads : {0, 2}) {
    children.emplace_back(threads,
                          spark_test::StartChild(
                              [&t, threads] {
                                const int pipe_read = FullStderrPipe();
                                void* s = engram_rows_open(t.path.c_str(), t.woff, t.soff, 0, t.rows, threads);
                                CHECK(s != nullptr);
                                if (s == nullptr) return;
                                Gather(s, {1, 2, 3});
                                std::this_thread::sleep_for(std::chrono::milliseconds(1100));
                                auto start = std::chrono::steady_clock::now();
                                Gather(s, {1, 2, 3});  // the line is due
                                CHECK(Seconds(start) < 0.5);
                                std::this_thread::sleep_for(std::chrono::milliseconds(100));  // a worker's turn at it
                                start = std::chrono::steady_clock::now();
                                engram_rows_close(s);  // the pipe still full
                                CHECK(Seconds(start) < 0.5);
                                Drain(pipe_read);
                                s = engram_rows_open(t.path.c_str(), t.woff, t.soff, 0, t.rows, threads);
                                CHECK(s != nullptr);
                                if (s == nullptr) return;
                                Gather(s, {1, 2, 3});
                                std::this_thread::sleep_for(std::chrono::milliseconds(1100));
                                Gather(s, {4});  // due, and the pipe has room
                                std::this_thread::sleep_for(std::chrono::milliseconds(200));
                                const std::string line = Drain(pipe_read);
                                if (line.find("libengram_rows: calls=2 rows=4 ") != 0 ||
                                    line.find(" lines_dropped=1\n") == std::string::npos)
                                  std::printf("  threads=%d: the line after the drop: %s\n", threads, line.c_str());
                                CHECK(line.find("libengram_rows: calls=2 rows=4 ") == 0);
                                CHECK(line.find(" lines_dropped=1\n") != std::string::npos);
                                engram_rows_close(s);
                              },
                              {{"SPARK_ENGRAM_STATS_SECONDS", "1"}}, 20));
  }
  for (const auto& [threads, child] : children) {
    const spark_test::ChildResult r = spark_test::FinishChild(child);
    if (!r.ok())
      std::printf("  threads=%d: child %s (exit %d, signal %d)\n", threads, r.timed_out ? "hung" : "failed",
                  r.exit_code, r.signal);
    CHECK(r.ok());
  }
}

int main() {
  unsetenv("SPARK_ENGRAM_CACHE_GB");
  unsetenv("SPARK_ENGRAM_LIB_CACHE_GB");
  unsetenv("SPARK_ENGRAM_STATS_SECONDS");
  return spark_test::RunAll("overlay_abi_test");
}
