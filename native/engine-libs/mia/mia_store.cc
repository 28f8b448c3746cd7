#include "engine-libs/mia/mia_store.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <string>

#include "core/base/checked.h"
#include "engine-libs/common/env.h"
#include "engine-libs/common/worker_team.h"
#include "engine-libs/mia/mia_pack.h"

namespace spark::engines {

namespace {

constexpr const char* kPrefix = "librow_store";
constexpr int64_t kMaxIoThreads = 1024;

std::once_flag team_once;
WorkerTeam* team = nullptr;  // process-wide, never destroyed (stores of other threads may use it)
uint64_t team_threads = 1;   // as stats report it: the caller counts as one

// The pool, created at the first lookup or stats call from DSV41_IO_THREADS (default 32):
// that many - 1 workers and the caller; 1 or less: no workers.
WorkerTeam& Team() {
  std::call_once(team_once, [] {
    const int64_t threads = std::min(EnvInt("DSV41_IO_THREADS", 32), kMaxIoThreads);
    team = new WorkerTeam();
    if (threads > 1 && team->Start(static_cast<unsigned>(threads - 1))) {
      team_threads = static_cast<uint64_t>(threads);
    } else if (!team->Start(0)) {
      Die(kPrefix, "out of memory for the I/O team");
    }
  });
  return *team;
}

std::string Span(uint64_t lo, uint64_t hi) { return "[" + std::to_string(lo) + ", " + std::to_string(hi) + ")"; }

// DSV41_RESIDENT_SCALES: on unless "0", "off" or "false" (the stack's own words; unset: on).
bool ResidentScales() {
  return !EnvIs("DSV41_RESIDENT_SCALES", "0") && !EnvIs("DSV41_RESIDENT_SCALES", "off") &&
         !EnvIs("DSV41_RESIDENT_SCALES", "false");
}

}  // namespace

MiaStore* MiaStore::Open(const char* path, uint64_t rows, uint64_t woff, uint64_t soff, uint64_t budget) {
  if (path == nullptr) return nullptr;
  std::unique_ptr<MiaStore> s(new (std::nothrow) MiaStore());
  if (!s) return nullptr;
  // O_DIRECT where the filesystem takes it, buffered otherwise (NFS, SSHFS).
  if (!s->file_.Open(path, true, woff, true).ok()) return nullptr;
  auto w_end = CheckedMul(rows, kWeightBytes);
  if (w_end) w_end = CheckedAdd(*w_end, woff);
  auto s_end = CheckedMul(rows, kScaleBytes);
  if (s_end) s_end = CheckedAdd(*s_end, soff);
  if (!w_end || !s_end || *w_end > s->file_.size() || *s_end > s->file_.size() || rows >= (uint64_t{1} << 62)) {
    Die(kPrefix, std::string(path) + ": " + std::to_string(rows) + " rows at weight offset " + std::to_string(woff) +
                     " and scale offset " + std::to_string(soff) + " do not fit the file's " +
                     std::to_string(s->file_.size()) + " bytes");
  }
  s->rows_ = rows;
  s->hi_ = rows;
  s->source_.file = &s->file_;
  s->source_.woff = woff;
  s->source_.soff = soff;
  // Reported by stats in every mode, also where there is no cache.
  const uint32_t ways = static_cast<uint32_t>(std::clamp<int64_t>(EnvInt("DSV41_CACHE_WAYS", 4), 1, 16));
  s->ways_ = ways;
  if (EnvIs("OFFLOAD_MODE", "ram")) {
    // The whole shard mapped and locked; no cache.
    s->mapped_bytes_ = static_cast<size_t>(s->file_.size());
    void* p = mmap(nullptr, s->mapped_bytes_ == 0 ? 1 : s->mapped_bytes_, PROT_READ, MAP_SHARED, s->file_.fd(), 0);
    if (p == MAP_FAILED) Die(kPrefix, std::string(path) + ": OFFLOAD_MODE=ram: mmap failed: " + std::strerror(errno));
    s->mapped_ = static_cast<uint8_t*>(p);
    if (mlock(p, s->mapped_bytes_) != 0) {
      Die(kPrefix, std::string(path) + ": OFFLOAD_MODE=ram: mlock of " + std::to_string(s->mapped_bytes_) +
                       " bytes failed: " + std::strerror(errno) + " (raise the memlock limit or unset OFFLOAD_MODE)");
    }
    s->source_.mapped = s->mapped_;
  } else {
    const uint64_t sets = RowCache::SetsFor(budget, ways);
    // row_store_next_cache_on_drm: the rows in a DRM dumb buffer when one was asked for and
    // can be had (only a store with a cache takes the request); else ordinary memory.
    uint8_t* rows = sets != 0 && s->drm_.TakeFor(sets * ways * kRowBytes, kPrefix) ? s->drm_.data() : nullptr;
    if (!s->cache_.Init(sets, ways, rows))
      Die(kPrefix, "cannot reserve the " + std::to_string(budget) + "-byte row cache");
  }
  if (!s->gatherer_.Init(&s->source_, &s->cache_)) Die(kPrefix, "out of memory for the gather scratch");
  s->log_.Configure(kPrefix, EnvInt("DSV41_STATS_SECONDS", 0), true);
  return s.release();
}

MiaStore::~MiaStore() {
  gatherer_.Settle();  // the last lookup's rows may still be going in
  if (mapped_ != nullptr) munmap(mapped_, mapped_bytes_ == 0 ? 1 : mapped_bytes_);
}

void MiaStore::Range(uint64_t lo, uint64_t hi) {
  std::lock_guard<std::mutex> lock(mu_);
  if (lo > hi || hi > rows_) Die(kPrefix, "row_store_range " + Span(lo, hi) + " is not inside " + Span(0, rows_));
  const bool moved = lo != lo_ || hi != hi_;
  if (moved && scales_)
    Die(kPrefix, "row_store_range moved to " + Span(lo, hi) + " after scales of " + Span(lo_, hi_) + " were pinned");
  if (moved && pack_)
    Die(kPrefix, "row_store_range moved to " + Span(lo, hi) + " after a pack of " + Span(lo_, hi_) + " was attached");
  lo_ = lo;
  hi_ = hi;
  // In every mode, OFFLOAD_MODE=ram included, and even when a pack is to come: as the stack does.
  if (!scales_ && ResidentScales()) {
    scales_ = PinScales(source_, lo, hi);
    if (!scales_) Die(kPrefix, "out of memory pinning " + std::to_string((hi - lo) * kScaleBytes) + " bytes of scales");
    source_.scales.store(scales_.get(), std::memory_order_release);
  }
}

int MiaStore::AttachPacked(const char* path, uint64_t layer) {
  if (path == nullptr) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  std::unique_ptr<ReadFile> pack = OpenMiaPack(path, layer, lo_, hi_, rows_);
  if (!pack) return 0;
  if (!pack_) {
    pack_ = std::move(pack);
    source_.pack_lo = lo_;
    source_.pack_base = kMiaHeaderBytes;
    source_.pack = pack_.get();
  }
  return 1;
}

void MiaStore::Lookup(const int64_t* ids, uint64_t count, uint8_t* w, uint8_t* s) {
  WorkerTeam& t = Team();
  for (uint64_t i = 0; i < count; ++i) {
    if (ids[i] < 0 || static_cast<uint64_t>(ids[i]) >= rows_) {
      Die(kPrefix, "row id " + std::to_string(ids[i]) + " (position " + std::to_string(i) +
                       ") is outside the table [0, " + std::to_string(rows_) + ")");
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (mapped_ != nullptr) CheckMappedShard();
  const uint64_t start = CallLog::NowNs();
  gatherer_.Gather(t, ids, count, w, s, lo_, hi_);
  const uint64_t now = CallLog::NowNs();
  log_.Record(now - start);
  if (log_.Due(now)) log_.Post(t, Totals(), now);
}

void MiaStore::CheckMappedShard() const {
  struct stat st;
  if (fstat(file_.fd(), &st) != 0)
    Die(kPrefix, file_.path() + ": OFFLOAD_MODE=ram: fstat failed: " + std::strerror(errno));
  const uint64_t now = static_cast<uint64_t>(st.st_size);
  if (now >= mapped_bytes_) return;
  Die(kPrefix, file_.path() + ": OFFLOAD_MODE=ram: the shard is now " + std::to_string(now) + " bytes, " +
                   std::to_string(mapped_bytes_) + " when it was mapped: the rows past offset " + std::to_string(now) +
                   " are gone (the file was cut or rewritten after open); restart with a complete shard");
}

CallTotals MiaStore::Totals() const {
  CallTotals t = CountedTotals(const_cast<Gatherer&>(gatherer_).counters());
  t.cache_bytes = cache_.footprint();
  t.pinned_bytes = scales_ ? scales_->bytes() : 0;
  t.packed = pack_ != nullptr;
  return t;
}

void MiaStore::Stats(uint64_t out[9]) {
  Team();
  gatherer_.Settle();  // the last lookup's rows are in the cache
  std::lock_guard<std::mutex> lock(mu_);
  const CallTotals t = Totals();
  out[0] = t.hits;
  out[1] = t.misses;
  out[2] = t.reads;
  out[3] = t.cache_bytes;
  out[4] = cache_.slots();
  out[5] = t.pinned_bytes;
  out[6] = ways_;
  out[7] = team_threads;
  out[8] = t.packed ? 1 : 0;
}

}  // namespace spark::engines
