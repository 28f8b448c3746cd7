// What the tests of librow_store.so's ABI share (mia_abi_test.cc, mia_stats_test.cc): the
// shard they read, its stats as a struct, the budget of a cache of a given shape, and the
// children that must abort with one line, or end well.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "test/child.h"
#include "test/direct_probe.h"
#include "test/engine_abi.h"
#include "test/full_pipe.h"

using namespace engine_abi;
using spark_test::ChildResult;
using spark_test::Env;
using spark_test::FinishChild;
using spark_test::RunChild;
using spark_test::StartChild;
using spark_test::StartedChild;

namespace mia_abi {

// 10,000 rows; a store owns [kLo, kHi) unless a test says otherwise.
constexpr int64_t kLo = 1000, kHi = 9000;

inline const Table& Shard() {
  static const Table t = WriteTable("mia-shard.bin", 10000);
  return t;
}

struct Stats {
  uint64_t hits, misses, reads, cache_bytes, cache_slots, pinned, ways, threads, packed;
};

inline Stats StatsOf(void* store) {
  uint64_t out[9];
  std::fill(out, out + 9, ~uint64_t{0});
  row_store_stats(store, out);
  return {out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7], out[8]};
}

inline void Print(const char* what, const Stats& s) {
  std::printf(
      "  %s: hits=%llu misses=%llu reads=%llu cache_bytes=%llu slots=%llu pinned=%llu ways=%llu threads=%llu "
      "packed=%llu\n",
      what, (unsigned long long)s.hits, (unsigned long long)s.misses, (unsigned long long)s.reads,
      (unsigned long long)s.cache_bytes, (unsigned long long)s.cache_slots, (unsigned long long)s.pinned,
      (unsigned long long)s.ways, (unsigned long long)s.threads, (unsigned long long)s.packed);
}

inline void* Open(uint64_t budget, const Table& t = Shard()) {
  void* s = row_store_open(t.path.c_str(), t.rows, t.woff, t.soff, budget);
  CHECK(s != nullptr);
  return s;
}

// The budget that buys exactly `sets` sets of `ways` ways: 272 bytes a slot and 2 of frequency
// sketch, 1 a set, and 64 bytes of sketch slack.
inline uint64_t BudgetFor(uint64_t sets, uint64_t ways) { return sets * (274 * ways + 1) + 64; }
// What such a cache takes: its slots, one byte a set, the sketch in whole 64-byte blocks.
inline uint64_t CacheBytes(uint64_t sets, uint64_t ways) {
  return sets * ways * 272 + sets + (sets * ways + 31) / 32 * 64;
}

inline bool DirectHere() {
  static const bool direct = spark_test::DirectAllowedIn(row_fixtures::TempDir());
  return direct;
}

// Runs `body` in a child expected to abort with one "librow_store: " line holding `says`.
inline void ExpectAbort(const char* what, const std::function<void()>& body, const std::string& says,
                        const Env& env = {}) {
  const ChildResult r = RunChild(
      [&] {
        body();
        std::printf("  %s: returned\n", what);
      },
      env);
  const auto lines = spark_test::LinesStarting(r.err, "librow_store: ");
  const bool ok = r.signal == SIGABRT && lines.size() == 1 && lines[0].find(says) != std::string::npos;
  if (!ok) std::printf("  %s: signal %d exit %d, stderr: %s\n", what, r.signal, r.exit_code, r.err.c_str());
  CHECK(ok);
}

inline void ExpectOk(const char* what, const ChildResult& r) {
  if (!r.ok())
    std::printf("  %s: child %s (exit %d, signal %d): %s\n", what, r.timed_out ? "hung" : "failed", r.exit_code,
                r.signal, r.err.c_str());
  CHECK(r.ok());
}

inline void ExpectOk(const char* what, const std::function<void()>& body, const Env& env = {}) {
  ExpectOk(what, RunChild(body, env));
}

}  // namespace mia_abi

using namespace mia_abi;
