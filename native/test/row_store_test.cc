#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/row_store/row_store.h"
#include "core/threads/parallel.h"
#include "test/row_fixtures.h"
#include "test/testing.h"

namespace {

using namespace row_fixtures;
using spark::Code;

const std::vector<uint64_t> kIds = {0, 999, 5, 5, 6, 7, 500, 64, 63, 998, 5, 0, 321, 322, 900};

// Counts the fault injector's read calls and the most in flight at once. The first calls are
// held until `hold` are in flight together, or until `patience` has passed since construction,
// so the peak does not depend on how soon a loaded machine schedules the pool's threads.
class ReadsInFlight : public spark::ReadObserver {
 public:
  ReadsInFlight(uint32_t hold, std::chrono::seconds patience)
      : hold_(hold), deadline_(std::chrono::steady_clock::now() + patience) {}
  void ReadBegins() override {
    std::unique_lock<std::mutex> lock(mu_);
    ++calls_;
    peak_ = std::max(peak_, ++now_);
    if (peak_ >= hold_) cv_.notify_all();
    cv_.wait_until(lock, deadline_, [this] { return peak_ >= hold_; });
  }
  void ReadEnds() override {
    std::lock_guard<std::mutex> lock(mu_);
    --now_;
  }
  uint64_t Calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  uint32_t Peak() {
    std::lock_guard<std::mutex> lock(mu_);
    return peak_;
  }

 private:
  const uint32_t hold_;
  const std::chrono::steady_clock::time_point deadline_;
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t calls_ = 0;
  uint32_t now_ = 0, peak_ = 0;
};

}  // namespace

