// What the engine library tests share: both stacks' C ABIs as the stacks declare them (the
// libraries' code is linked in), the call structs in their ABI field order, and files whose
// every byte is known: two-column tables (a checkpoint shard's or a sparse copy's layout) and
// the Mia stack's packed shards.
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
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

namespace engine_abi {

using row_fixtures::RowByte;

constexpr uint64_t kW = 256, kS = 8, kRow = kW + kS;
constexpr uint64_t kMiaMagic = 0x31344E4531565344ull;

// The overlay's gather argument and the Mia stack's lookup argument, field for field.
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

// A table in one file: row r's weight bytes RowByte(1, r, 0..256) at woff + 256 r, its scale
// bytes RowByte(1, r, 256..264) at soff + 8 r; every other byte 0x5A.
struct Table {
  std::string path;
  uint64_t rows = 0, woff = 0, soff = 0;
  uint64_t end() const { return soff + rows * kS; }
};

inline Table WriteTable(const std::string& name, uint64_t rows) {
  Table t;
  t.rows = rows;
  t.woff = 664;  // not block aligned, like a safetensors shard's data
  t.soff = t.woff + rows * kW + 40;
  std::vector<uint8_t> bytes(t.end(), 0x5A);
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint64_t c = 0; c < kW; ++c) bytes[t.woff + r * kW + c] = RowByte(1, r, c);
    for (uint64_t c = 0; c < kS; ++c) bytes[t.soff + r * kS + c] = RowByte(1, r, kW + c);
  }
  t.path = row_fixtures::WriteTempFile(name, bytes);
  return t;
}

// The Mia stack's packed shard of rows [lo, hi) of a table of n rows: the 4096-byte header
// (six little-endian uint64: magic, layer, lo, hi, n, row bytes; zeros after), then `rows`
// rows of 264 bytes (all of [lo, hi) by default). Each header field can be given wrong.
struct PackSpec {
  uint64_t magic = kMiaMagic, layer = 1, lo = 0, hi = 0, n = 0, row_bytes = kRow;
  int64_t rows = -1;
};

inline std::string WritePack(const std::string& name, const PackSpec& p) {
  const uint64_t body = p.rows < 0 ? p.hi - p.lo : static_cast<uint64_t>(p.rows);
  std::vector<uint8_t> bytes(4096 + body * kRow, 0);
  const uint64_t header[6] = {p.magic, p.layer, p.lo, p.hi, p.n, p.row_bytes};
  std::memcpy(bytes.data(), header, sizeof header);  // little-endian hosts only (x86-64, aarch64)
  for (uint64_t k = 0; k < body; ++k) {
    for (uint64_t c = 0; c < kRow; ++c) bytes[4096 + k * kRow + c] = RowByte(1, p.lo + k, c);
  }
  return row_fixtures::WriteTempFile(name, bytes);
}

// Output buffers poisoned with bytes no row or zero fill has in every column.
struct Out {
  std::vector<uint8_t> w, s;
  explicit Out(size_t n) : w(n * kW, 0xAB), s(n * kS, 0xCD) {}
};

// Whether position i holds id's row (owned) or 264 zero bytes.
inline bool RowIs(const Out& o, size_t i, int64_t id, bool owned) {
  for (uint64_t c = 0; c < kW; ++c) {
    if (o.w[i * kW + c] != (owned ? RowByte(1, static_cast<uint64_t>(id), c) : 0)) return false;
  }
  for (uint64_t c = 0; c < kS; ++c) {
    if (o.s[i * kS + c] != (owned ? RowByte(1, static_cast<uint64_t>(id), kW + c) : 0)) return false;
  }
  return true;
}

// Every position holds its id's row when lo <= id < hi, zeros otherwise.
inline bool RowsAre(const Out& o, const std::vector<int64_t>& ids, int64_t lo, int64_t hi) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!RowIs(o, i, ids[i], ids[i] >= lo && ids[i] < hi)) return false;
  }
  return true;
}

inline Out Gather(void* store, const std::vector<int64_t>& ids) {
  Out o(ids.size());
  OverlayWork work{ids.size(), store, o.w.data(), o.s.data(), ids.data()};
  engram_rows_gather(&work);
  return o;
}

inline Out Lookup(void* store, const std::vector<int64_t>& ids) {
  Out o(ids.size());
  MiaWork work{store, ids.data(), o.w.data(), o.s.data(), ids.size()};
  row_store_lookup(&work);
  return o;
}

// n pseudo-random ids in [lo, hi).
inline std::vector<int64_t> Ids(uint64_t seed, size_t n, int64_t lo, int64_t hi) {
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

inline std::vector<int64_t> Range(int64_t lo, int64_t hi) {
  std::vector<int64_t> ids;
  for (int64_t id = lo; id < hi; ++id) ids.push_back(id);
  return ids;
}

// Threads of this process now.
inline int Threads() {
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

// The thread count once threads that are exiting have gone. A thread pthread_join has returned
// for is still listed until the kernel reaps it (a moment; much longer under qemu), so a count
// is read until it equals `want`, for up to 5 s; returns the last count read.
inline int ThreadsBecome(int want) {
  int n = Threads();
  for (int k = 0; k < 500 && n != want; ++k) {
    usleep(10000);
    n = Threads();
  }
  return n;
}

// The thread count once it has held still for 100 ms (threads of earlier tests gone).
inline int SettledThreads() {
  int n = Threads();
  for (int still = 0, k = 0; still < 10 && k < 500; ++k) {
    usleep(10000);
    const int now = Threads();
    still = now == n ? still + 1 : 0;
    n = now;
  }
  return n;
}

}  // namespace engine_abi
