// The row store's I/O under faults: transient errors retried and counted, ESTALE answered by
// reopening, short O_DIRECT reads continued aligned, O_DIRECT and buffered descriptors never
// shared, and resident scales loaded while gathers run.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "core/io/random_read.h"
#include "core/row_store/row_store.h"
#include "core/threads/parallel.h"
#include "test/row_fixtures.h"
#include "test/testing.h"

namespace {

using namespace row_fixtures;
using spark::Code;

// Retries in tests back off for microseconds, not the production tens of milliseconds.
spark::StoreOptions Quick() {
  spark::StoreOptions o;
  o.retry.first_delay_us = 100;
  o.retry.max_delay_us = 1000;
  return o;
}

std::vector<uint64_t> Spread(uint64_t first, uint64_t count, uint64_t step) {
  std::vector<uint64_t> ids;
  for (uint64_t i = 0; i < count; ++i) ids.push_back(first + (i * step) % 1000);
  return ids;
}

}  // namespace

TEST(TransientErrorsAreRetriedAndCounted) {
  SnapshotTable t = WriteSnapshot("transient.bin", 1, 1000);
  spark::ThreadPool pool(1);  // one reader: the faults fall on known calls
  for (int kind = 0; kind < 2; ++kind) {
    spark::StoreOptions o = Quick();
    o.merge = false;
    (kind == 0 ? o.faults.etimedout_every : o.faults.eio_every) = 2;  // every other read call fails
    auto store = OpenStore({t}, o);
    std::vector<uint64_t> ids = Spread(3, 40, 17);
    std::vector<uint8_t> out;
    spark::Status st = GatherInto(*store, pool, 1, ids, &out);
    CHECK(st.ok());
    CHECK(RowsMatch(out, 1, ids));
    auto s = store->Stats();
    // Calls alternate: a read, a failure that is retried, a read...: one retry per read but the last.
    CHECK(s.error_retries + 1 == s.reads || s.error_retries == s.reads);
    CHECK_EQ(s.reopens, 0u);
  }
}

TEST(APersistentErrorFailsAfterBoundedRetriesNamingFileAndOffset) {
  PackedTable t = WritePacked("persistent.bin", 1, 0, 1000, false);
  spark::StoreOptions o = Quick();
  o.retry.retries = 3;
  o.retry.first_delay_us = 2000;
  o.retry.max_delay_us = 100000;
  o.faults.etimedout_every = 1;
  spark::ThreadPool pool(1);
  auto store = OpenStore({t}, o);
  std::vector<uint8_t> out;
  auto t0 = std::chrono::steady_clock::now();
  spark::Status st = GatherInto(*store, pool, 1, {10}, &out);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  CHECK(st.code == Code::E_IO);
  CHECK_EQ(st.path, t.path);
  CHECK(st.has_offset && st.offset == 4096 + 10 * kRowBytes);
  CHECK(st.message.find("Connection timed out (after 3 retries)") != std::string::npos);
  CHECK_EQ(store->Stats().error_retries, 3u);
  CHECK(ms >= 2 + 4 + 8);  // backed off between attempts
  // A permanent error (here EINVAL: memory not aligned for O_DIRECT) fails at once.
  spark::ReadFile f;
  CHECK(f.Open(t.path, true, 4096, false).ok());
  spark::AlignedBuffer buf;
  uint8_t* unaligned = buf.Reserve(2 * spark::kDirectAlign) + 1;
  spark::ReadCounters counters;
  spark::FaultInjector rules({});  // enforces the O_DIRECT alignment rules on any filesystem
  spark::Status einval = spark::PreadAll(f, unaligned, spark::kDirectAlign, spark::kDirectAlign, 4096,
                                         spark::ReadContext{&rules, &counters, o.retry});
  CHECK(einval.code == Code::E_IO && einval.message.find("Invalid argument") != std::string::npos);
  CHECK(einval.message.find("retries") == std::string::npos);
  CHECK_EQ(counters.error_retries.load(), 0u);
}

