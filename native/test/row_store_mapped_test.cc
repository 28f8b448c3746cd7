// The row store's mapped warm path: rows whose pages a read call brought into the page cache
// are copied out of a mapping of the file with no read call, the rest are read as before, the
// bytes are the same either way, and a file that shrinks under the mapping is an error, not a
// crash.
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "core/io/cached_map.h"
#include "core/io/fault_guard.h"
#include "core/row_store/row_store.h"
#include "test/row_fixtures.h"
#include "test/testing.h"

namespace {

using namespace row_fixtures;

std::vector<uint64_t> RandomIds(size_t n, uint64_t lo, uint64_t hi, uint64_t seed) {
  std::vector<uint64_t> ids(n);
  uint64_t x = seed;
  for (auto& id : ids) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    id = lo + (x >> 33) % (hi - lo);
  }
  return ids;
}

}  // namespace

TEST(WarmRowsComeFromTheMappingWithNoReadCall) {
  // A snapshot (two pieces a row), a dense pack and a page pack, each read once, then again.
  SnapshotTable snap = WriteSnapshot("m-snap.bin", 1, 6000);
  PackedTable dense = WritePacked("m-dense.bin", 2, 1000, 7000, false);
  PackedTable page = WritePacked("m-page.bin", 3, 1000, 7000, true);
  spark::ThreadPool pool(3);
  auto store = OpenStore({snap, dense, page});
  CHECK_EQ(store->Stats().mapped_files, 3u);
  for (uint32_t layer : {1u, 2u, 3u}) {
    const uint64_t lo = layer == 1 ? 0 : 1000, hi = layer == 1 ? 6000 : 7000;
    for (size_t n : {1, 24, 144, 3000}) {
      auto ids = RandomIds(n, lo, hi, n * 31 + layer);
      CHECK(GathersRightRows(*store, pool, layer, ids));  // read calls: these pages are now known
      const auto before = store->Stats();
      CHECK(GathersRightRows(*store, pool, layer, ids));
      const auto after = store->Stats();
      CHECK_EQ(after.reads, before.reads);  // not one read call the second time
      CHECK_EQ(after.mapped_rows - before.mapped_rows, n);
      CHECK_EQ(after.rows - before.rows, n);
      CHECK_EQ(after.batches - before.batches, 1u);
    }
  }
}

TEST(AStoreOpenedOnAWarmCacheLearnsItAndReadsNothing) {
  // Just written, so every page is cached; the store has read none of them itself.
  SnapshotTable snap = WriteSnapshot("m-learn.bin", 1, 20000);
  PackedTable page = WritePacked("m-learn-page.bin", 2, 500, 9000, true);
  spark::ThreadPool pool(3);
  auto store = OpenStore({snap, page});
  auto ids = RandomIds(500, 0, 20000, 5);
  auto page_ids = RandomIds(500, 500, 9000, 6);
  const uint64_t weight_pages = (kHeader + 20000 * kDim - 1) / 4096 - kHeader / 4096 + 1;
  const uint64_t learned = store->LearnCached(pool);
  CHECK(learned >= weight_pages);  // at least the weights' pages (and the scales' and the pack's)
  CHECK(GathersRightRows(*store, pool, 1, ids));
  CHECK(GathersRightRows(*store, pool, 2, page_ids));
  CHECK_EQ(store->Stats().reads, 0u);
  CHECK_EQ(store->Stats().mapped_rows, 1000u);
  spark::StoreOptions off;
  off.map_cached = false;
  CHECK_EQ(OpenStore({snap}, off)->LearnCached(pool), 0u);  // nothing mapped, nothing to learn
}

