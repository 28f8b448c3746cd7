// The baseline's rows, zeros, cache and pool, standalone (built and run by native/test/run.sh
// in every variant: plain, ASan+UBSan, TSan, arm64 under qemu). Its aborts are tested from
// Node in child processes (test/repo/mia-baseline.test.ts).
#include "row_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "test/direct_probe.h"
#include "test/testing.h"

namespace {

constexpr uint64_t kRows = 5000, kLo = 1234, kHi = 4321, kLayer = 14;

uint8_t RowByte(uint64_t id, uint64_t c) { return static_cast<uint8_t>((id * 131 + c * 7 + (id >> 8)) & 0xff); }

std::string Dir() {
  static std::string dir = [] {
    char tmpl[] = "/var/tmp/mia-baseline-XXXXXX";
    const char* d = mkdtemp(tmpl);
    return std::string(d ? d : "/var/tmp");
  }();
  return dir;
}

void WriteFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0);
  CHECK_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  close(fd);
}

// The checkpoint: weight [N, 256] at 100, scale [N, 8] right after (unaligned, as real shards).
std::string Checkpoint() {
  std::vector<uint8_t> b(100 + kRows * 264);
  for (uint64_t id = 0; id < kRows; id++) {
    for (uint64_t c = 0; c < 256; c++) b[100 + id * 256 + c] = RowByte(id, c);
    for (uint64_t c = 0; c < 8; c++) b[100 + kRows * 256 + id * 8 + c] = RowByte(id, 256 + c);
  }
  std::string path = Dir() + "/checkpoint.bin";
  WriteFile(path, b);
  return path;
}

std::string Pack() {
  std::vector<uint8_t> b(4096 + (kHi - kLo) * 264);
  uint64_t h[6] = {0x31344E4531565344ull, kLayer, kLo, kHi, kRows, 264};
  std::memcpy(b.data(), h, sizeof h);
  for (uint64_t id = kLo; id < kHi; id++) {
    for (uint64_t c = 0; c < 264; c++) b[4096 + (id - kLo) * 264 + c] = RowByte(id, c);
  }
  std::string path = Dir() + "/engram-l14-r1of3.bin";
  WriteFile(path, b);
  return path;
}

// Looks ids up (from `callers` threads at once) and checks every row or zero row.
void LookupAndCheck(Store* s, const std::vector<int64_t>& ids, int callers = 1) {
  std::vector<std::thread> ts;
  std::vector<int> bad(callers, 0);  // CHECK is not thread-safe: counted here, checked after the joins
  for (int k = 0; k < callers; k++) {
    ts.emplace_back([&, k] {
      std::vector<uint8_t> w(ids.size() * 256, 0xAA), sc(ids.size() * 8, 0xAA);
      LookupWork work{s, ids.data(), w.data(), sc.data(), ids.size()};
      row_store_lookup(&work);
      for (size_t i = 0; i < ids.size(); i++) {
        uint64_t id = static_cast<uint64_t>(ids[i]);
        bool owned = id >= kLo && id < kHi;
        bool ok = true;
        for (uint64_t c = 0; c < 256; c++) ok &= w[i * 256 + c] == (owned ? RowByte(id, c) : 0);
        for (uint64_t c = 0; c < 8; c++) ok &= sc[i * 8 + c] == (owned ? RowByte(id, 256 + c) : 0);
        bad[k] += !ok;
      }
    });
  }
  for (auto& t : ts) t.join();
  for (int b : bad) CHECK_EQ(b, 0);
}

std::vector<int64_t> SomeIds() {
  std::vector<int64_t> ids = {kLo, kLo + 1, kLo + 15, kLo + 16, kHi - 1, kLo - 1, kHi, 0, kRows - 1};
  for (int64_t i = 0; i < 300; i++) ids.push_back(kLo + (i * 7919) % (kHi - kLo));
  return ids;
}