TEST(AStaleHandleIsReopenedOnceForEveryThread) {
  PackedTable t = WritePacked("stale.bin", 1, 0, 1000, false);
  spark::StoreOptions o = Quick();
  o.merge = false;
  o.faults.estale_at = 5;  // from the 5th read on, the original descriptor only says ESTALE
  spark::ThreadPool pool(4);
  auto store = OpenStore({t}, o);
  std::vector<uint64_t> ids = Spread(0, 300, 7);
  CHECK(GathersRightRows(*store, pool, 1, ids));
  auto s = store->Stats();
  CHECK_EQ(s.reopens, 1u);  // four readers saw ESTALE; one reopen serves them all
  CHECK(s.error_retries >= 1 && s.error_retries <= 4);
  CHECK(GathersRightRows(*store, pool, 1, ids));  // later batches use the new descriptor
  CHECK_EQ(store->Stats().reopens, 1u);
}

TEST(AFileReplacedBehindAStaleHandleIsReportedNotRead) {
  PackedTable t = WritePacked("replaced.bin", 1, 0, 1000, false);
  spark::StoreOptions o = Quick();
  o.faults.estale_at = 1;
  spark::ThreadPool pool(1);
  auto store = OpenStore({t}, o);
  std::string tmp = TempDir() + "/replacement.bin";
  WritePacked("replacement.bin", 1, 0, 999, false);  // a different file, one row shorter
  CHECK_EQ(rename(tmp.c_str(), t.path.c_str()), 0);
  std::vector<uint8_t> out;
  spark::Status st = GatherInto(*store, pool, 1, {5}, &out);
  CHECK(st.code == Code::E_SOURCE_CHANGED);
  CHECK_EQ(st.path, t.path);
  CHECK(st.message.find("replaced while the row store had it open") != std::string::npos);
}

TEST(ShortDirectReadsContinueFromTheLastWholeBlock) {
  PackedTable t = WriteDirectPages("short-direct.bin", 2, 0, 1000);
  spark::StoreOptions o = Quick();
  o.faults.short_unaligned_every = 2;  // every other read returns half a block short
  o.max_merge_bytes = 3 * 4096;        // many reads of one to three pages
  spark::ThreadPool pool(1);
  auto store = OpenStore({t}, o);
  CHECK(store->Find(2)->direct_active);  // needs a filesystem with O_DIRECT (not tmpfs)
  std::vector<uint64_t> ids;
  for (uint64_t i = 0; i < 400; ++i) ids.push_back((i * 37) % 1000);  // merged into multi-page reads
  CHECK(GathersRightRows(*store, pool, 2, ids));
  auto s = store->Stats();
  CHECK(s.retries > 0);  // continued from a whole block
}

TEST(ADirectReadShortOfOneBlockIsReadAgainThenReported) {
  PackedTable t = WritePacked("short-block.bin", 2, 0, 1000, true);
  spark::ReadFile f;
  CHECK(f.Open(t.path, true, 4096, false).ok());
  spark::AlignedBuffer buf;
  uint8_t* p = buf.Reserve(spark::kDirectAlign);
  for (uint32_t every : {2u, 1u}) {
    spark::FaultConfig faults;
    faults.short_unaligned_every = every;
    spark::FaultInjector injector(faults);
    spark::ReadCounters counters;
    spark::RetryPolicy retry;
    retry.retries = 2;
    retry.first_delay_us = 100;
    spark::ReadContext ctx{&injector, &counters, retry};
    if (every == 2) CHECK(spark::PreadAll(f, p, 4096, 4096, 8192, ctx).ok());  // call 1: whole
    spark::Status st = spark::PreadAll(f, p, 4096, 4096, 8192, ctx);           // short by half a block
    if (every == 2) {
      CHECK(st.ok());
      CHECK_EQ(counters.error_retries.load(), 1u);
      CHECK(std::memcmp(p, Row(2, 62, kDim).data(), kRowBytes) == 0);  // the second page starts with row 62
    } else {
      CHECK(st.code == Code::E_IO && st.has_offset && st.offset == 8192);
      CHECK(st.message.find("returned 2048 with O_DIRECT, less than one block") != std::string::npos);
      CHECK(st.message.find("(after 2 retries)") != std::string::npos);
    }
  }
}

