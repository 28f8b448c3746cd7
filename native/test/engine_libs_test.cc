// The engine libraries' C ABIs (native/engines), linked in: rows against the fixture's known
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

#include "test/row_fixtures.h"
#include "test/testing.h"

extern "C" {
int engram_rows_abi_version(void);
void* engram_rows_open(const char* path, uint64_t weight_off, uint64_t scale_off, uint64_t row_lo, uint64_t row_hi,
                       int threads);
void engram_rows_gather(void* work);
uint64_t engram_rows_prefetch(void* store, const int64_t* ids, uint64_t n);
void engram_rows_stats(void* store, uint64_t out[4]);
uint64_t engram_rows_resident(void* store);
void engram_rows_release(void* store);
void engram_rows_close(void* store);
void* row_store_open(const char* path, uint64_t rows, uint64_t woff, uint64_t soff, uint64_t budget);
void row_store_range(void* store, uint64_t lo, uint64_t hi);
int row_store_attach_packed(void* store, const char* path, uint64_t layer);
void row_store_lookup(void* work);
void row_store_stats(void* store, uint64_t out[9]);
void row_store_close(void* store);
void row_store_next_cache_on_drm(const char* node, uint64_t bytes);
}

namespace {

using row_fixtures::RowByte;

constexpr uint64_t kRows = 3000, kWoff = 664;
constexpr uint64_t kSoff = kWoff + kRows * 256 + 40;

struct OverlayWork {
  uint64_t count;
  void* store;
  uint8_t* w;
  uint8_t* s;
  const int64_t* ids;
};
struct MiaWork {
  void* store;
  const int64_t* ids;
  uint8_t* w;
  uint8_t* s;
  uint64_t count;
};

// A two-column file: row r's weight bytes RowByte(1, r, 0..256), scale bytes RowByte(1, r, 256..264).
const std::string& TwoColumnFile() {
  static const std::string path = [] {
    std::vector<uint8_t> bytes(kSoff + kRows * 8, 0x5A);
    for (uint64_t r = 0; r < kRows; ++r) {
      for (uint64_t c = 0; c < 256; ++c) bytes[kWoff + r * 256 + c] = RowByte(1, r, c);
      for (uint64_t c = 0; c < 8; ++c) bytes[kSoff + r * 8 + c] = RowByte(1, r, 256 + c);
    }
    return row_fixtures::WriteTempFile("engine-two-column.bin", bytes);
  }();
  return path;
}

// The Mia stack's packed shard of rows [lo, hi) of layer 1.
std::string MiaPack(uint64_t lo, uint64_t hi) {
  std::vector<uint8_t> bytes(4096 + (hi - lo) * 264, 0);
  const uint64_t header[6] = {0x31344E4531565344ull, 1, lo, hi, kRows, 264};
  std::memcpy(bytes.data(), header, sizeof header);  // little-endian hosts only (x86-64, aarch64)
  for (uint64_t r = lo; r < hi; ++r) {
    for (uint64_t c = 0; c < 264; ++c) bytes[4096 + (r - lo) * 264 + c] = RowByte(1, r, c);
  }
  return row_fixtures::WriteTempFile("engram-l1-r1of3.bin", bytes);
}

// Whether position i of the outputs holds id's row (owned) or zeros.
bool RowIs(const std::vector<uint8_t>& w, const std::vector<uint8_t>& s, size_t i, int64_t id, bool owned) {
  for (uint64_t c = 0; c < 256; ++c) {
    if (w[i * 256 + c] != (owned ? RowByte(1, static_cast<uint64_t>(id), c) : 0)) return false;
  }
  for (uint64_t c = 0; c < 8; ++c) {
    if (s[i * 8 + c] != (owned ? RowByte(1, static_cast<uint64_t>(id), 256 + c) : 0)) return false;
  }
  return true;
}

std::vector<int64_t> Ids(uint64_t seed, size_t n, int64_t lo, int64_t hi) {
  std::vector<int64_t> ids(n);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& id : ids) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    id = lo + static_cast<int64_t>(x % static_cast<uint64_t>(hi - lo));
  }
  return ids;
}

}  // namespace

