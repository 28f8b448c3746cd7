#include "engine-libs/common/call_log.h"

#include <time.h>

#include <cstdio>
#include <cstring>

#include "engine-libs/common/stderr_line.h"
#include "engine-libs/common/worker_team.h"

namespace spark::engines {

namespace {

// Quarter-octave bucket of a duration: 4 * floor(log2(ns)) + the next two bits.
size_t BucketOf(uint64_t ns) {
  if (ns < 4) return static_cast<size_t>(ns);
  const unsigned top = 63 - static_cast<unsigned>(__builtin_clzll(ns));
  return top * 4 + ((ns >> (top - 2)) & 3);
}

// The largest duration in bucket b.
uint64_t BucketTop(size_t b) {
  if (b < 4) return b;
  const unsigned top = static_cast<unsigned>(b / 4);
  const uint64_t base = uint64_t{1} << top;
  return base + (base >> 2) * (b % 4 + 1) - 1;
}

}  // namespace

uint64_t CallLog::NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void CallLog::Configure(const char* label, int64_t interval_seconds, bool mia_keys) {
  label_ = label;
  mia_keys_ = mia_keys;
  interval_ns_ = interval_seconds <= 0 || interval_seconds > 1000000000
                     ? 0
                     : static_cast<uint64_t>(interval_seconds) * 1000000000ull;
  last_ns_ = NowNs();
  next_ns_ = last_ns_ + interval_ns_;
}

void CallLog::Record(uint64_t ns) {
  if (interval_ns_ == 0) return;
  ++buckets_[BucketOf(ns)];
  ++counted_;
}

uint64_t CallLog::Percentile(uint64_t rank) const {
  uint64_t seen = 0;
  for (size_t b = 0; b < kBuckets; ++b) {
    seen += buckets_[b];
    if (seen > rank) return BucketTop(b);
  }
  return 0;
}

void CallLog::Post(WorkerTeam& team, const CallTotals& t, uint64_t now_ns) {
  const uint64_t lookups = t.hits + t.misses;
  const uint64_t hit_tenths = lookups == 0 ? 0 : t.hits * 1000 / lookups;
  const uint64_t elapsed_ms = (now_ns - last_ns_) / 1000000;
  const uint64_t reads_per_s = elapsed_ms == 0 ? 0 : (t.reads - last_reads_) * 1000 / elapsed_ms;
  const uint64_t p50 = counted_ == 0 ? 0 : Percentile(counted_ / 2) / 1000;
  const uint64_t p99 = counted_ == 0 ? 0 : Percentile(counted_ * 99 / 100) / 1000;
  const uint64_t dropped = DroppedLines();
  char line[512];
  int n;
  // Integers only: printf's integer conversions neither allocate nor take locale locks.
  if (mia_keys_) {
    n = std::snprintf(line, sizeof line,
                      "%s: lookups=%llu hit_rate=%llu.%llu%% reads=%llu packed=%d calls=%llu reads_per_s=%llu "
                      "p50_us=%llu p99_us=%llu cache_bytes=%llu pinned_scale_bytes=%llu lines_dropped=%llu\n",
                      label_, (unsigned long long)lookups, (unsigned long long)(hit_tenths / 10),
                      (unsigned long long)(hit_tenths % 10), (unsigned long long)t.reads, t.packed ? 1 : 0,
                      (unsigned long long)t.calls, (unsigned long long)reads_per_s, (unsigned long long)p50,
                      (unsigned long long)p99, (unsigned long long)t.cache_bytes, (unsigned long long)t.pinned_bytes,
                      (unsigned long long)dropped);
  } else {
    n = std::snprintf(line, sizeof line,
                      "%s: calls=%llu rows=%llu hit_rate=%llu.%llu%% reads=%llu reads_per_s=%llu p50_us=%llu "
                      "p99_us=%llu cache_bytes=%llu pinned_scale_bytes=%llu lines_dropped=%llu\n",
                      label_, (unsigned long long)t.calls, (unsigned long long)t.rows,
                      (unsigned long long)(hit_tenths / 10), (unsigned long long)(hit_tenths % 10),
                      (unsigned long long)t.reads, (unsigned long long)reads_per_s, (unsigned long long)p50,
                      (unsigned long long)p99, (unsigned long long)t.cache_bytes, (unsigned long long)t.pinned_bytes,
                      (unsigned long long)dropped);
  }
  if (n > 0) team.PostLine(line, std::min<size_t>(static_cast<size_t>(n), sizeof line - 1));
  std::memset(buckets_, 0, sizeof buckets_);
  counted_ = 0;
  last_reads_ = t.reads;
  last_ns_ = now_ns;
  next_ns_ = now_ns + interval_ns_;
}

}  // namespace spark::engines
