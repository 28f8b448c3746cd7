#include <atomic>
#include <vector>

#include "core/checked.h"
#include "core/parallel.h"
#include "core/thread_pool.h"
#include "test/testing.h"

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

TEST(CheckedArithmeticDetectsOverflow) {
  CHECK(!spark::CheckedMul(uint64_t{1} << 32, uint64_t{1} << 32).has_value());
  CHECK_EQ(*spark::CheckedMul(uint64_t{1} << 31, uint64_t{1} << 32), uint64_t{1} << 63);
  CHECK(!spark::CheckedAdd(~uint64_t{0}, 1).has_value());
}

int main() { return spark_test::RunAll("thread_pool_test"); }
