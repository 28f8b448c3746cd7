// A baseline for bench/engine-libs.py: the overlay stack's own read path, written from its
// description (docs/engine-libs.md's ABI; bench/RESULTS.md says what it models): one mmap of
// the whole shard with MADV_RANDOM, two POSIX_FADV_WILLNEED per owned id (no de-duplication),
// rows copied out of the mapping (page faults do the reads), the batch cut into slices for a
// persistent pool of `threads` (batches under 32 ids on the caller), one job at a time; no
// O_DIRECT, no row cache; resident() = the page cache of the owned spans (mincore), release()
// drops the mapping and the file's page cache. Same ABI (version 3) as libengram_rows.so.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace {

struct Store {
  int fd = -1;
  uint64_t size = 0, woff = 0, soff = 0, lo = 0, hi = 0;
  uint8_t* map = nullptr;
  std::mutex job_mu, map_mu;
  std::atomic<uint64_t> calls{0}, owned{0}, zeroed{0}, ns{0};
  // The pool: one job (a slice function over [0, slices)) at a time.
  std::vector<std::thread> pool;
  std::mutex mu;
  std::condition_variable cv, done_cv;
  bool stop = false;
  uint64_t gen = 0;
  std::atomic<size_t> next{0}, finished{0};
  size_t slices = 0;
  const int64_t* ids = nullptr;
  uint8_t *w = nullptr, *s = nullptr;
  uint64_t count = 0, per = 0;
};

void Map(Store* st) {
  void* p = mmap(nullptr, st->size, PROT_READ, MAP_SHARED, st->fd, 0);
  st->map = p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
  if (st->map) madvise(st->map, st->size, MADV_RANDOM);
}

void Rows(Store* st, uint64_t from, uint64_t to) {
  for (uint64_t i = from; i < to; ++i) {
    const int64_t id = st->ids[i];
    if (id < 0 || uint64_t(id) < st->lo || uint64_t(id) >= st->hi || st->map == nullptr) {
      std::memset(st->w + i * 256, 0, 256);
      std::memset(st->s + i * 8, 0, 8);
      continue;
    }
    posix_fadvise(st->fd, st->woff + id * 256, 256, POSIX_FADV_WILLNEED);
    posix_fadvise(st->fd, st->soff + id * 8, 8, POSIX_FADV_WILLNEED);
    std::memcpy(st->w + i * 256, st->map + st->woff + id * 256, 256);
    std::memcpy(st->s + i * 8, st->map + st->soff + id * 8, 8);
  }
}

void Slices(Store* st) {
  for (;;) {
    const size_t k = st->next.fetch_add(1);
    if (k >= st->slices) return;
    Rows(st, k * st->per, std::min(st->count, (k + 1) * st->per));
    st->finished.fetch_add(1);
  }
}

void Worker(Store* st) {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(st->mu);
  for (;;) {
    st->cv.wait(lock, [&] { return st->stop || st->gen != seen; });
    if (st->stop) return;
    seen = st->gen;
    lock.unlock();
    Slices(st);
    lock.lock();
    st->done_cv.notify_all();
  }
}

}  // namespace