TEST(GatherCachedCopiesAllOrNothingAndNeverReads) {
  SnapshotTable t = WriteSnapshot("m-cached.bin", 1, 20000);
  spark::ThreadPool pool(2);
  auto store = OpenStore({t});
  auto ids = RandomIds(144, 0, 1000, 9);  // pages far from row 19999's, even once reads merge
  std::vector<uint8_t> out(ids.size() * kRowBytes);
  bool copied = true;
  CHECK(store->GatherCached(1, ids.data(), ids.size(), out.data(), out.size(), &copied).ok());
  CHECK(!copied);  // nothing known yet: no copy, and no read call either
  CHECK_EQ(store->Stats().reads, 0u);
  CHECK_EQ(store->Stats().batches, 0u);
  CHECK(GathersRightRows(*store, pool, 1, ids));
  const auto before = store->Stats();
  CHECK(store->GatherCached(1, ids.data(), ids.size(), out.data(), out.size(), &copied).ok());
  CHECK(copied);
  CHECK(RowsMatch(out, 1, ids));
  CHECK_EQ(store->Stats().reads, before.reads);
  CHECK_EQ(store->Stats().mapped_rows - before.mapped_rows, ids.size());
  CHECK_EQ(store->Stats().batches - before.batches, 1u);
  // One unknown row among known ones: all or nothing.
  ids.push_back(19999);
  out.resize(ids.size() * kRowBytes);
  CHECK(store->GatherCached(1, ids.data(), ids.size(), out.data(), out.size(), &copied).ok());
  CHECK(!copied);
  CHECK_EQ(store->Stats().batches - before.batches, 1u);
  // The same errors as Gather.
  uint64_t bad = 20000;
  CHECK(store->GatherCached(1, &bad, 1, out.data(), out.size(), &copied).code == spark::Code::E_ROW_RANGE);
  CHECK(store->GatherCached(1, ids.data(), ids.size(), out.data(), kRowBytes, &copied).code == spark::Code::E_USAGE);
  CHECK(store->GatherCached(7, ids.data(), 1, out.data(), out.size(), &copied).code == spark::Code::E_ROW_RANGE);
  store->Close();
  CHECK(store->GatherCached(1, ids.data(), 1, out.data(), out.size(), &copied).code == spark::Code::E_STORE_CLOSED);
  CHECK(!copied);
}

TEST(APartlyKnownBatchCopiesWhatItCanAndReadsTheRest) {
  // Rows 0..99 are read once; a batch mixing them (with repeats) and rows far away (other
  // pages) copies the first kind and reads only the second, into the right positions.
  SnapshotTable t = WriteSnapshot("m-mixed.bin", 1, 40000);
  spark::ThreadPool pool(2);
  auto store = OpenStore({t});
  std::vector<uint64_t> near;
  for (uint64_t i = 0; i < 100; ++i) near.push_back(i);
  CHECK(GathersRightRows(*store, pool, 1, near));
  std::vector<uint64_t> mixed;
  for (uint64_t i = 0; i < 60; ++i) {
    mixed.push_back(i % 100);
    mixed.push_back(20000 + i * 250);  // each in a weight page of its own, far from rows 0..99
    mixed.push_back(i % 7);
  }
  const auto before = store->Stats();
  CHECK(GathersRightRows(*store, pool, 1, mixed));
  const auto after = store->Stats();
  CHECK_EQ(after.mapped_rows - before.mapped_rows, 120u);
  CHECK(after.reads > before.reads);
  CHECK_EQ(after.rows - before.rows, mixed.size());
  CHECK_EQ(after.batches - before.batches, 1u);
}

TEST(ALargeWarmBatchIsCopiedOnEveryCore) {
  // More than two copy runs' worth of ids, so the runs go over the pool; ids repeat.
  PackedTable t = WritePacked("m-large.bin", 1, 0, 30000, true);
  spark::ThreadPool pool(4);
  auto store = OpenStore({t});
  std::vector<uint64_t> all;
  for (uint64_t i = 0; i < 30000; ++i) all.push_back(i);
  CHECK(GathersRightRows(*store, pool, 1, all));
  auto ids = RandomIds(40000, 0, 30000, 7);
  const auto before = store->Stats();
  CHECK(GathersRightRows(*store, pool, 1, ids));
  CHECK_EQ(store->Stats().mapped_rows - before.mapped_rows, 40000u);
  CHECK_EQ(store->Stats().reads, before.reads);
}

TEST(WhatIsNeverMapped) {
  SnapshotTable t = WriteSnapshot("m-off.bin", 1, 2000);
  PackedTable direct = WriteDirectPages("m-direct.bin", 2, 0, 2000);
  spark::ThreadPool pool(2);
  spark::StoreOptions off;
  off.map_cached = false;
  spark::StoreOptions faults;
  faults.faults.eintr_every = 3;  // tests of the read calls keep every read a call
  for (const auto& o : {off, faults}) {
    auto store = OpenStore({t}, o);
    CHECK_EQ(store->Stats().mapped_files, 0u);
    auto ids = RandomIds(50, 0, 2000, 3);
    CHECK(GathersRightRows(*store, pool, 1, ids));
    CHECK(GathersRightRows(*store, pool, 1, ids));
    CHECK_EQ(store->Stats().mapped_rows, 0u);
  }
  auto store = OpenStore({direct});
  if (store->Find(2)->direct_active) CHECK_EQ(store->Stats().mapped_files, 0u);  // O_DIRECT stays out of the cache
}

