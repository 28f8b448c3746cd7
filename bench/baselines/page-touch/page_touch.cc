// What a first write to a page of fresh anonymous memory costs on this machine, after each way a
// cache can prepare its arena: nothing (a page fault at the write), MADV_POPULATE_WRITE (the
// engine libraries' row cache at open), or a memset of the whole arena. Writes one byte to
// random pages, then to the same pages again. Where the machine is a guest whose host backs its
// memory on first touch, the populated arena's first writes still cost what a host fault costs.
//
//   c++ -O2 -o /tmp/page_touch bench/baselines/page-touch/page_touch.cc
//   /tmp/page_touch MIB    (e.g. 1800: the overlay library's default row cache)
#include <sys/mman.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

double Seconds() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Microseconds a write of one byte to each of `n` random pages takes, on average.
double WriteMicros(char* arena, size_t pages, int n, uint64_t seed) {
  const double t = Seconds();
  for (int i = 0; i < n; ++i) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    arena[(seed >> 20) % pages * 4096 + (seed & 4000)] = static_cast<char>(i);
  }
  return (Seconds() - t) / n * 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1024;
  const size_t bytes = mib << 20, pages = bytes / 4096;
  const char* ways[] = {"first touch", "MADV_POPULATE_WRITE", "memset"};
  for (int way = 0; way < 3; ++way) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      std::perror("mmap");
      return 1;
    }
    char* arena = static_cast<char*>(p);
    const double t = Seconds();
    if (way == 1 && madvise(arena, bytes, 23 /* MADV_POPULATE_WRITE */) != 0) std::perror("madvise");
    if (way == 2) std::memset(arena, 1, bytes);
    const double prepare = Seconds() - t;
    const double first = WriteMicros(arena, pages, 20000, 12345);
    const double again = WriteMicros(arena, pages, 20000, 12345);
    std::printf("%-20s prepare %8.0f ms (%.2f us a page), first writes %6.2f us, again %5.2f us\n", ways[way],
                prepare * 1e3, prepare / pages * 1e6, first, again);
    munmap(arena, bytes);
  }
  return 0;
}
