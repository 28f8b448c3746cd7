#include <dirent.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/base/checked.h"
#include "core/threads/parallel.h"
#include "core/threads/thread_pool.h"
#include "test/testing.h"

namespace {

// Threads of this process, from /proc (counts every thread, started or leaked).
size_t ProcessThreads() {
  size_t n = 0;
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n;
}

// The thread count once it has held still for 20 ms (up to 2 s): threads of earlier tests that
// were joined can linger in /proc for a moment, longer under emulation.
size_t SettledThreads() {
  size_t last = ProcessThreads();
  for (int i = 0, still = 0; i < 2000 && still < 20; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    size_t now = ProcessThreads();
    still = now == last ? still + 1 : 0;
    last = now;
  }
  return last;
}

// A joined thread can linger in /proc for a moment after pthread_join returns: poll briefly.
bool ThreadsSettleAt(size_t n) {
  for (int i = 0; i < 2000 && ProcessThreads() != n; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return ProcessThreads() == n;
}

}  // namespace

TEST(RunParallelVisitsEveryIndexOnce) {
  spark::ThreadPool pool(8);
  std::vector<std::atomic<int>> hits(10000);
  spark::RunParallel(pool, hits.size(), pool.size(), [&](size_t i) { hits[i].fetch_add(1); });
  for (auto& h : hits) CHECK_EQ(h.load(), 1);
}

TEST(RunParallelWithMoreThreadsThanWork) {
  spark::ThreadPool pool(16);
  std::atomic<int> sum{0};
  spark::RunParallel(pool, 3, pool.size(), [&](size_t i) { sum += static_cast<int>(i) + 1; });
  CHECK_EQ(sum.load(), 6);
}

TEST(RunParallelRethrowsAnItemsExceptionOnTheCaller) {
  spark::ThreadPool pool(4);
  std::atomic<int> ran{0};
  bool caught = false;
  try {
    spark::RunParallel(pool, 1000, 4, [&](size_t i) {
      ran.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      if (i == 7) throw std::runtime_error("item 7");
    });
  } catch (const std::runtime_error& e) {
    caught = std::string(e.what()) == "item 7";
  }
  CHECK(caught);
  CHECK(ran.load() < 1000);  // items nobody had taken were skipped
  // The pool is intact: every worker survived and takes new work.
  std::atomic<int> sum{0};
  spark::RunParallel(pool, 100, 4, [&](size_t i) { sum += static_cast<int>(i); });
  CHECK_EQ(sum.load(), 99 * 100 / 2);
}

TEST(ATaskThatThrowsDoesNotKillItsWorker) {
  spark::ThreadPool pool(1);
  pool.Submit([] { throw std::logic_error("bug"); });
  std::atomic<bool> ran{false};
  pool.Submit([&] { ran = true; });
  for (int i = 0; i < 2000 && !ran; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(ran.load());
}

TEST(AThreadThatFailsToStartIsAnErrorAndLeavesNoThreadBehind) {
  size_t before = SettledThreads();
  {
    spark::ThreadPool pool;
    pool.FailThreadStartForTesting(10);
    spark::Status st = pool.Grow(16);
    CHECK(st.code == spark::Code::E_THREAD_START);
    CHECK(st.message.find("thread 10 of 16") != std::string::npos);
    CHECK(st.message.find("Resource temporarily unavailable") != std::string::npos);
    CHECK_EQ(pool.size(), 9u);  // the nine that started are a working pool
    std::atomic<int> sum{0};
    spark::RunParallel(pool, 50, 9, [&](size_t i) { sum += static_cast<int>(i); });
    CHECK_EQ(sum.load(), 49 * 50 / 2);
    CHECK(ThreadsSettleAt(before + 9));
  }
  CHECK(ThreadsSettleAt(before));  // joined on destruction
}

TEST(AbandonDropsQueuedWorkAndDoesNotWaitForAStuckTask) {
  size_t before = SettledThreads();
  auto release = std::make_shared<std::atomic<bool>>(false);
  auto dropped_ran = std::make_shared<std::atomic<bool>>(false);
  {
    spark::ThreadPool pool(2);
    // One task stuck (a read on a dead server), one that notices cancellation, one queued.
    pool.Submit([release] {
      while (!release->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    pool.Submit([&pool] {
      while (!pool.cancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    pool.Submit([dropped_ran] { dropped_ran->store(true); });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    auto t0 = std::chrono::steady_clock::now();
    CHECK(!pool.Abandon(std::chrono::milliseconds(100)));  // the stuck one is left detached
    double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(waited >= 0.09 && waited < 2.0);
    CHECK_EQ(pool.size(), 0u);
  }  // destroying an abandoned pool does not join
  CHECK(!dropped_ran->load());
  release->store(true);  // the straggler finishes its task and exits on its own
  CHECK(ThreadsSettleAt(before));
  {
    spark::ThreadPool pool(3);
    CHECK(pool.Abandon(std::chrono::milliseconds(1000)));  // idle threads exit at once and are joined
  }
  CHECK(ThreadsSettleAt(before));
}

TEST(CheckedArithmeticDetectsOverflow) {
  CHECK(!spark::CheckedMul(uint64_t{1} << 32, uint64_t{1} << 32).has_value());
  CHECK_EQ(*spark::CheckedMul(uint64_t{1} << 31, uint64_t{1} << 32), uint64_t{1} << 63);
  CHECK(!spark::CheckedAdd(~uint64_t{0}, 1).has_value());
}

int main() { return spark_test::RunAll("thread_pool_test"); }
