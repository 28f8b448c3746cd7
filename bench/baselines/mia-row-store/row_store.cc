// The store: the checkpoint shard (two reads a miss, one with pinned scales), an attached
// packed shard (one read a miss), the row cache, counters. Every read is one aligned pread of
// the 4 KiB pages a piece spans (4 or 8 KiB), into the calling thread's aligned buffer, on a
// file opened O_DIRECT (the checkpoint falls back to buffered; a pack never does).
#include "row_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "io_pool.h"
#include "row_cache.h"

namespace {

using mia::kRowBytes;
using mia::kScaleBytes;
using mia::kWeightBytes;

constexpr uint64_t kMagic = 0x31344E4531565344ull;  // "DSV41EN1"
constexpr uint64_t kHeaderBytes = 4096;
constexpr uint64_t kPage = 4096;

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "row_store: %s\n", what);
  std::abort();
}

bool AddOk(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_add_overflow(a, b, out); }
bool MulOk(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_mul_overflow(a, b, out); }

// Reads [off, off + len) of fd with one pread of the whole pages it spans into buf (8 KiB,
// aligned); len <= 4096 spans at most two pages. Returns where the piece starts in buf, or
// nullptr when the read came back short or failed.
const uint8_t* ReadPiece(int fd, uint64_t off, uint64_t len, uint8_t* buf) {
  uint64_t start = off & ~(kPage - 1);
  uint64_t end = (off + len + kPage - 1) & ~(kPage - 1);
  ssize_t got;
  do {
    got = pread(fd, buf, end - start, static_cast<off_t>(start));
  } while (got < 0 && errno == EINTR);
  if (got < 0 || static_cast<uint64_t>(got) < off + len - start) return nullptr;
  return buf + (off - start);
}

bool ResidentScalesFromEnv() {
  const char* v = std::getenv("DSV41_RESIDENT_SCALES");
  if (!v) return true;
  return !(std::strcmp(v, "0") == 0 || std::strcmp(v, "off") == 0 || std::strcmp(v, "false") == 0);
}

}  // namespace

struct Store {
  int fd = -1;
  uint64_t rows = 0, woff = 0, soff = 0;
  uint64_t lo = 0, hi = 0;
  std::unique_ptr<mia::RowCache> cache;
  std::vector<uint8_t> pinned;  // scale rows [lo, hi) when pinned
  bool scales_pinned = false;
  unsigned ways = 4;  // DSV41_CACHE_WAYS at open
  int packed_fd = -1;
  std::atomic<uint64_t> hits{0}, misses{0}, reads{0};
};

namespace {

// Reads row id (lo <= id < hi) from the pack or the checkpoint into row264; zeros if a read failed.
void ReadRow(Store* s, uint64_t id, uint8_t* row264, uint8_t* buf) {
  if (s->packed_fd >= 0) {
    s->reads.fetch_add(1, std::memory_order_relaxed);
    const uint8_t* p = ReadPiece(s->packed_fd, kHeaderBytes + (id - s->lo) * kRowBytes, kRowBytes, buf);
    if (p)
      std::memcpy(row264, p, kRowBytes);
    else
      std::memset(row264, 0, kRowBytes);
    return;
  }
  s->reads.fetch_add(1, std::memory_order_relaxed);
  const uint8_t* w = ReadPiece(s->fd, s->woff + id * kWeightBytes, kWeightBytes, buf);
  if (w)
    std::memcpy(row264, w, kWeightBytes);
  else
    std::memset(row264, 0, kWeightBytes);
  if (s->scales_pinned) {
    std::memcpy(row264 + kWeightBytes, &s->pinned[(id - s->lo) * kScaleBytes], kScaleBytes);
    return;
  }
  s->reads.fetch_add(1, std::memory_order_relaxed);
  const uint8_t* sc = ReadPiece(s->fd, s->soff + id * kScaleBytes, kScaleBytes, buf);
  if (sc)
    std::memcpy(row264 + kWeightBytes, sc, kScaleBytes);
  else
    std::memset(row264 + kWeightBytes, 0, kScaleBytes);
}

void LookupOne(void* ctx, uint64_t i, uint8_t* buf) {
  auto* work = static_cast<LookupWork*>(ctx);
  Store* s = work->store;
  int64_t id = work->ids[i];
  if (id < 0 || static_cast<uint64_t>(id) >= s->rows) Die("lookup id outside the table [0, N)");
  uint8_t* w = work->weights + i * kWeightBytes;
  uint8_t* sc = work->scales + i * kScaleBytes;
  uint64_t u = static_cast<uint64_t>(id);
  if (u < s->lo || u >= s->hi) {
    std::memset(w, 0, kWeightBytes);
    std::memset(sc, 0, kScaleBytes);
    return;
  }
  uint8_t row[kRowBytes];
  if (s->cache && s->cache->Get(u, row)) {
    s->hits.fetch_add(1, std::memory_order_relaxed);
  } else {
    s->misses.fetch_add(1, std::memory_order_relaxed);
    ReadRow(s, u, row, buf);
    if (s->cache) s->cache->Put(u, row);
  }
  std::memcpy(w, row, kWeightBytes);
  std::memcpy(sc, row + kWeightBytes, kScaleBytes);
}

// Pins the scale rows [lo, hi) from the checkpoint, a page-aligned MiB at a time (the fd may be O_DIRECT).
void PinScales(Store* s) {
  uint64_t n = (s->hi - s->lo) * kScaleBytes;
  s->pinned.assign(n, 0);
  constexpr uint64_t kChunk = 1 << 20;
  void* raw = nullptr;
  if (posix_memalign(&raw, kPage, kChunk + kPage) != 0) Die("cannot allocate the scale pinning buffer");
  std::unique_ptr<uint8_t, decltype(&std::free)> chunk(static_cast<uint8_t*>(raw), &std::free);
  uint64_t first = s->soff + s->lo * kScaleBytes;
  for (uint64_t done = 0; done < n;) {
    uint64_t off = first + done;
    uint64_t start = off & ~(kPage - 1);
    uint64_t want = std::min<uint64_t>(kChunk, n - done);
    uint64_t end = (off + want + kPage - 1) & ~(kPage - 1);
    ssize_t got = pread(s->fd, chunk.get(), end - start, static_cast<off_t>(start));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0 || static_cast<uint64_t>(got) <= off - start) Die("cannot read the scale rows to pin");
    uint64_t have = std::min<uint64_t>(want, static_cast<uint64_t>(got) - (off - start));
    std::memcpy(&s->pinned[done], chunk.get() + (off - start), have);
    done += have;
  }
  s->scales_pinned = true;
}

}  // namespace

