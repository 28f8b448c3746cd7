// The row store's warm path by read calls: reads the page cache holds are served without
// waiting (preadv2 RWF_NOWAIT) on the calling thread, small batches queue no pool work, and the
// counts, the bytes and the fault handling are the same as on the blocking path. (The copies
// out of a mapping that come before it are row_store_mapped_test.cc's; off here.)
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "core/io/random_read.h"
#include "core/row_store/row_store.h"
#include "test/row_fixtures.h"
#include "test/testing.h"

namespace {

using namespace row_fixtures;

std::vector<uint64_t> RandomIds(size_t n, uint64_t rows, uint64_t seed) {
  std::vector<uint64_t> ids(n);
  uint64_t x = seed;
  for (auto& id : ids) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    id = (x >> 33) % rows;
  }
  return ids;
}

// Whether this kernel and filesystem serve cached reads without waiting (qemu's user-mode
// emulation, for one, answers EOPNOTSUPP). The tests assert the warm path where it exists
// and the fall-back to blocking reads where it does not.
bool NowaitSupported(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  CHECK(fd >= 0);
  uint8_t b[16];
  struct iovec v = {b, sizeof b};
  long r = static_cast<long>(preadv2(fd, &v, 1, 0, RWF_NOWAIT));
  int err = errno;
  close(fd);
  bool supported = !(r < 0 && (err == EOPNOTSUPP || err == ENOSYS || err == EINVAL));
  if (!supported) std::printf("  (no RWF_NOWAIT here: %s; checking the fall-back)\n", std::strerror(err));
  return supported;
}

// Every count but the inline one, which is the only thing the warm path may change.
bool SameTotals(const spark::StoreStats& a, const spark::StoreStats& b) {
  return a.batches == b.batches && a.rows == b.rows && a.reads == b.reads && a.bytes_read == b.bytes_read &&
         a.duplicates == b.duplicates && a.merged == b.merged;
}

