#include "engine-libs/overlay/overlay_store.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <new>
#include <string>

#include "core/base/checked.h"
#include "engine-libs/common/env.h"
#include "engine-libs/common/stderr_line.h"

namespace spark::engines {

namespace {

constexpr size_t kQueue = Gatherer::kChunk;  // prefetch ids waiting at most
constexpr uint32_t kWays = 8;
constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr int kMaxThreads = 4096;

// Host memory one store may hold (pinned scales + cached rows: what resident() counts). The
// overlay's governor releases every store once the sum of resident() over its two stores (one
// per Engram layer) passes SPARK_ENGRAM_CACHE_GB (default 4; <= 0: no limit): a store keeps
// under 45% of it, so the two never reach it and it never releases them.
// SPARK_ENGRAM_LIB_CACHE_GB sets the store's budget directly; above half the governor's, the
// governor will release, and a line at open says so (once a process).
uint64_t StoreBudget() {
  const double governor = EnvNumber("SPARK_ENGRAM_CACHE_GB", 4);
  double gib = EnvNumber("SPARK_ENGRAM_LIB_CACHE_GB", -1);
  if (gib < 0) {
    gib = (governor > 0 ? governor : 4) * 0.45;
  } else if (governor > 0 && gib * 2 > governor) {
    static std::atomic<bool> said{false};
    if (!said.exchange(true)) {
      const std::string line =
          std::string("libengram_rows: SPARK_ENGRAM_LIB_CACHE_GB=") + std::getenv("SPARK_ENGRAM_LIB_CACHE_GB") +
          " is more than half of SPARK_ENGRAM_CACHE_GB=" +
          (std::getenv("SPARK_ENGRAM_CACHE_GB") != nullptr ? std::getenv("SPARK_ENGRAM_CACHE_GB") : "4 (its default)") +
          ": the overlay's governor will release both layers' stores whenever their sum passes it, and they refill "
          "from the drive; set SPARK_ENGRAM_LIB_CACHE_GB to at most 0.45 of SPARK_ENGRAM_CACHE_GB, or unset it\n";
      WriteStderrLine(line.data(), line.size());
    }
  }
  if (gib > 1 << 20) gib = 1 << 20;
  return static_cast<uint64_t>(gib * static_cast<double>(kGiB));
}

// errno for a file that cannot hold the rows, or 0.
int CheckFile(const char* path, uint64_t woff, uint64_t soff, uint64_t hi) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return errno;
  struct stat st;
  const int r = fstat(fd, &st);
  const int err = errno;
  close(fd);
  if (r != 0) return err;
  if (S_ISDIR(st.st_mode)) return EISDIR;
  if (!S_ISREG(st.st_mode)) return EINVAL;
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  auto w_end = CheckedMul(hi, kWeightBytes);
  if (w_end) w_end = CheckedAdd(*w_end, woff);
  auto s_end = CheckedMul(hi, kScaleBytes);
  if (s_end) s_end = CheckedAdd(*s_end, soff);
  if (!w_end || !s_end || *w_end > size || *s_end > size) return EINVAL;
  return 0;
}

}  // namespace

OverlayStore* OverlayStore::Open(const char* path, uint64_t woff, uint64_t soff, uint64_t lo, uint64_t hi,
                                 int threads) {
  if (path == nullptr || lo > hi || threads < 0 || threads > kMaxThreads || hi >= (uint64_t{1} << 62)) {
    errno = EINVAL;
    return nullptr;
  }
  if (int err = CheckFile(path, woff, soff, hi); err != 0) {
    errno = err;
    return nullptr;
  }
  std::unique_ptr<OverlayStore> s(new (std::nothrow) OverlayStore());
  if (!s) {
    errno = ENOMEM;
    return nullptr;
  }
  s->lo_ = lo;
  s->hi_ = hi;
  const bool direct = EnvFlag("SPARK_ENGRAM_LIB_DIRECT", true);
  if (!s->file_.Open(path, direct, woff + lo * kWeightBytes, true).ok()) {
    errno = EIO;
    return nullptr;
  }
  s->source_.file = &s->file_;
  s->source_.woff = woff;
  s->source_.soff = soff;

  s->budget_ = StoreBudget();
  const uint64_t scale_bytes = (hi - lo) * kScaleBytes;
  uint64_t cache_budget = s->budget_;
  // The scales pinned when they take at most half the budget: one read per miss instead of two.
  if (scale_bytes > 0 && scale_bytes <= s->budget_ / 2) {
    s->scales_ = PinScales(s->source_, lo, hi);
    if (!s->scales_) return nullptr;
    s->source_.scales.store(s->scales_.get(), std::memory_order_release);
    s->pinned_bytes_.store(scale_bytes);
    cache_budget -= scale_bytes;
  }
  if (!s->cache_.Init(s->CacheSets(cache_budget), kWays)) return nullptr;
  s->queue_.reset(new (std::nothrow) uint64_t[kQueue]);
  if (!s->queue_ || s->inline_staging_.Reserve(kStagingBytes) == nullptr ||
      !s->gatherer_.Init(&s->source_, &s->cache_)) {
    errno = ENOMEM;
    return nullptr;
  }
  s->log_.Configure("libengram_rows", EnvInt("SPARK_ENGRAM_STATS_SECONDS", 0), false);
  if (!s->team_.Start(static_cast<unsigned>(threads), &PrefetchWork, s.get())) return nullptr;
  return s.release();
}

