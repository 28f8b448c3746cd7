#include "core/base/crc32.h"

#include <array>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_acle.h>
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
#endif

namespace spark {
namespace {

// All "raw" functions below work on the register value without zlib's pre/post inversion.
constexpr uint32_t kReflectedPoly = 0xEDB88320u;

using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables MakeTables() {
  Tables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kReflectedPoly : c >> 1;
    t[0][i] = c;
  }
  // t[k][i]: the effect of byte i followed by k zero bytes, so 8 bytes fold in one step.
  for (int k = 1; k < 8; ++k) {
    for (uint32_t i = 0; i < 256; ++i) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
  }
  return t;
}

constexpr Tables kTables = MakeTables();

inline uint32_t LoadLe32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

uint32_t RawSlice8(uint32_t c, const uint8_t* p, size_t n) {
  const auto& t = kTables;
  while (n >= 8) {
    uint32_t lo = LoadLe32(p) ^ c;
    uint32_t hi = LoadLe32(p + 4);
    c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^ t[3][hi & 0xff] ^
        t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = t[0][(c ^ *p++) & 0xff] ^ (c >> 8);
  return c;
}

#if defined(__x86_64__)

// Folding constants, derived here rather than pasted: x^e mod P for the normal polynomial
// P = 0x104C11DB7, bit-reflected into the upper half of a 64-bit lane. A carry-less product
// of two bit-reflected 64-bit operands is the reflected 128-bit product shifted down by one,
// so folding a 64-bit half forward by e bits uses x^(e-1) mod P.
constexpr uint64_t Reflect64(uint64_t v) {
  uint64_t r = 0;
  for (int i = 0; i < 64; ++i) r |= ((v >> i) & 1) << (63 - i);
  return r;
}

constexpr uint64_t XPowModP(int e) {
  uint64_t v = 1;
  for (int i = 0; i < e; ++i) {
    v <<= 1;
    if (v & (uint64_t{1} << 32)) v ^= 0x104C11DB7ull;
  }
  return v;
}

constexpr uint64_t FoldConstant(int e) { return Reflect64(XPowModP(e - 1)); }

// Moving a 128-bit block X = H*x^64 + L forward by d bits: H*x^(d+64) + L*x^d (mod P).
constexpr uint64_t kFold512H = FoldConstant(512 + 64), kFold512L = FoldConstant(512);
constexpr uint64_t kFold128H = FoldConstant(128 + 64), kFold128L = FoldConstant(128);

__attribute__((target("pclmul,sse2"))) inline __m128i Fold(__m128i x, __m128i k) {
  // Low lane (first 8 bytes: the higher-degree half) times the d+64 constant, high lane times d.
  return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

// Needs n >= 64. Folds 64-byte blocks in four independent lanes, then the lanes into one,
// then remaining 16-byte blocks; the last 128 bits and the tail go through the tables.
__attribute__((target("pclmul,sse2"))) uint32_t RawPclmul(uint32_t c, const uint8_t* p, size_t n) {
  // _mm_set_epi64x(high lane, low lane): the H constant sits in the low lane, next to H.
  const __m128i k4 = _mm_set_epi64x(static_cast<long long>(kFold512L), static_cast<long long>(kFold512H));
  const __m128i k1 = _mm_set_epi64x(static_cast<long long>(kFold128L), static_cast<long long>(kFold128H));
  auto load = [](const uint8_t* q) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q)); };
  __m128i x0 = _mm_xor_si128(load(p), _mm_cvtsi32_si128(static_cast<int>(c)));
  __m128i x1 = load(p + 16), x2 = load(p + 32), x3 = load(p + 48);
  p += 64;
  n -= 64;
  while (n >= 64) {
    x0 = _mm_xor_si128(Fold(x0, k4), load(p));
    x1 = _mm_xor_si128(Fold(x1, k4), load(p + 16));
    x2 = _mm_xor_si128(Fold(x2, k4), load(p + 32));
    x3 = _mm_xor_si128(Fold(x3, k4), load(p + 48));
    p += 64;
    n -= 64;
  }
  x1 = _mm_xor_si128(Fold(x0, k1), x1);
  x2 = _mm_xor_si128(Fold(x1, k1), x2);
  x3 = _mm_xor_si128(Fold(x2, k1), x3);
  while (n >= 16) {
    x3 = _mm_xor_si128(Fold(x3, k1), load(p));
    p += 16;
    n -= 16;
  }
  alignas(16) uint8_t last[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(last), x3);
  return RawSlice8(RawSlice8(0, last, 16), p, n);
}

bool CpuHasAccel() { return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse2"); }
constexpr size_t kAccelMin = 64;
constexpr const char* kAccelName = "pclmulqdq";
uint32_t RawAccel(uint32_t c, const uint8_t* p, size_t n) { return RawPclmul(c, p, n); }

#elif defined(__aarch64__)

__attribute__((target("+crc"))) uint32_t RawArmCrc(uint32_t c, const uint8_t* p, size_t n) {
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    c = __crc32b(c, *p++);
    --n;
  }
  while (n >= 32) {
    uint64_t v[4];
    std::memcpy(v, p, 32);
    c = __crc32d(c, v[0]);
    c = __crc32d(c, v[1]);
    c = __crc32d(c, v[2]);
    c = __crc32d(c, v[3]);
    p += 32;
    n -= 32;
  }
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = __crc32d(c, v);
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = __crc32b(c, *p++);
  return c;
}

bool CpuHasAccel() { return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0; }
constexpr size_t kAccelMin = 16;
constexpr const char* kAccelName = "armv8-crc32";
uint32_t RawAccel(uint32_t c, const uint8_t* p, size_t n) { return RawArmCrc(c, p, n); }

#else

bool CpuHasAccel() { return false; }
constexpr size_t kAccelMin = ~size_t{0};
constexpr const char* kAccelName = "slice-by-8";
uint32_t RawAccel(uint32_t c, const uint8_t* p, size_t n) { return RawSlice8(c, p, n); }

#endif

// SPARK_CRC32_PORTABLE=1 (any value but empty or "0") keeps the whole process on the table
// path: the tests run the fallback that way on CPUs that have the instructions, and it is the
// way to rule a fast path out on a machine where one is suspected.
bool PortableForced() {
  const char* v = std::getenv("SPARK_CRC32_PORTABLE");
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

// Decided once per process, so every checksum in a run comes from the same path.
bool HaveAccel() {
  static const bool have = CpuHasAccel() && !PortableForced();
  return have;
}

}  // namespace

uint32_t Crc32Portable(uint32_t crc, const void* data, size_t n) {
  return ~RawSlice8(~crc, static_cast<const uint8_t*>(data), n);
}

uint32_t Crc32(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  if (n >= kAccelMin && HaveAccel()) return ~RawAccel(~crc, p, n);
  return ~RawSlice8(~crc, p, n);
}

const char* Crc32Implementation() { return HaveAccel() ? kAccelName : "slice-by-8"; }

}  // namespace spark