TEST(overlay_rows_and_zeros) {
  CHECK_EQ(engram_rows_abi_version(), 3);
  void* store = engram_rows_open(TwoColumnFile().c_str(), kWoff, kSoff, 1000, 2000, 3);
  CHECK(store != nullptr);
  if (store == nullptr) return;
  std::vector<int64_t> ids = Ids(1, 5000, -50, kRows + 50);
  std::vector<uint8_t> w(ids.size() * 256, 0xAB), s(ids.size() * 8, 0xAB);
  OverlayWork work{ids.size(), store, w.data(), s.data(), ids.data()};
  for (int pass = 0; pass < 2; ++pass) {
    engram_rows_gather(&work);
    bool all = true;
    for (size_t i = 0; i < ids.size(); ++i) all = all && RowIs(w, s, i, ids[i], ids[i] >= 1000 && ids[i] < 2000);
    CHECK(all);
  }
  uint64_t st[4];
  engram_rows_stats(store, st);
  CHECK_EQ(st[0], 2u);
  CHECK_EQ(st[1] + st[2], 2 * ids.size());
  engram_rows_close(store);
}

TEST(overlay_open_close_loop_with_prefetch_and_release) {
  for (int k = 0; k < 16; ++k) {
    void* store = engram_rows_open(TwoColumnFile().c_str(), kWoff, kSoff, 0, kRows, k % 4);
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
    std::vector<uint8_t> w(ids.size() * 256), s(ids.size() * 8);
    OverlayWork work{ids.size(), store, w.data(), s.data(), ids.data()};
    bool all = true;
    for (int g = 0; g < 3; ++g) {
      engram_rows_gather(&work);
      for (size_t i = 0; i < ids.size(); ++i)
        all = all && RowIs(w, s, i, ids[i], ids[i] >= 0 && ids[i] < int64_t(kRows));
    }
    CHECK(all);
    stop.store(true);
    governor.join();
    // Prefetch reads still queued when the store closes.
    engram_rows_prefetch(store, ids.data(), ids.size());
    engram_rows_close(store);
  }
}

TEST(mia_checkpoint_and_pack_loop) {
  const std::string pack = MiaPack(1000, 2000);
  for (int k = 0; k < 12; ++k) {
    void* store = row_store_open(TwoColumnFile().c_str(), kRows, kWoff, kSoff, (k % 3) * 65536);
    CHECK(store != nullptr);
    if (store == nullptr) return;
    row_store_range(store, 1000, 2000);
    if (k % 2 == 1) CHECK(row_store_attach_packed(store, pack.c_str(), 1) >= 0);
    // A DRM request that is refused (no such node, not a DRM device, a size that cannot be one)
    // leaves the next cache in ordinary memory, with the same rows.
    const char* nodes[] = {"/nonexistent/card0", "/dev/null", nullptr};
    row_store_next_cache_on_drm(nodes[k % 3], k % 4 == 3 ? ~uint64_t{0} : uint64_t{16} << 20);
    std::vector<int64_t> ids = Ids(k, 300, 0, kRows);
    std::vector<uint8_t> w(ids.size() * 256), s(ids.size() * 8);
    MiaWork work{store, ids.data(), w.data(), s.data(), ids.size()};
    bool all = true;
    for (int g = 0; g < 3; ++g) {
      row_store_lookup(&work);
      for (size_t i = 0; i < ids.size(); ++i) all = all && RowIs(w, s, i, ids[i], ids[i] >= 1000 && ids[i] < 2000);
    }
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

// Rows of a pack whose 4 KiB blocks are close share one read (native/engines/common/gatherer.cc:
// at most one block between them, up to 16 KiB a read). Row k of a pack of [0, N) is at
// 4096 + 264 k: row 0 lies in block 1, row 15 straddles blocks 1-2, row 32 lies in block 3,
// row 47 in block 4, row 63 in block 5. Each set's reads (no cache: every row is a miss) and
// every row's bytes at the boundaries of the shared reads.
TEST(mia_close_rows_share_reads) {
  const std::string pack = MiaPack(0, kRows);
  void* store = row_store_open(TwoColumnFile().c_str(), kRows, kWoff, kSoff, 0);
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
    std::vector<uint8_t> w(c.ids.size() * 256, 0xAB), s(c.ids.size() * 8, 0xAB);
    MiaWork work{store, c.ids.data(), w.data(), s.data(), c.ids.size()};
    row_store_lookup(&work);
    row_store_stats(store, after);
    bool all = true;
    for (size_t i = 0; i < c.ids.size(); ++i) all = all && RowIs(w, s, i, c.ids[i], true);
    CHECK(all);
    std::vector<int64_t> distinct = c.ids;
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    CHECK_EQ(after[2] - before[2], aio ? c.reads : distinct.size());
  }
  row_store_close(store);
}

int main() { return spark_test::RunAll("engine_libs_test"); }
