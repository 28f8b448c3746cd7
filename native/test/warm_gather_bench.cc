// Warm-path micro-benchmark of RowStore::Gather against an in-process memcpy loop over the
// same rows. Not a test (run.sh does not build it): build and run by hand after run.sh has
// built the core library:
//   bash native/test/run.sh
//   g++ -std=c++20 -O2 -pthread -D_FILE_OFFSET_BITS=64 -Inative native/test/warm_gather_bench.cc \
//       native/test/build/plain/libspark_core.a -o /tmp/warm_gather_bench
//   /tmp/warm_gather_bench [rows=400000] [threads=2,16] [batches=24,144,49152]
// Writes a snapshot-like file (dim 256: 256 weight + 8 scale bytes a row, the Engram shape)
// under /tmp, reads it once so it is in the page cache, then times batches of uniform random
// ids, on a store that copies rows it knows cached out of a mapping (the default) and on one
// that reads every row by a read call, after one sweep over every row (a store that has been
// serving). The baseline copies the same rows (weight, then scale) out of memory on one thread.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/row_store/row_store.h"

namespace {

constexpr uint64_t kDim = 256, kScale = kDim / 32, kRow = kDim + kScale, kHeader = 664;

std::vector<size_t> List(const char* s) {
  std::vector<size_t> v;
  for (const char* p = s; *p;) {
    v.push_back(std::strtoull(p, const_cast<char**>(&p), 10));
    if (*p == ',') ++p;
  }
  return v;
}

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t rows = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 400000;
  const auto threads = List(argc > 2 ? argv[2] : "2,16");
  const auto batches = List(argc > 3 ? argv[3] : "24,144,49152");
  char path[] = "/tmp/warm_gather_bench_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return 3;
  std::vector<uint8_t> weights(rows * kDim), scales(rows * kScale);
  std::mt19937_64 rng(42);
  for (auto& b : weights) b = static_cast<uint8_t>(rng());
  for (auto& b : scales) b = static_cast<uint8_t>(rng());
  std::vector<uint8_t> header(kHeader, ' ');
  bool ok = pwrite(fd, header.data(), kHeader, 0) == static_cast<ssize_t>(kHeader) &&
            pwrite(fd, weights.data(), weights.size(), kHeader) == static_cast<ssize_t>(weights.size()) &&
            pwrite(fd, scales.data(), scales.size(), static_cast<off_t>(kHeader + weights.size())) ==
                static_cast<ssize_t>(scales.size());
  close(fd);
  if (!ok) return 3;
  spark::SnapshotTable t;
  t.layer = 1;
  t.rows = rows;
  t.dim = kDim;
  t.weight_path = t.scale_path = path;
  t.weight_offset = kHeader;
  t.scale_offset = kHeader + rows * kDim;
  // Two stores on the same file: rows copied out of a mapping once a read has brought their
  // pages in (the default), and every row by a read call (mapCached off).
  std::shared_ptr<spark::RowStore> stores[2];
  const char* names[2] = {"mapped", "calls"};
  for (int v = 0; v < 2; ++v) {
    spark::StoreOptions o;
    o.map_cached = v == 0;
    spark::Status st = spark::RowStore::Open({t}, o, &stores[v]);
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", st.ToString().c_str());
      return 3;
    }
  }
  // A store that has been serving for a while has read every row at least once: one sweep.
  {
    spark::ThreadPool pool(2);
    std::vector<uint64_t> ids(4096);
    std::vector<uint8_t> out(ids.size() * kRow);
    for (uint64_t first = 0; first < rows; first += ids.size()) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(ids.size(), rows - first));
      for (size_t k = 0; k < n; ++k) ids[k] = first + k;
      for (auto& store : stores) {
        if (!store->Gather(pool, 1, ids.data(), n, out.data(), out.size()).ok()) return 3;
      }
    }
  }
  std::printf("rows %llu, row %llu bytes, warm (file just written)\n", static_cast<unsigned long long>(rows),
              static_cast<unsigned long long>(kRow));
  std::printf("%8s %8s %7s %12s %12s %12s %12s %8s %8s\n", "store", "threads", "batch", "gather p50", "gather p99",
              "memcpy p50", "memcpy p99", "ratio", "mapped");
  unsigned sink = 0;
  for (size_t n : batches) {
    const int iters = n >= 10000 ? 40 : 3000;
    std::vector<uint64_t> ids(n);
    std::vector<uint8_t> out(n * kRow);
    std::uniform_int_distribution<uint64_t> pick(0, rows - 1);
    // The baseline: the same rows copied out of memory, one thread.
    std::vector<double> base;
    for (int i = 0; i < iters; ++i) {
      for (auto& id : ids) id = pick(rng);
      auto t0 = std::chrono::steady_clock::now();
      for (size_t k = 0; k < n; ++k) {
        std::memcpy(&out[k * kRow], &weights[ids[k] * kDim], kDim);
        std::memcpy(&out[k * kRow + kDim], &scales[ids[k] * kScale], kScale);
      }
      base.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      sink += out[rng() % out.size()];  // keeps the copies observable
    }
    for (size_t th : threads)
      for (int v = 0; v < 2; ++v) {
        spark::RowStore* store = stores[v].get();
        spark::ThreadPool pool(th);
        const spark::StoreStats before = store->Stats();
        std::vector<double> us;
        for (int i = -iters / 10; i < iters; ++i) {  // the first tenth warms up, untimed
          for (auto& id : ids) id = pick(rng);
          auto t0 = std::chrono::steady_clock::now();
          spark::Status st = store->Gather(pool, 1, ids.data(), n, out.data(), out.size());
          double d = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
          if (!st.ok()) {
            std::fprintf(stderr, "%s\n", st.ToString().c_str());
            return 3;
          }
          if (i >= 0) us.push_back(d);
        }
        // Spot-check one row's bytes: a fast wrong answer is no answer.
        size_t k = rng() % n;
        if (std::memcmp(&out[k * kRow], &weights[ids[k] * kDim], kDim) != 0 ||
            std::memcmp(&out[k * kRow + kDim], &scales[ids[k] * kScale], kScale) != 0) {
          std::fprintf(stderr, "row %zu differs\n", k);
          return 1;
        }
        const spark::StoreStats after = store->Stats();
        const double mapped = 100.0 * static_cast<double>(after.mapped_rows - before.mapped_rows) /
                              static_cast<double>(after.rows - before.rows);
        double p50 = Quantile(us, 0.5), b50 = Quantile(base, 0.5);
        std::printf("%8s %8zu %7zu %10.1fus %10.1fus %10.1fus %10.1fus %7.1fx %7.0f%%\n", names[v], th, n, p50,
                    Quantile(us, 0.99), b50, Quantile(base, 0.99), p50 / b50, mapped);
      }
  }
  unlink(path);
  return sink == 0xFFFFFFFFu ? 1 : 0;
}