TEST(DirectReadsAcceptTheEndOfTheFileInsideABlock) {
  std::vector<uint8_t> data(10000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7 + 3);
  std::string path = WriteTempFile("tail.bin", data);
  spark::ReadFile f;
  CHECK(f.Open(path, true, 0, false).ok());
  CHECK(f.direct());
  spark::AlignedBuffer buf;
  uint8_t* p = buf.Reserve(3 * spark::kDirectAlign);
  spark::ReadCounters counters;
  spark::FaultInjector faults({});  // enforces O_DIRECT alignment on every call
  spark::ReadContext ctx{&faults, &counters, {}};
  CHECK(spark::PreadAll(f, p, 3 * spark::kDirectAlign, 10000, 0, ctx).ok());
  CHECK(std::memcmp(p, data.data(), data.size()) == 0);
  spark::Status st = spark::PreadAll(f, p, 3 * spark::kDirectAlign, 10001, 0, ctx);
  CHECK(st.code == Code::E_IO && st.has_offset && st.offset == 10000);
  CHECK(st.message.find("unexpected end of file: 1 more bytes") != std::string::npos);
}

TEST(ABufferedTableNeverReadsThroughAnODirectDescriptor) {
  // Two tables over one page-layout file: the first asks for O_DIRECT, the second does not.
  PackedTable direct = WriteDirectPages("shared.bin", 3, 0, 1000);
  PackedTable buffered = direct;
  buffered.layer = 4;
  buffered.direct = false;
  spark::ThreadPool pool(2);
  spark::StoreOptions o;
  o.merge = false;  // single rows read straight into the output: unaligned, buffered only
  auto store = OpenStore({direct, buffered}, o);
  CHECK(store->Find(3)->direct_active);
  CHECK(!store->Find(4)->direct_active);
  std::vector<uint64_t> ids = {1, 500, 999, 17};
  for (uint32_t layer : {3u, 4u}) {
    std::vector<uint8_t> out;
    spark::Status st = GatherInto(*store, pool, layer, ids, &out);
    if (!st.ok()) std::printf("  layer %u: %s\n", layer, st.ToString().c_str());
    CHECK(st.ok());
    CHECK(RowsMatch(out, 3, ids));  // both tables hold the bytes written for layer 3
  }
}

TEST(ResidentScalesLoadWhileGathersRun) {
  SnapshotTable t = WriteSnapshot("resident-race.bin", 5, 1000);
  t.resident_scales = spark::IdRange{0, 1000};
  const std::vector<uint64_t> ids = Spread(1, 64, 29);
  for (int round = 0; round < 20; ++round) {
    spark::ThreadPool pool(4), loader(2);  // separate pools: no shared queue lock to hide a race
    spark::StoreOptions o;
    o.merge = round % 2 == 0;
    o.faults.delay_us = 300;  // widens the window between starting and finishing the load
    auto store = OpenStore({t}, o);
    std::atomic<bool> stop{false};
    std::atomic<int> bad{0};
    std::vector<std::thread> readers;
    for (int r = 0; r < 3; ++r) {
      readers.emplace_back([&] {
        std::vector<uint8_t> out;
        while (!stop.load()) {
          if (!GatherInto(*store, pool, 5, ids, &out).ok() || !RowsMatch(out, 5, ids)) bad.fetch_add(1);
          (void)store->Stats();  // read concurrently with the load's update
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200 * (round % 5)));
    std::thread second([&] { CHECK(store->LoadResident(loader).ok()); });  // loads race each other too
    CHECK(store->LoadResident(loader).ok());
    second.join();
    stop = true;
    for (auto& th : readers) th.join();
    CHECK_EQ(bad.load(), 0);
    CHECK_EQ(store->Stats().resident_bytes, 1000u * 2);  // loaded once, counted once
    uint64_t before = store->Stats().reads;
    CHECK(GathersRightRows(*store, pool, 5, ids));
    if (!o.merge) CHECK_EQ(store->Stats().reads - before, 64u);  // weights only: scales are resident
  }
}

int main() { return spark_test::RunAll("row_store_io_test"); }
