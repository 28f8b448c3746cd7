#include "core/base/crc32.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "test/testing.h"

namespace {

// Bit-at-a-time CRC-32, straight from the definition: the reference everything is held to.
uint32_t BitwiseCrc32(uint32_t crc, const uint8_t* p, size_t n) {
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc & 1) ? (crc >> 1) ^ 0xEDB88320u : crc >> 1;
  }
  return ~crc;
}

std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// Bytes Python can regenerate in one line, for the zlib vectors below.
std::vector<uint8_t> ZlibPattern() {
  std::vector<uint8_t> v(1 << 16);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>(i * i + i / 7);
  return v;
}

}  // namespace

// The runner sets SPARK_CRC32_EXPECT where it knows the path (the emulated aarch64 CPU has
// the CRC extension; SPARK_CRC32_PORTABLE=1 forces slice-by-8), so a fast path that silently
// stops being detected fails here instead of passing on the fallback.
TEST(TakesTheExpectedPath) {
  const char* path = spark::Crc32Implementation();
  const char* expect = std::getenv("SPARK_CRC32_EXPECT");
  std::printf("  crc32 path: %s%s\n", path, expect ? "" : " (no expectation set)");
  if (expect != nullptr) CHECK_EQ(std::strcmp(path, expect), 0);
}

TEST(KnownVectors) {
  const char* check = "123456789";
  CHECK_EQ(spark::Crc32(0, check, 9), 0xCBF43926u);
  CHECK_EQ(spark::Crc32Portable(0, check, 9), 0xCBF43926u);
  CHECK_EQ(spark::Crc32(0, "", 0), 0u);
  // zlib.crc32(b"a" * 1000) and zlib.crc32(bytes(4096)) from Python's stdlib.
  std::string a(1000, 'a');
  CHECK_EQ(spark::Crc32(0, a.data(), a.size()), 0x9A38DA03u);
  std::vector<uint8_t> zeros(4096, 0);
  CHECK_EQ(spark::Crc32(0, zeros.data(), zeros.size()), 0xC71C0011u);
}

TEST(AgreesWithZlibOnOddOffsetsAndLengths) {
  // d = bytes((i*i + i//7) & 255 for i in range(1 << 16)); zlib.crc32(d[off:off+n]) in Python.
  auto d = ZlibPattern();
  struct Vector {
    size_t off, n;
    uint32_t crc;
  };
  const Vector vectors[] = {{0, 65536, 0x9A24BFDEu}, {1, 65535, 0xD88544F2u}, {7, 1000, 0xFCBD950Bu},
                            {13, 15, 0x4139608Fu},   {3, 64, 0x0D9650EFu},    {5, 33, 0x6D7397FBu}};
  for (const auto& v : vectors) {
    CHECK_EQ(spark::Crc32(0, d.data() + v.off, v.n), v.crc);
    CHECK_EQ(spark::Crc32Portable(0, d.data() + v.off, v.n), v.crc);
  }
  // zlib.crc32(d, 0x12345678): continuing from a running value.
  CHECK_EQ(spark::Crc32(0x12345678u, d.data(), d.size()), 0x82DE7548u);
}

TEST(FastPathMatchesBitwiseForEveryLengthAndAlignment) {
  auto data = RandomBytes(4096 + 64, 7);
  int mismatches = 0;
  for (size_t offset = 0; offset < 16; ++offset) {
    for (size_t n = 0; n <= 1100; ++n) {
      uint32_t want = BitwiseCrc32(0x12345678u, data.data() + offset, n);
      if (spark::Crc32(0x12345678u, data.data() + offset, n) != want) ++mismatches;
      if (spark::Crc32Portable(0x12345678u, data.data() + offset, n) != want) ++mismatches;
    }
  }
  CHECK_EQ(mismatches, 0);
}

TEST(ChainingEqualsOneCall) {
  auto data = RandomBytes(1 << 20, 11);
  uint32_t whole = spark::Crc32(0, data.data(), data.size());
  CHECK_EQ(whole, BitwiseCrc32(0, data.data(), data.size()));
  uint32_t parts = 0;
  size_t cuts[] = {0, 1, 63, 64, 65, 4095, 70000, 500001, data.size()};
  for (size_t i = 0; i + 1 < sizeof(cuts) / sizeof(cuts[0]); ++i) {
    parts = spark::Crc32(parts, data.data() + cuts[i], cuts[i + 1] - cuts[i]);
  }
  CHECK_EQ(parts, whole);
}

TEST(EveryFlippedBitChangesTheChecksum) {
  auto data = RandomBytes(4096, 3);
  uint32_t base = spark::Crc32(0, data.data(), data.size());
  int unchanged = 0;
  for (size_t i = 0; i < data.size(); i += 7) {
    for (int bit = 0; bit < 8; ++bit) {
      data[i] ^= static_cast<uint8_t>(1 << bit);
      if (spark::Crc32(0, data.data(), data.size()) == base) ++unchanged;
      data[i] ^= static_cast<uint8_t>(1 << bit);
    }
  }
  CHECK_EQ(unchanged, 0);
}

TEST(ReportsSpeed) {
  // Not a benchmark: one line so a slow fallback on some machine is visible in the test log.
  auto data = RandomBytes(64 << 20, 5);
  auto t0 = std::chrono::steady_clock::now();
  uint32_t c = spark::Crc32(0, data.data(), data.size());
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("  crc32 %s: %.1f GB/s (crc %08x)\n", spark::Crc32Implementation(), data.size() / s / 1e9, c);
  CHECK_EQ(c, spark::Crc32Portable(0, data.data(), data.size()));
}

int main() { return spark_test::RunAll("crc32_test"); }