TEST(pool_and_settings_as_configured) {
  // Read once, when the pool is first needed: 4 threads from here on.
  setenv("DSV41_IO_THREADS", "4", 1);
  uint64_t st[9];
  row_store_stats(nullptr, st);
  setenv("DSV41_IO_THREADS", "64", 1);
  setenv("DSV41_CACHE_WAYS", "0", 1);
  setenv("DSV41_RESIDENT_SCALES", "off", 1);
  Store* s = row_store_open(Checkpoint().c_str(), kRows, 100, 100 + kRows * 256, 1 << 20);
  CHECK(s != nullptr);
  row_store_stats(s, st);
  CHECK_EQ(st[6], 1u);  // ways clamped up to 1
  CHECK_EQ(st[7], 4u);
  CHECK_EQ(st[4], (1u << 20) / 273);
  row_store_close(s);
}

TEST(checkpoint_rows_two_reads_a_miss_or_one_with_pinned_scales) {
  for (const char* pin : {"0", "1"}) {
    setenv("DSV41_RESIDENT_SCALES", pin, 1);
    setenv("DSV41_CACHE_WAYS", "4", 1);
    Store* s = row_store_open(Checkpoint().c_str(), kRows, 100, 100 + kRows * 256, 0);
    CHECK(s != nullptr);
    row_store_range(s, kLo, kHi);
    LookupAndCheck(s, SomeIds());
    uint64_t st[9];
    row_store_stats(s, st);
    CHECK_EQ(st[0], 0u);  // no cache, no hits
    CHECK_EQ(st[2], st[1] * (pin[0] == '1' ? 1 : 2));
    CHECK_EQ(st[5], pin[0] == '1' ? (kHi - kLo) * 8 : 0u);
    CHECK_EQ(st[8], 0u);
    row_store_close(s);
  }
}

TEST(packed_rows_one_read_a_miss_and_the_cache_hits_repeats) {
  if (!spark_test::DirectAllowedIn(Dir())) {
    std::printf("  (skipped: %s refuses O_DIRECT, so the reader would not attach a pack)\n", Dir().c_str());
    return;
  }
  setenv("DSV41_RESIDENT_SCALES", "0", 1);
  setenv("DSV41_CACHE_WAYS", "16", 1);
  Store* s = row_store_open(Checkpoint().c_str(), kRows, 100, 100 + kRows * 256, 8 << 20);
  CHECK(s != nullptr);
  row_store_range(s, kLo, kHi);
  CHECK_EQ(row_store_attach_packed(s, (Dir() + "/absent.bin").c_str(), kLayer), 0);
  CHECK_EQ(row_store_attach_packed(s, Pack().c_str(), kLayer), 1);
  std::vector<int64_t> ids = SomeIds();
  LookupAndCheck(s, ids, 3);  // three callers at once: one job at a time
  LookupAndCheck(s, ids);
  uint64_t st[9];
  row_store_stats(s, st);
  uint64_t owned = 0;
  for (int64_t id : ids) owned += id >= static_cast<int64_t>(kLo) && id < static_cast<int64_t>(kHi);
  CHECK_EQ(st[0] + st[1], 4 * owned);
  CHECK_EQ(st[2], st[1]);  // one read per miss
  CHECK(st[0] >= owned);   // the last pass: every row was cached (8 MiB holds them all)
  CHECK_EQ(st[6], 16u);
  CHECK_EQ(st[8], 1u);
  LookupWork empty{s, nullptr, nullptr, nullptr, 0};
  row_store_lookup(&empty);
  row_store_lookup(nullptr);
  row_store_close(s);
  row_store_close(nullptr);
}

}  // namespace

int main() {
  int rc = spark_test::RunAll("mia_row_store_test");
  std::string cmd = "rm -rf " + Dir();
  if (std::system(cmd.c_str()) != 0) std::printf("could not remove %s\n", Dir().c_str());
  return rc;
}