Store* row_store_open(const char* path, uint64_t rows, uint64_t woff, uint64_t soff, uint64_t budget) {
  if (!path) return nullptr;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_DIRECT);
  if (fd < 0) fd = open(path, O_RDONLY | O_CLOEXEC);  // NFS, SSHFS, tmpfs: buffered
  if (fd < 0) return nullptr;
  struct stat st;
  uint64_t wbytes, sbytes, wend, send;
  if (fstat(fd, &st) != 0 || !MulOk(rows, kWeightBytes, &wbytes) || !MulOk(rows, kScaleBytes, &sbytes) ||
      !AddOk(woff, wbytes, &wend) || !AddOk(soff, sbytes, &send) || wend > static_cast<uint64_t>(st.st_size) ||
      send > static_cast<uint64_t>(st.st_size)) {
    Die("the weight or scale extents do not fit the checkpoint file");
  }
  auto* s = new Store;
  s->fd = fd;
  s->rows = rows;
  s->woff = woff;
  s->soff = soff;
  s->hi = rows;
  s->ways = mia::WaysFromEnv();
  s->cache = std::make_unique<mia::RowCache>(budget, s->ways);
  if (!s->cache->enabled()) s->cache.reset();
  return s;
}

void row_store_range(Store* s, uint64_t lo, uint64_t hi) {
  if (!s) return;
  if (lo > hi || hi > s->rows) Die("row_store_range: lo > hi or hi > N");
  if (s->scales_pinned && (lo != s->lo || hi != s->hi))
    Die("row_store_range: the range moved after scales were pinned");
  s->lo = lo;
  s->hi = hi;
  if (!s->scales_pinned && ResidentScalesFromEnv()) PinScales(s);
}

int row_store_attach_packed(Store* s, const char* path, uint64_t layer) {
  if (!s || !path) return 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_DIRECT);  // O_DIRECT only: refused means no pack
  if (fd < 0) return 0;
  uint8_t* buf = mia::ThreadBuffer();
  ssize_t got = pread(fd, buf, kHeaderBytes, 0);
  uint64_t h[6] = {};
  if (got >= 48) std::memcpy(h, buf, sizeof h);
  struct stat st;
  uint64_t body, need;
  if (!MulOk(s->hi - s->lo, kRowBytes, &body) || !AddOk(kHeaderBytes, body, &need))
    Die("the range's rows overflow a file offset");
  bool match = got >= 48 && h[0] == kMagic && h[1] == layer && h[2] == s->lo && h[3] == s->hi && h[4] == s->rows &&
               h[5] == kRowBytes && fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_size) >= need;
  if (!match) Die("packed Engram shard does not match this rank's range; re-run the pack step");
  if (s->packed_fd >= 0) close(s->packed_fd);
  s->packed_fd = fd;
  return 1;
}

void row_store_lookup(void* work) {
  auto* w = static_cast<LookupWork*>(work);
  if (!w || !w->store || w->count == 0) return;
  mia::RunTickets(w->count, LookupOne, w);
}

void row_store_stats(Store* s, uint64_t out[9]) {
  if (!out) return;
  unsigned threads = mia::PoolThreads();
  if (!s) {
    std::memset(out, 0, 9 * sizeof(uint64_t));
    return;
  }
  out[0] = s->hits.load();
  out[1] = s->misses.load();
  out[2] = s->reads.load();
  out[3] = s->cache ? s->cache->bytes() : 0;
  out[4] = s->cache ? s->cache->slots() : 0;
  out[5] = s->scales_pinned ? s->pinned.size() : 0;
  out[6] = s->ways;
  out[7] = threads;
  out[8] = s->packed_fd >= 0 ? 1 : 0;
}

void row_store_close(Store* s) {
  if (!s) return;
  if (s->fd >= 0) close(s->fd);
  if (s->packed_fd >= 0) close(s->packed_fd);
  delete s;
}
