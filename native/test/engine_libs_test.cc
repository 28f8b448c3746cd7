// The engine libraries' C ABIs (native/engine-libs), linked in: rows against the fixture's known
// bytes, and open/gather/prefetch/release/close loops that the sanitizer runs check for leaks,
// races on freed memory and undefined behaviour. The Python ctypes checks in test/engine-libs
// cover the stacks' semantics on the built .so files.
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "test/engine_abi.h"

using namespace engine_abi;

namespace {

constexpr uint64_t kRows = 3000;

const Table& TwoColumnFile() {
  static const Table t = WriteTable("engine-two-column.bin", kRows);
  return t;
}

std::string MiaPack(uint64_t lo, uint64_t hi) {
  return WritePack("engram-l1-r1of3.bin", {.lo = lo, .hi = hi, .n = kRows});
}

}  // namespace

TEST(overlay_rows_and_zeros) {
  CHECK_EQ(engram_rows_abi_version(), 3);
  const Table& t = TwoColumnFile();
  void* store = engram_rows_open(t.path.c_str(), t.woff, t.soff, 1000, 2000, 3);
  CHECK(store != nullptr);
  if (store == nullptr) return;
  std::vector<int64_t> ids = Ids(1, 5000, -50, kRows + 50);
  for (int pass = 0; pass < 2; ++pass) CHECK(RowsAre(Gather(store, ids), ids, 1000, 2000));
  uint64_t st[4];
  engram_rows_stats(store, st);
  CHECK_EQ(st[0], 2u);
  CHECK_EQ(st[1] + st[2], 2 * ids.size());
  engram_rows_close(store);
}

TEST(overlay_open_close_loop_with_prefetch_and_release) {
  const Table& t = TwoColumnFile();
  for (int k = 0; k < 16; ++k) {
    void* store = engram_rows_open(t.path.c_str(), t.woff, t.soff, 0, kRows, k % 4);
    CHECK(store != nullptr);
    if (store == nullptr) return;
    std::atomic<bool> stop{false};
    std::thread governor([&] {
      std::vector<int64_t> ids = Ids(k + 7, 300, 0, kRows);
      while (!stop.load()) {
        engram_rows_prefetch(store, ids.data(), ids.size());
        engram_rows_resident(store);
        engram_rows_release(store);
      }
    });
    std::vector<int64_t> ids = Ids(k, 200, -5, kRows + 5);
    bool all = true;
    for (int g = 0; g < 3; ++g) all = all && RowsAre(Gather(store, ids), ids, 0, kRows);
    CHECK(all);
    stop.store(true);
    governor.join();
    // Prefetch reads still queued when the store closes.
    engram_rows_prefetch(store, ids.data(), ids.size());
    engram_rows_close(store);
  }
}

TEST(mia_checkpoint_and_pack_loop) {
  const Table& t = TwoColumnFile();
  const std::string pack = MiaPack(1000, 2000);
  for (int k = 0; k < 12; ++k) {
    void* store = row_store_open(t.path.c_str(), kRows, t.woff, t.soff, (k % 3) * 65536);
    CHECK(store != nullptr);
    if (store == nullptr) return;
    row_store_range(store, 1000, 2000);
    if (k % 2 == 1) CHECK(row_store_attach_packed(store, pack.c_str(), 1) >= 0);
    // A DRM request that is refused (no such node, not a DRM device, a size that cannot be one)
    // leaves the next cache in ordinary memory, with the same rows.
    const char* nodes[] = {"/nonexistent/card0", "/dev/null", nullptr};
    row_store_next_cache_on_drm(nodes[k % 3], k % 4 == 3 ? ~uint64_t{0} : uint64_t{16} << 20);
    std::vector<int64_t> ids = Ids(k, 300, 0, kRows);
    bool all = true;
    for (int g = 0; g < 3; ++g) all = all && RowsAre(Lookup(store, ids), ids, 1000, 2000);
    CHECK(all);
    uint64_t st[9];
    row_store_stats(store, st);
    CHECK_EQ(st[0] + st[1], 3 * static_cast<uint64_t>(std::count_if(
                                    ids.begin(), ids.end(), [](int64_t id) { return id >= 1000 && id < 2000; })));
    row_store_close(store);
  }
}

