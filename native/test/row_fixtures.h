// Files and stores for the row store tests: a snapshot-like file and packed files whose row
// bytes are a known function of (layer, row, column), so every gathered byte can be checked.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/row_store/row_store.h"
#include "test/scratch.h"
#include "test/testing.h"

namespace row_fixtures {

using spark::PackedTable;
using spark::RowStore;
using spark::SnapshotTable;
using spark::TableSpec;

// Deterministic byte of (layer, row, column) of a table row (weight columns then scales).
inline uint8_t RowByte(uint32_t layer, uint64_t row, uint64_t col) {
  uint64_t x = (row * 0x9E3779B97F4A7C15ull) ^ (col * 0xBF58476D1CE4E5B9ull) ^ layer;
  x ^= x >> 29;
  return static_cast<uint8_t>(x * 0x94D049BB133111EBull >> 56);
}

inline std::vector<uint8_t> Row(uint32_t layer, uint64_t row, uint64_t dim) {
  std::vector<uint8_t> r(dim + dim / 32);
  for (uint64_t c = 0; c < r.size(); ++c) r[c] = RowByte(layer, row, c);
  return r;
}

// A scratch directory on a real filesystem (O_DIRECT needs one), removed at exit (scratch.h).
inline std::string TempDir() {
  static std::string dir = spark_test::ScratchDir("/tmp", "row_store_test");
  return dir;
}

inline void WriteAt(int fd, const void* data, size_t len, uint64_t off) {
  CHECK_EQ(pwrite(fd, data, len, static_cast<off_t>(off)), static_cast<ssize_t>(len));
}

// Writes `bytes` as the file `name` in TempDir(); returns its path.
inline std::string WriteTempFile(const std::string& name, const std::vector<uint8_t>& bytes) {
  std::string path = TempDir() + "/" + name;
  int fd = open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  CHECK(fd >= 0);
  WriteAt(fd, bytes.data(), bytes.size(), 0);
  close(fd);
  return path;
}

inline constexpr uint64_t kDim = 64;  // 2 scale bytes per row; row = 66 bytes
inline constexpr uint64_t kRowBytes = kDim + kDim / 32;
inline constexpr uint64_t kHeader = 664;  // not page aligned, like the real shards

// A safetensors-like file: `header` bytes, then weight [rows, dim], then scale [rows, dim/32].
inline SnapshotTable WriteSnapshot(const std::string& name, uint32_t layer, uint64_t rows) {
  std::vector<uint8_t> bytes(kHeader, ' ');
  bytes.resize(kHeader + rows * kRowBytes);
  uint8_t* w = &bytes[kHeader];
  uint8_t* s = w + rows * kDim;
  for (uint64_t r = 0; r < rows; ++r) {
    auto row = Row(layer, r, kDim);
    std::memcpy(w + r * kDim, row.data(), kDim);
    std::memcpy(s + r * (kDim / 32), row.data() + kDim, kDim / 32);
  }
  std::string path = WriteTempFile(name, bytes);
  SnapshotTable t;
  t.layer = layer;
  t.rows = rows;
  t.dim = kDim;
  t.weight_path = t.scale_path = path;
  t.weight_offset = kHeader;
  t.scale_offset = kHeader + rows * kDim;
  return t;
}

// A packed file: 4096 header bytes, then rows [start, end) densely or 4096-byte pages.
inline PackedTable WritePacked(const std::string& name, uint32_t layer, uint64_t start, uint64_t end, bool page) {
  uint64_t per_page = 4096 / kRowBytes;
  std::vector<uint8_t> data;
  data.resize(4096, ' ');
  for (uint64_t id = start; id < end; ++id) {
    uint64_t i = id - start;
    uint64_t off = page ? 4096 + i / per_page * 4096 + i % per_page * kRowBytes : 4096 + i * kRowBytes;
    if (data.size() < off + kRowBytes) data.resize(page ? (off / 4096 + 1) * 4096 : off + kRowBytes, 0);
    auto row = Row(layer, id, kDim);
    std::memcpy(&data[off], row.data(), kRowBytes);
  }
  std::string path = WriteTempFile(name, data);
  PackedTable t;
  t.layer = layer;
  t.path = path;
  t.ids = {start, end};
  t.data_offset = 4096;
  t.stride = kRowBytes;
  t.row_bytes = kRowBytes;
  t.layout = page ? spark::PackedLayout::kPage : spark::PackedLayout::kDense;
  return t;
}

// A packed file of 4096-byte pages that the store is asked to read with O_DIRECT.
inline PackedTable WriteDirectPages(const std::string& name, uint32_t layer, uint64_t start, uint64_t end) {
  PackedTable t = WritePacked(name, layer, start, end, true);
  t.direct = true;
  return t;
}

inline std::shared_ptr<RowStore> OpenStore(std::vector<TableSpec> tables, spark::StoreOptions opts = {}) {
  std::shared_ptr<RowStore> store;
  spark::Status st = RowStore::Open(tables, opts, &store);
  if (!st.ok()) std::printf("  open failed: %s\n", st.ToString().c_str());
  CHECK(st.ok());
  return store;
}

inline bool RowsMatch(const std::vector<uint8_t>& out, uint32_t layer, const std::vector<uint64_t>& ids) {
  for (size_t i = 0; i < ids.size(); ++i) {
    auto want = Row(layer, ids[i], kDim);
    if (std::memcmp(&out[i * kRowBytes], want.data(), kRowBytes) != 0) {
      std::printf("  row %zu (id %llu) differs\n", i, static_cast<unsigned long long>(ids[i]));
      return false;
    }
  }
  return true;
}

inline spark::Status GatherInto(RowStore& store, spark::ThreadPool& pool, uint32_t layer,
                                const std::vector<uint64_t>& ids, std::vector<uint8_t>* out) {
  out->assign(ids.size() * kRowBytes, 0xEE);
  return store.Gather(pool, layer, ids.data(), ids.size(), out->data(), out->size());
}

// Gathers `ids` of `layer` and checks every byte; prints the error when the gather failed.
inline bool GathersRightRows(RowStore& store, spark::ThreadPool& pool, uint32_t layer,
                             const std::vector<uint64_t>& ids) {
  std::vector<uint8_t> out;
  spark::Status st = GatherInto(store, pool, layer, ids, &out);
  if (!st.ok()) std::printf("  %s\n", st.ToString().c_str());
  return st.ok() && RowsMatch(out, layer, ids);
}

// Starts a batch of `ids` of `layer` on another thread, closes the store `after` into it and
// returns the batch's status once it has ended; `out` holds whatever the batch wrote.
inline spark::Status GatherClosedAfter(RowStore& store, spark::ThreadPool& pool, uint32_t layer,
                                       const std::vector<uint64_t>& ids, std::chrono::milliseconds after,
                                       std::vector<uint8_t>* out) {
  out->assign(ids.size() * kRowBytes, 0xEE);
  spark::Status st;
  std::thread worker([&] { st = store.Gather(pool, layer, ids.data(), ids.size(), out->data(), out->size()); });
  std::this_thread::sleep_for(after);
  store.Close();
  worker.join();
  return st;
}

}  // namespace row_fixtures