TEST(RunParallelFromAPoolThreadDoesNotDeadlock) {
  spark::ThreadPool pool(2);
  std::atomic<int> sum{0};
  std::atomic<bool> done{false};
  pool.Submit([&] {
    spark::RunParallel(pool, 1000, 2, [&](size_t i) { sum += static_cast<int>(i); });
    done = true;
  });
  for (int i = 0; i < 2000 && !done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(done.load());
  CHECK_EQ(sum.load(), 999 * 1000 / 2);
}

TEST(SnapshotRowsAreByteExactWithAndWithoutDedupAndMerge) {
  SnapshotTable t = WriteSnapshot("snap.bin", 1, 1000);
  spark::ThreadPool pool(4);
  for (int mode = 0; mode < 3; ++mode) {
    spark::StoreOptions o;
    o.dedup = mode != 2;
    o.merge = mode == 0;
    auto store = OpenStore({t}, o);
    std::vector<uint8_t> out;
    CHECK(GatherInto(*store, pool, 1, kIds, &out).ok());
    CHECK(RowsMatch(out, 1, kIds));
    auto s = store->Stats();
    CHECK_EQ(s.rows, kIds.size());
    CHECK_EQ(s.duplicates, mode == 2 ? 0u : 3u);  // 5 twice more, 0 once more
    if (mode == 1) CHECK_EQ(s.reads, 2 * 12u);    // two reads per distinct row
    if (mode == 0) CHECK(s.reads < 2 * 12u && s.merged > 0);
  }
}

TEST(ResidentScalesMakeOneReadPerRow) {
  SnapshotTable t = WriteSnapshot("snap-res.bin", 14, 1000);
  t.resident_scales = spark::IdRange{0, 600};  // ids >= 600 still read their scale from the file
  spark::ThreadPool pool(4);
  spark::StoreOptions o;
  o.merge = false;
  auto store = OpenStore({t}, o);
  CHECK(store->LoadResident(pool).ok());
  CHECK_EQ(store->Stats().resident_bytes, 600u * 2);
  uint64_t before = store->Stats().reads;
  std::vector<uint8_t> out;
  CHECK(GatherInto(*store, pool, 14, kIds, &out).ok());
  CHECK(RowsMatch(out, 14, kIds));
  CHECK_EQ(store->Stats().reads - before, 12u + 3u);  // 12 weights + scales of 999, 998, 900
}

TEST(PackedDensePageAndDirectAreByteExact) {
  PackedTable dense = WritePacked("dense.bin", 1, 200, 1200, false);
  PackedTable page = WritePacked("page.bin", 14, 200, 1200, true);
  PackedTable direct = WritePacked("direct.bin", 3, 200, 1200, true);
  direct.direct = true;
  spark::ThreadPool pool(8);
  auto store = OpenStore({dense, page, direct});
  std::vector<uint64_t> ids = {200, 1199, 262, 261, 263, 700, 700, 1000, 201};
  for (uint32_t layer : {1u, 14u, 3u}) {
    std::vector<uint8_t> out;
    CHECK(GatherInto(*store, pool, layer, ids, &out).ok());
    CHECK(RowsMatch(out, layer, ids));
  }
  std::printf("  (O_DIRECT active on %s: %d)\n", TempDir().c_str(), store->Find(3)->direct_active);
}

TEST(OutOfRangeIdsAndSmallBuffersFailBeforeAnyRead) {
  PackedTable t = WritePacked("range.bin", 1, 100, 200, false);
  spark::ThreadPool pool(2);
  auto store = OpenStore({t});
  std::vector<uint8_t> out;
  spark::Status st = GatherInto(*store, pool, 1, {150, 99}, &out);
  CHECK(st.code == Code::E_ROW_RANGE);
  CHECK(st.message.find("row id 99 ") != std::string::npos);
  st = GatherInto(*store, pool, 1, {200}, &out);
  CHECK(st.code == Code::E_ROW_RANGE && st.message.find("200") != std::string::npos);
  st = GatherInto(*store, pool, 2, {150}, &out);
  CHECK(st.code == Code::E_ROW_RANGE && st.message.find("layer 2") != std::string::npos);
  std::vector<uint64_t> ids = {150, 151};
  out.assign(kRowBytes * 2 - 1, 0);
  st = store->Gather(pool, 1, ids.data(), ids.size(), out.data(), out.size());
  CHECK(st.code == Code::E_USAGE);
  CHECK_EQ(store->Stats().reads, 0u);
}

TEST(ShortReadsAndEintrAreRetried) {
  SnapshotTable snap = WriteSnapshot("faults.bin", 1, 1000);
  PackedTable direct = WritePacked("faults-direct.bin", 2, 0, 1000, true);
  direct.direct = true;
  spark::StoreOptions o;
  o.faults.short_every = 2;
  o.faults.eintr_every = 3;
  spark::ThreadPool pool(4);
  auto store = OpenStore({snap, direct}, o);
  std::vector<uint8_t> out;
  CHECK(GatherInto(*store, pool, 1, kIds, &out).ok());
  CHECK(RowsMatch(out, 1, kIds));
  CHECK(GatherInto(*store, pool, 2, kIds, &out).ok());
  CHECK(RowsMatch(out, 2, kIds));
  CHECK(store->Stats().retries > 5);
}

TEST(EioIsReportedWithFileAndOffset) {
  PackedTable t = WritePacked("eio.bin", 1, 0, 1000, false);
  spark::StoreOptions o;
  o.faults.eio_every = 1;
  o.merge = false;
  spark::ThreadPool pool(1);
  auto store = OpenStore({t}, o);
  std::vector<uint8_t> out;
  spark::Status st = GatherInto(*store, pool, 1, {10}, &out);
  CHECK(st.code == Code::E_IO);
  CHECK_EQ(st.path, t.path);
  CHECK(st.has_offset && st.offset == 4096 + 10 * kRowBytes);
  CHECK(st.ToString().find("Input/output error") != std::string::npos);
}

TEST(EndOfFileIsReportedWithFileAndOffset) {
  PackedTable t = WritePacked("eof.bin", 1, 0, 1000, false);
  spark::ThreadPool pool(2);
  auto store = OpenStore({t});
  CHECK_EQ(truncate(t.path.c_str(), 4096 + 500 * kRowBytes + 10), 0);  // shrinks after open
  std::vector<uint8_t> out;
  spark::Status st = GatherInto(*store, pool, 1, {500}, &out);  // 10 of its 66 bytes remain
  CHECK(st.code == Code::E_IO);
  CHECK(st.message.find("end of file") != std::string::npos);
  CHECK(st.has_offset && st.offset == 4096 + 500 * kRowBytes + 10);
  CHECK(GatherInto(*store, pool, 1, {499}, &out).ok());
}

TEST(TablesLargerThanTheirFilesAreRefusedAtOpen) {
  PackedTable t = WritePacked("short.bin", 1, 0, 100, false);
  t.ids.end = 101;
  std::shared_ptr<RowStore> store;
  spark::Status st = RowStore::Open({t}, {}, &store);
  CHECK(st.code == Code::E_SHARD_TRUNCATED);
  CHECK(st.message.find("layer 1") != std::string::npos);
  PackedTable missing = t;
  missing.path = TempDir() + "/no-such-file";
  st = RowStore::Open({missing}, {}, &store);
  CHECK(st.code == Code::E_FILE_NOT_FOUND);
}

TEST(OffsetsPastFourGigabytesAreExact) {
  // A sparse snapshot whose weight tensor reaches past 2^32 bytes: only the checked rows exist.
  std::string path = TempDir() + "/big.bin";
  const uint64_t rows = (uint64_t{5} << 32) / kDim;  // 20 GiB of weights
  const uint64_t scale_offset = kHeader + rows * kDim;
  int fd = open(path.c_str(), O_CREAT | O_TRUNC | O_RDWR, 0644);
  CHECK_EQ(ftruncate(fd, static_cast<off_t>(scale_offset + rows * 2)), 0);
  std::vector<uint64_t> ids = {0, rows - 1, rows / 2, (uint64_t{1} << 32) / kDim + 3, rows - 1};
  for (uint64_t id : ids) {
    auto row = Row(7, id, kDim);
    WriteAt(fd, row.data(), kDim, kHeader + id * kDim);
    WriteAt(fd, row.data() + kDim, 2, scale_offset + id * 2);
  }
  close(fd);
  SnapshotTable t;
  t.layer = 7;
  t.rows = rows;
  t.dim = kDim;
  t.weight_path = t.scale_path = path;
  t.weight_offset = kHeader;
  t.scale_offset = scale_offset;
  spark::ThreadPool pool(4);
  auto store = OpenStore({t});
  std::vector<uint8_t> out;
  CHECK(GatherInto(*store, pool, 7, ids, &out).ok());
  CHECK(RowsMatch(out, 7, ids));
  unlink(path.c_str());
}

TEST(CloseWhileInFlightFailsTheBatchCleanly) {
  PackedTable t = WritePacked("close.bin", 1, 0, 1000, false);
  spark::StoreOptions o;
  o.faults.delay_us = 2000;
  o.merge = false;
  spark::ThreadPool pool(2);
  auto store = OpenStore({t}, o);
  std::vector<uint64_t> ids;
  for (uint64_t i = 0; i < 400; ++i) ids.push_back(i * 2);
  std::vector<uint8_t> out;
  spark::Status st = GatherClosedAfter(*store, pool, 1, ids, std::chrono::milliseconds(20), &out);
  CHECK(st.code == Code::E_STORE_CLOSED);
  CHECK(store->Stats().reads < ids.size());
  st = store->Gather(pool, 1, ids.data(), 1, out.data(), out.size());
  CHECK(st.code == Code::E_STORE_CLOSED);
}

// Reads that wait (delay_us models NFS latency) overlap: a pool of T threads keeps T of a
// batch's reads in flight at once. Observed rather than timed, so a loaded machine cannot fail
// it: the first reads are held until T are in flight together, which a pool that runs them
// one after another never reaches (the hold then gives up after its patience and the peak
// shows the shortfall).
TEST(DelayedReadsScaleWithThreads) {
  PackedTable t = WritePacked("delay.bin", 1, 0, 1000, false);
  std::vector<uint64_t> ids;
  for (uint64_t i = 0; i < 128; ++i) ids.push_back(i * 7);
  for (uint32_t threads : {2u, 32u}) {
    ReadsInFlight in_flight(threads, std::chrono::seconds(10));
    spark::StoreOptions o;
    o.faults.delay_us = 1000;
    o.faults.observer = &in_flight;
    o.merge = false;
    spark::ThreadPool pool(threads);
    auto store = OpenStore({t}, o);
    std::vector<uint8_t> out;
    CHECK(GatherInto(*store, pool, 1, ids, &out).ok());
    CHECK(RowsMatch(out, 1, ids));
    CHECK_EQ(in_flight.Calls(), ids.size());  // one delayed read per row, none served otherwise
    CHECK_EQ(in_flight.Peak(), threads);      // the caller and threads - 1 helpers, no more
  }
}

int main() { return spark_test::RunAll("row_store_test"); }