OverlayStore::~OverlayStore() { fill_paused_.store(true); }

uint64_t OverlayStore::CacheSets(uint64_t bytes) const {
  // No more slots than owned rows: consecutive ids fill the sets evenly, so a table that fits
  // is held whole.
  const uint64_t owned_sets = (hi_ - lo_ + kWays - 1) / kWays;
  return std::min(RowCache::SetsFor(bytes, kWays), owned_sets);
}

void OverlayStore::Gather(const int64_t* ids, uint64_t count, uint8_t* w, uint8_t* s) {
  std::lock_guard<std::mutex> lock(gather_mu_);
  const uint64_t start = CallLog::NowNs();
  gatherer_.Gather(team_, ids, count, w, s, lo_, hi_);
  const uint64_t now = CallLog::NowNs();
  log_.Record(now - start);
  if (log_.Due(now)) {
    CallTotals t = CountedTotals(gatherer_.counters());
    t.cache_bytes = cache_.rows() * kRowBytes;
    t.pinned_bytes = pinned_bytes_.load();
    log_.Post(team_, t, now);
  }
}

uint64_t OverlayStore::Prefetch(const int64_t* ids, uint64_t n) {
  if (ids == nullptr) return 0;
  uint64_t owned = 0;
  size_t queued = 0;
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    for (uint64_t i = 0; i < n; ++i) {
      if (!Owned(ids[i])) continue;
      ++owned;
      if (!cache_.enabled() || queue_size_ == kQueue) continue;  // a full queue drops the rest
      queue_[(queue_head_ + queue_size_++) % kQueue] = static_cast<uint64_t>(ids[i]);
      ++queued;
    }
  }
  if (queued == 0) return owned;
  if (team_.workers() > 0) {
    team_.Nudge(static_cast<unsigned>(std::min<size_t>(queued, team_.workers())));
  } else {
    std::lock_guard<std::mutex> lock(inline_mu_);
    Fill(inline_staging_.Reserve(kStagingBytes));
  }
  return owned;
}

void OverlayStore::PrefetchWork(void* self, unsigned thread) {
  auto* s = static_cast<OverlayStore*>(self);
  s->Fill(s->team_.staging(thread));
}

void OverlayStore::Fill(uint8_t* staging) {
  uint8_t w[kWeightBytes], sc[kScaleBytes];
  while (!team_.job_open()) {
    fill_busy_.fetch_add(1);
    if (fill_paused_.load()) {
      fill_busy_.fetch_sub(1);
      return;
    }
    uint64_t id = 0;
    bool have = false;
    {
      std::lock_guard<std::mutex> lock(queue_mu_);
      if (queue_size_ > 0) {
        id = queue_[queue_head_];
        queue_head_ = (queue_head_ + 1) % kQueue;
        --queue_size_;
        have = true;
      }
    }
    if (have && !cache_.Contains(id)) {
      const unsigned reads = source_.Read(id, w, sc, staging, source_.scales.load(std::memory_order_acquire));
      cache_.Insert(id, w, sc, true);  // read ahead for a gather to come: kept regardless
      gatherer_.counters().reads.fetch_add(reads, std::memory_order_relaxed);
    }
    fill_busy_.fetch_sub(1);
    if (!have) return;
  }
}

void OverlayStore::Stats(uint64_t out[4]) {
  GatherCounters& c = gatherer_.counters();
  out[0] = c.calls.load();
  out[1] = c.owned.load();
  out[2] = c.zeroed.load();
  out[3] = c.ns.load();
}

uint64_t OverlayStore::Resident() const {
  gatherer_.Settle();  // the last gather's rows are in the cache
  return cache_.rows() * kRowBytes + pinned_bytes_.load();
}

void OverlayStore::Release() {
  std::lock_guard<std::mutex> lock(gather_mu_);
  gatherer_.Settle();  // no insert of the last gather's rows runs while the cache is emptied
  fill_paused_.store(true);
  while (fill_busy_.load() != 0) sched_yield();  // a prefetch read in progress: ~0.2 ms
  // Everything resident() counts goes: the cached rows (their pages back to the kernel) and
  // the pinned scales. What the store may hold afterwards is its whole budget, as before: the
  // cache, laid out anew for the scales' share too, refills as gathers read rows (misses then
  // read their scale rows from the file, merged where they lie close).
  {
    // Under the queue's lock: prefetch asks whether the cache is on.
    std::lock_guard<std::mutex> qlock(queue_mu_);
    queue_size_ = 0;
    if (scales_ == nullptr || !cache_.Relayout(CacheSets(budget_), kWays)) cache_.Clear();
  }
  source_.scales.store(nullptr, std::memory_order_release);
  scales_.reset();
  pinned_bytes_.store(0);
  if (!file_.direct()) posix_fadvise(file_.fd(), 0, 0, POSIX_FADV_DONTNEED);
  fill_paused_.store(false);
}

}  // namespace spark::engines