extern "C" {

int engram_rows_abi_version(void) { return 3; }

void* engram_rows_open(const char* path, uint64_t woff, uint64_t soff, uint64_t lo, uint64_t hi, int threads) {
  struct stat sb;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  if (fstat(fd, &sb) != 0 || lo > hi || threads < 0 || woff + hi * 256 > uint64_t(sb.st_size) ||
      soff + hi * 8 > uint64_t(sb.st_size)) {
    close(fd);
    errno = EINVAL;
    return nullptr;
  }
  auto* st = new Store();
  st->fd = fd;
  st->size = sb.st_size;
  st->woff = woff;
  st->soff = soff;
  st->lo = lo;
  st->hi = hi;
  Map(st);
  for (int i = 0; i < threads; ++i) st->pool.emplace_back(Worker, st);
  return st;
}

void engram_rows_gather(void* work) {
  struct W {
    uint64_t count;
    Store* store;
    uint8_t* w;
    uint8_t* s;
    const int64_t* ids;
  }* wk = static_cast<W*>(work);
  Store* st = wk->store;
  std::lock_guard<std::mutex> job(st->job_mu);
  std::lock_guard<std::mutex> map(st->map_mu);
  auto t0 = std::chrono::steady_clock::now();
  st->ids = wk->ids;
  st->w = wk->w;
  st->s = wk->s;
  st->count = wk->count;
  for (uint64_t i = 0; i < wk->count; ++i) {
    const int64_t id = wk->ids[i];
    (id >= 0 && uint64_t(id) >= st->lo && uint64_t(id) < st->hi ? st->owned : st->zeroed).fetch_add(1);
  }
  if (wk->count < 32 || st->pool.empty()) {
    Rows(st, 0, wk->count);
  } else {
    const size_t parts = std::min<size_t>(st->pool.size() + 1, wk->count);
    st->per = (wk->count + parts - 1) / parts;
    st->slices = (wk->count + st->per - 1) / st->per;
    st->next = 0;
    st->finished = 0;
    {
      std::lock_guard<std::mutex> lock(st->mu);
      ++st->gen;
    }
    st->cv.notify_all();
    Slices(st);
    std::unique_lock<std::mutex> lock(st->mu);
    st->done_cv.wait(lock, [&] { return st->finished.load() == st->slices; });
  }
  st->calls.fetch_add(1);
  st->ns.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
}

uint64_t engram_rows_prefetch(void* p, const int64_t* ids, uint64_t n) {
  Store* st = static_cast<Store*>(p);
  uint64_t owned = 0;
  for (uint64_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || uint64_t(ids[i]) < st->lo || uint64_t(ids[i]) >= st->hi) continue;
    ++owned;
    posix_fadvise(st->fd, st->woff + ids[i] * 256, 256, POSIX_FADV_WILLNEED);
    posix_fadvise(st->fd, st->soff + ids[i] * 8, 8, POSIX_FADV_WILLNEED);
  }
  return owned;
}

void engram_rows_stats(void* p, uint64_t out[4]) {
  Store* st = static_cast<Store*>(p);
  out[0] = st->calls;
  out[1] = st->owned;
  out[2] = st->zeroed;
  out[3] = st->ns;
}

uint64_t engram_rows_resident(void* p) {
  Store* st = static_cast<Store*>(p);
  std::lock_guard<std::mutex> map(st->map_mu);
  if (st->map == nullptr) return 0;
  const uint64_t page = sysconf(_SC_PAGESIZE);
  uint64_t total = 0;
  for (auto [off, len] : {std::pair<uint64_t, uint64_t>{st->woff + st->lo * 256, (st->hi - st->lo) * 256},
                          std::pair<uint64_t, uint64_t>{st->soff + st->lo * 8, (st->hi - st->lo) * 8}}) {
    const uint64_t start = off / page * page, end = (off + len + page - 1) / page * page;
    std::vector<unsigned char> vec((end - start) / page);
    if (!vec.empty() && mincore(st->map + start, end - start, vec.data()) == 0) {
      for (unsigned char c : vec) total += (c & 1) ? page : 0;
    }
  }
  return total;
}

void engram_rows_release(void* p) {
  Store* st = static_cast<Store*>(p);
  std::lock_guard<std::mutex> map(st->map_mu);
  if (st->map) munmap(st->map, st->size);
  posix_fadvise(st->fd, 0, 0, POSIX_FADV_DONTNEED);
  Map(st);
}

void engram_rows_close(void* p) {
  Store* st = static_cast<Store*>(p);
  {
    std::lock_guard<std::mutex> lock(st->mu);
    st->stop = true;
  }
  st->cv.notify_all();
  for (auto& t : st->pool) t.join();
  if (st->map) munmap(st->map, st->size);
  close(st->fd);
  delete st;
}

}  // extern "C"
