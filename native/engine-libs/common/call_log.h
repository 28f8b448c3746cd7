// The periodic stats line the engine libraries print to stderr: every `interval` seconds (set
// by SPARK_ENGRAM_STATS_SECONDS or DSV41_STATS_SECONDS; 0, less or unset: never), at the end
// of the first gather call after it is due, handed to a worker to write or written on the
// caller (WorkerTeam::PostLine), never waiting on stderr (stderr_line.h). Latency percentiles
// cover the calls since the previous line, in quarter-octave buckets; lines_dropped= counts
// the lines a full stderr cost since the library was loaded.
#pragma once

#include <cstddef>
#include <cstdint>

namespace spark::engines {

class WorkerTeam;

struct CallTotals {
  uint64_t calls = 0, rows = 0, hits = 0, misses = 0, reads = 0, cache_bytes = 0, pinned_bytes = 0;
  bool packed = false;
};

class CallLog {
 public:
  // `mia_keys`: begin the line with the Mia stack's keys (lookups=, hit_rate=, reads=, packed=).
  void Configure(const char* label, int64_t interval_seconds, bool mia_keys);
  // One gather call of `ns` nanoseconds. Callers are serialised by the store.
  void Record(uint64_t ns);
  bool Due(uint64_t now_ns) const { return interval_ns_ != 0 && now_ns >= next_ns_; }
  // Formats the line for `totals` and hands it to `team`; the next one is due an interval later.
  void Post(WorkerTeam& team, const CallTotals& totals, uint64_t now_ns);

  static uint64_t NowNs();

 private:
  static constexpr size_t kBuckets = 256;
  uint64_t Percentile(uint64_t rank) const;
  const char* label_ = "";
  bool mia_keys_ = false;
  uint64_t interval_ns_ = 0, next_ns_ = 0, last_ns_ = 0;
  uint64_t last_reads_ = 0;
  uint64_t counted_ = 0;
  uint32_t buckets_[kBuckets] = {};
};

}  // namespace spark::engines