TEST(AFileThatShrinksUnderTheMappingIsAnErrorNotACrash) {
  PackedTable t = WritePacked("m-shrink.bin", 1, 0, 5000, false);
  spark::ThreadPool pool(2);
  auto store = OpenStore({t});
  auto ids = RandomIds(144, 0, 5000, 11);
  CHECK(GathersRightRows(*store, pool, 1, ids));  // every page known now
  CHECK(truncate(t.path.c_str(), 4096) == 0);     // header only: every row's page is gone
  std::vector<uint8_t> out;
  spark::Status st = GatherInto(*store, pool, 1, ids, &out);
  CHECK(!st.ok());
  CHECK(st.code == spark::Code::E_IO);
  CHECK(st.ToString().find("m-shrink.bin") != std::string::npos);
  CHECK(GatherInto(*store, pool, 1, ids, &out).code == spark::Code::E_IO);  // and again, the same way
  CHECK_EQ(store->Stats().mapped_rows, 0u);
  // Cut inside a row's page: the mapping would read zeros there, not fault. Still E_IO.
  PackedTable p = WritePacked("m-shrink-page.bin", 2, 0, 100, false);
  auto cut = OpenStore({p});
  std::vector<uint64_t> row50 = {50};
  CHECK(GathersRightRows(*cut, pool, 2, row50));
  CHECK(truncate(p.path.c_str(), 4096 + 50 * kRowBytes + 7) == 0);
  st = GatherInto(*cut, pool, 2, row50, &out);
  CHECK(st.code == spark::Code::E_IO);
  CHECK(st.ToString().find("end of file") != std::string::npos);
}

TEST(TheFaultGuardCatchesOnlyItsOwnThread) {
  const std::string path = WriteTempFile("m-guard.bin", std::vector<uint8_t>(3 * 4096, 7));
  int fd = open(path.c_str(), O_RDONLY);
  CHECK(fd >= 0);
  auto map = spark::FileMap::Create(fd, 3 * 4096);
  CHECK(map != nullptr);
  struct Touch {
    const uint8_t* p;
    uint64_t sum;
  } touch{map->at(2 * 4096), 0};
  auto read_page = [](void* a) {
    auto* t = static_cast<Touch*>(a);
    for (int i = 0; i < 4096; i += 64) t->sum += t->p[i];
  };
  CHECK(spark::RunFaultGuarded(read_page, &touch));
  CHECK_EQ(touch.sum, 64u * 7);
  CHECK(truncate(path.c_str(), 4096) == 0);
  CHECK(!spark::RunFaultGuarded(read_page, &touch));  // the page past the end faults: caught
  CHECK(!spark::RunFaultGuarded(read_page, &touch));  // and again: the guard is re-armed
  // Outside a guard the fault is not swallowed: a child that touches the page dies of it.
  std::printf("  (a child process now dies of SIGBUS on purpose; a sanitizer prints its report)\n");
  fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    volatile uint8_t v = *map->at(2 * 4096);
    (void)v;
    _exit(0);
  }
  int status = 0;
  CHECK(waitpid(child, &status, 0) == child);
  CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 0));
  // Nor is one sent by kill() to a thread outside a guard: it ends the process, as before.
  child = fork();
  if (child == 0) {
    spark::FaultGuardAvailable();
    kill(getpid(), SIGBUS);
    _exit(0);
  }
  CHECK(waitpid(child, &status, 0) == child);
  // Killed by SIGBUS; under a sanitizer, whose handler was there first, its report's exit code.
  CHECK(WIFSIGNALED(status) ? WTERMSIG(status) == SIGBUS : WEXITSTATUS(status) != 0);
  // Misuse: ranges outside the file are never known, and marking them does nothing.
  CHECK(!map->Known(3 * 4096, 1));
  CHECK(!map->Known(0, 0));
  CHECK(!map->Known(UINT64_MAX - 10, 20));
  map->Mark(UINT64_MAX - 10, 20);
  map->Mark(0, 4096);
  CHECK(map->Known(0, 4096));
  CHECK(!map->Known(0, 4097));
  map->Forget(100, 1);
  CHECK(!map->Known(0, 1));
  close(fd);
}

int main() { return spark_test::RunAll("row_store_mapped_test"); }