// Holds every thread of a pool until released, so anything queued on it stays queued. The
// destructor waits for every held thread to let go before the mutex they wait on goes away.
class PoolBlocker {
 public:
  explicit PoolBlocker(spark::ThreadPool& pool) {
    for (size_t i = 0; i < pool.size(); ++i) {
      pool.Submit([this] {
        std::unique_lock<std::mutex> lock(mu_);
        ++held_;
        cv_.notify_all();
        cv_.wait(lock, [this] { return released_; });
        --held_;
        cv_.notify_all();
      });
    }
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return held_ == pool.size(); });
  }
  ~PoolBlocker() {
    std::unique_lock<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
    cv_.wait(lock, [this] { return held_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  size_t held_ = 0;
  bool released_ = false;
};

}  // namespace

TEST(CachedRowsAreServedInlineWithTheSameBytesAndCounts) {
  SnapshotTable snap = WriteSnapshot("cached.bin", 1, 5000);  // just written: in the page cache
  PackedTable page = WritePacked("cached-page.bin", 2, 0, 5000, true);
  spark::ThreadPool pool(4);
  spark::StoreOptions calls;
  calls.map_cached = false;
  spark::StoreOptions no_cache;
  no_cache.faults.nowait_errno = EOPNOTSUPP;  // as on a filesystem without RWF_NOWAIT
  auto warm = OpenStore({snap, page}, calls);
  auto blocking = OpenStore({snap, page}, no_cache);
  for (size_t n : {1, 24, 144, 3000}) {
    for (uint32_t layer : {1u, 2u}) {
      auto ids = RandomIds(n, 5000, n + layer);
      std::vector<uint8_t> a, b;
      CHECK(GatherInto(*warm, pool, layer, ids, &a).ok());
      CHECK(GatherInto(*blocking, pool, layer, ids, &b).ok());
      CHECK(RowsMatch(a, layer, ids));
      CHECK(RowsMatch(b, layer, ids));
    }
  }
  auto w = warm->Stats(), b = blocking->Stats();
  CHECK(SameTotals(w, b));
  CHECK_EQ(w.inline_reads, NowaitSupported(snap.weight_path) ? w.reads : 0u);  // every page was cached
  CHECK_EQ(b.inline_reads, 0u);
  CHECK(w.duplicates > 0 && w.merged > 0);
}

TEST(ReadIfCachedSwitchesItselfOffOnlyWhenUnsupported) {
  PackedTable t = WritePacked("nowait.bin", 1, 0, 1000, false);
  std::vector<uint8_t> buf(kRowBytes);
  const uint64_t at = 4096 + 17 * kRowBytes;
  {
    spark::ReadFile f;
    CHECK(f.Open(t.path, false, 0, true).ok());
    const bool supported = NowaitSupported(t.path);
    CHECK_EQ(spark::ReadIfCached(f, buf.data(), buf.size(), at, {}), supported);  // a real preadv2, cached bytes
    if (supported) CHECK(std::memcmp(buf.data(), Row(1, 17, kDim).data(), kRowBytes) == 0);
    CHECK_EQ(f.nowait(), supported);
  }
  struct Case {
    int err;
    bool stays_on;
  };
  for (Case c : {Case{EAGAIN, true}, Case{EIO, true}, Case{EINTR, true}, Case{EOPNOTSUPP, false}, Case{ENOSYS, false},
                 Case{EINVAL, false}}) {
    spark::ReadFile f;
    CHECK(f.Open(t.path, false, 0, true).ok());
    spark::FaultConfig faults;
    faults.nowait_errno = c.err;
    spark::FaultInjector injector(faults);
    spark::ReadContext ctx{&injector, nullptr, {}};
    CHECK(!spark::ReadIfCached(f, buf.data(), buf.size(), at, ctx));
    CHECK_EQ(f.nowait(), c.stays_on);
  }
  spark::ReadFile direct;  // O_DIRECT descriptors are never asked
  CHECK(direct.Open(WritePacked("nowait-direct.bin", 1, 0, 1000, true).path, true, 4096, false).ok());
  if (direct.direct()) CHECK(!spark::ReadIfCached(direct, buf.data(), buf.size(), at, {}));
}

TEST(PartlyCachedReadsAndFaultsFallBackToTheBlockingPath) {
  SnapshotTable t = WriteSnapshot("partial.bin", 3, 5000);
  spark::ThreadPool pool(3);
  spark::StoreOptions calls;
  calls.map_cached = false;
  auto reference = OpenStore({t}, calls);
  spark::StoreOptions o;
  o.retry.first_delay_us = 100;
  o.retry.max_delay_us = 1000;
  o.faults.nowait_hit_every = 1;
  o.faults.nowait_short_every = 5;  // every fifth read without waiting returns half its bytes
  o.faults.eintr_every = 3;         // and the blocking reads that follow meet faults
  o.faults.short_every = 2;
  o.faults.etimedout_every = 5;
  auto store = OpenStore({t}, o);
  for (size_t n : {24, 144, 2000}) {
    auto ids = RandomIds(n, 5000, 3 * n);
    std::vector<uint8_t> a, b;
    CHECK(GatherInto(*reference, pool, 3, ids, &a).ok());
    spark::Status st = GatherInto(*store, pool, 3, ids, &b);
    if (!st.ok()) std::printf("  %s\n", st.ToString().c_str());
    CHECK(st.ok());
    CHECK(RowsMatch(b, 3, ids));
  }
  auto s = store->Stats(), r = reference->Stats();
  CHECK(SameTotals(s, r));
  if (NowaitSupported(t.weight_path)) {
    CHECK(s.inline_reads > 0 && s.inline_reads < s.reads);  // the cut ones were read again, blocking
  } else {
    CHECK_EQ(s.inline_reads, 0u);
  }
  CHECK(s.retries > 0 && s.error_retries > 0);
}

TEST(AColdBatchGoesToThePoolAtFullWidth) {
  PackedTable t = WritePacked("cold.bin", 1, 0, 1000, false);
  spark::StoreOptions o;
  o.faults.delay_us = 1;  // faults model uncached storage: nothing is served without waiting
  o.merge = false;
  spark::ThreadPool pool(4);
  auto store = OpenStore({t}, o);
  auto ids = RandomIds(200, 1000, 5);
  {
    PoolBlocker blocker(pool);
    std::atomic<bool> done{false};
    std::vector<uint8_t> out;
    std::thread caller([&] {
      CHECK(GatherInto(*store, pool, 1, ids, &out).ok());
      done = true;
    });
    // The caller reads everything itself, its three helpers wait in the queue.
    caller.join();
    CHECK(done.load());
    CHECK(RowsMatch(out, 1, ids));
    CHECK_EQ(pool.queued(), 3u);
  }
  CHECK_EQ(store->Stats().inline_reads, 0u);
}

TEST(ASmallWarmBatchQueuesNoPoolWork) {
  SnapshotTable t = WriteSnapshot("small.bin", 4, 5000);
  spark::ThreadPool pool(16);
  auto store = OpenStore({t});
  PoolBlocker blocker(pool);  // a queued helper would stay queued
  for (int round = 0; round < 50; ++round) {
    auto ids = RandomIds(24, 5000, round);
    std::vector<uint8_t> out;
    CHECK(GatherInto(*store, pool, 4, ids, &out).ok());
    CHECK(RowsMatch(out, 4, ids));
  }
  if (NowaitSupported(t.weight_path)) {
    CHECK_EQ(pool.queued(), 0u);
    CHECK_EQ(store->Stats().inline_reads, store->Stats().reads);
  } else {
    CHECK(pool.queued() > 0);  // every read blocks: the pool is asked to help
    CHECK_EQ(store->Stats().inline_reads, 0u);
  }
}

TEST(ConcurrentBatchesOnOneStoreShareItsPlanMemorySafely) {
  SnapshotTable t = WriteSnapshot("concurrent.bin", 6, 5000);
  PackedTable d = WritePacked("concurrent-direct.bin", 7, 0, 5000, true);
  d.direct = true;
  spark::ThreadPool pool(4);
  auto store = OpenStore({t, d});
  std::atomic<int> bad{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 6; ++c) {
    callers.emplace_back([&, c] {
      for (int round = 0; round < 30; ++round) {
        size_t n = (c * 31 + round * 17) % 3 == 0 ? 1500 : 1 + (round * 7 + c) % 200;
        uint32_t layer = (round + c) % 2 == 0 ? 6 : 7;
        auto ids = RandomIds(n, 5000, c * 1000 + round);
        std::vector<uint8_t> out;
        if (!GatherInto(*store, pool, layer, ids, &out).ok() || !RowsMatch(out, layer, ids)) bad.fetch_add(1);
      }
    });
  }
  for (auto& th : callers) th.join();
  CHECK_EQ(bad.load(), 0);
  CHECK_EQ(store->Stats().batches, 6u * 30u);
}

int main() { return spark_test::RunAll("row_store_cache_test"); }