// Whether the kernel gives this process native AIO contexts (qemu-user does not): without them
// the libraries read every row on their worker team, one read per row, nothing shared.
bool KernelAio() {
  aio_context_t ctx = 0;
  if (syscall(SYS_io_setup, 1, &ctx) != 0) return false;
  syscall(SYS_io_destroy, ctx);
  return true;
}

// Rows of a pack whose 4 KiB blocks are close share one read (native/engine-libs/common/gatherer.cc:
// at most one block between them, up to 16 KiB a read). Row k of a pack of [0, N) is at
// 4096 + 264 k: row 0 lies in block 1, row 15 straddles blocks 1-2, row 32 lies in block 3,
// row 47 in block 4, row 63 in block 5. Each set's reads (no cache: every row is a miss) and
// every row's bytes at the boundaries of the shared reads.
TEST(mia_close_rows_share_reads) {
  const std::string pack = MiaPack(0, kRows);
  const Table& t = TwoColumnFile();
  void* store = row_store_open(t.path.c_str(), kRows, t.woff, t.soff, 0);
  CHECK(store != nullptr);
  if (store == nullptr) return;
  row_store_range(store, 0, kRows);
  if (row_store_attach_packed(store, pack.c_str(), 1) != 1) {
    row_store_close(store);
    return;  // the temporary directory's filesystem refuses O_DIRECT: no AIO reads to merge
  }
  struct Case {
    std::vector<int64_t> ids;
    uint64_t reads;  // with AIO; without, one read per distinct row
  };
  const bool aio = KernelAio();
  const Case cases[] = {
      {{0, 32}, 1},          // one block between them: one 12 KiB read
      {{32, 0, 32}, 1},      // a repeat, in any order
      {{0, 47}, 2},          // two blocks between them: two reads
      {{0, 15, 32}, 1},      // the straddling row joins both
      {{0, 32, 63}, 2},      // 0-32 is 12 KiB; adding 63 would make 20 KiB
      {{15}, 1},             // one row over two blocks
      {{0, 32, 47, 63}, 2},  // 0-32 (blocks 1-3), then 47-63 (blocks 4-5)
  };
  for (const Case& c : cases) {
    uint64_t before[9], after[9];
    row_store_stats(store, before);
    CHECK(RowsAre(Lookup(store, c.ids), c.ids, 0, kRows));
    row_store_stats(store, after);
    std::vector<int64_t> distinct = c.ids;
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    CHECK_EQ(after[2] - before[2], aio ? c.reads : distinct.size());
  }
  row_store_close(store);
}

// A warm batch of more distinct rows than the first round of lookups takes (8,192): the rest
// are looked up where the misses are read, and only the misses are. Rows [0, 40,000) are
// cached first; then all 48,000 are asked: every row right, 40,000 hits (and a repeat), 8,000
// misses.
TEST(mia_warm_batch_past_the_serial_lookups) {
  constexpr uint64_t kBig = 48000, kCached = 40000;
  const Table t = WriteTable("engine-warm-big.bin", kBig);
  void* store = row_store_open(t.path.c_str(), kBig, t.woff, t.soff, uint64_t{64} << 20);
  CHECK(store != nullptr);
  if (store == nullptr) return;
  row_store_range(store, 0, kBig);
  auto shuffled = [](uint64_t n) {
    std::vector<int64_t> ids(n);
    for (uint64_t i = 0; i < n; ++i) ids[i] = static_cast<int64_t>((i * 7919) % n);
    return ids;
  };
  std::vector<int64_t> ids = shuffled(kCached);
  CHECK(RowsAre(Lookup(store, ids), ids, 0, kBig));
  uint64_t before[9], after[9];
  row_store_stats(store, before);
  CHECK(before[7] > 1);  // the pool has threads besides the caller
  CHECK_EQ(before[1], kCached);
  ids = shuffled(kBig);
  ids.push_back(5);  // a repeat: copied, counted a hit
  CHECK(RowsAre(Lookup(store, ids), ids, 0, kBig));
  row_store_stats(store, after);
  CHECK_EQ(after[0] - before[0], kCached + 1);
  CHECK_EQ(after[1] - before[1], kBig - kCached);
  row_store_close(store);
}

int main() { return spark_test::RunAll("engine_libs_test"); }
