// mia_row_store_bench: runs the baseline library (row_store.h) over one packed shard, for
// `spark bench gather --variants mia` and for anyone measuring by hand. It opens a store the
// way the Mia stack's backend does (open, range, attach the pack; scales not pinned, as its
// recipes set DSV41_RESIDENT_SCALES=0) and then serves lookups:
//
//   mia_row_store_bench --pack FILE --layer L --rows N --lo LO --hi HI
//       [--budget BYTES] [--ways W] [--threads T] [--echo] [--batches FILE]
//
// --threads and --ways set DSV41_IO_THREADS and DSV41_CACHE_WAYS before the library reads
// them (default: the environment's, else the stack's 32 and 4); --budget is the cache's byte
// budget (default 0: no cache, as the mia-tp4 env file's DSV41_CACHE_GIB=0).
//
// The checkpoint row_store_open wants is a stand-in: an empty memfd of the checkpoint's
// extents (N weight rows, then N scale rows). With the pack attached and scales not pinned
// the library never reads it; the driver exits 1 if stats show otherwise.
//
// Protocol on stdin/stdout, all little-endian u64 (ids int64):
//   ready     attached (0/1), then the 9 stats
//   request   count, then count ids  -> ns in row_store_lookup, process CPU ns, bytes read
//             from storage (/proc/self/io read_bytes delta; 2^64-1 if unknown), then with
//             --echo count*256 weight bytes and count*8 scale bytes
//   request   2^64-1                 -> the 9 stats
// With --batches FILE the same requests are read from FILE and one JSON object is printed:
//   {"attached":1,"latencyNs":[...],"stats":[...]}
// Exit: 0 ok, 2 bad arguments, 3 pack not attached (absent or O_DIRECT refused) or I/O error.
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "row_store.h"

namespace {

[[noreturn]] void Fail(int code, const std::string& why) {
  std::fprintf(stderr, "mia_row_store_bench: %s\n", why.c_str());
  std::exit(code);
}

uint64_t Number(const char* flag, const char* v) {
  char* end = nullptr;
  errno = 0;
  unsigned long long n = std::strtoull(v, &end, 10);
  if (!*v || *end || errno || v[0] == '-')
    Fail(2, std::string(flag) + " takes a non-negative integer, got '" + v + "'");
  return n;
}

bool ReadAll(FILE* f, void* p, size_t n) { return n == 0 || std::fread(p, 1, n, f) == n; }
void WriteAll(const void* p, size_t n) {
  if (n && std::fwrite(p, 1, n, stdout) != n) Fail(3, "cannot write to stdout");
}

uint64_t CpuNs() {
  struct rusage r;
  getrusage(RUSAGE_SELF, &r);
  return (r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1000000000ull + (r.ru_utime.tv_usec + r.ru_stime.tv_usec) * 1000ull;
}

uint64_t ReadBytes() {
  FILE* f = std::fopen("/proc/self/io", "r");
  if (!f) return UINT64_MAX;
  char line[128];
  uint64_t v = UINT64_MAX;
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, "read_bytes:", 11) == 0) v = std::strtoull(line + 11, nullptr, 10);
  }
  std::fclose(f);
  return v;
}

struct Args {
  const char *pack = nullptr, *batches = nullptr;
  uint64_t layer = 0, rows = 0, lo = 0, hi = 0, budget = 0;
  bool have_layer = false, have_rows = false, have_lo = false, have_hi = false, echo = false;
};

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; i++) {
    std::string f = argv[i];
    if (f == "--echo") {
      a.echo = true;
      continue;
    }
    if (i + 1 >= argc) Fail(2, f + " needs a value (see the comment at the top of driver.cc)");
    const char* v = argv[++i];
    if (f == "--pack")
      a.pack = v;
    else if (f == "--batches")
      a.batches = v;
    else if (f == "--layer")
      a.layer = Number("--layer", v), a.have_layer = true;
    else if (f == "--rows")
      a.rows = Number("--rows", v), a.have_rows = true;
    else if (f == "--lo")
      a.lo = Number("--lo", v), a.have_lo = true;
    else if (f == "--hi")
      a.hi = Number("--hi", v), a.have_hi = true;
    else if (f == "--budget")
      a.budget = Number("--budget", v);
    else if (f == "--ways")
      setenv("DSV41_CACHE_WAYS", std::to_string(Number("--ways", v)).c_str(), 1);
    else if (f == "--threads")
      setenv("DSV41_IO_THREADS", std::to_string(Number("--threads", v)).c_str(), 1);
    else
      Fail(2, "unknown flag " + f);
  }
  if (!a.pack || !a.have_layer || !a.have_rows || !a.have_lo || !a.have_hi)
    Fail(2, "give --pack, --layer, --rows, --lo and --hi");
  if (a.lo > a.hi || a.hi > a.rows || a.rows > (1ull << 40))
    Fail(2, "--lo, --hi, --rows: need lo <= hi <= rows <= 2^40");
  return a;
}

// The checkpoint stand-in: an empty file the size of N weight rows then N scale rows.
std::string StandIn(uint64_t rows) {
  int fd = memfd_create("mia-checkpoint-stand-in", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(rows * 264)) != 0)
    Fail(3, "cannot make the checkpoint stand-in (memfd)");
  return "/proc/self/fd/" + std::to_string(fd);
}

}  // namespace

int main(int argc, char** argv) {
  Args a = Parse(argc, argv);
  setenv("DSV41_RESIDENT_SCALES", "0", 1);
  Store* s = row_store_open(StandIn(a.rows).c_str(), a.rows, 0, a.rows * 256, a.budget);
  if (!s) Fail(3, "row_store_open refused the checkpoint stand-in");
  row_store_range(s, a.lo, a.hi);
  uint64_t attached = static_cast<uint64_t>(row_store_attach_packed(s, a.pack, a.layer));
  uint64_t stats[9];
  if (!attached) {
    Fail(3, std::string(a.pack) +
                ": not attached (absent, not openable, or its filesystem refuses O_DIRECT: the Mia reader then serves "
                "from the checkpoint)");
  }
  FILE* in = stdin;
  if (a.batches && !(in = std::fopen(a.batches, "rb"))) Fail(3, std::string("cannot open --batches ") + a.batches);
  std::vector<uint64_t> latencies;
  if (!a.batches) {
    row_store_stats(s, stats);
    WriteAll(&attached, 8);
    WriteAll(stats, sizeof stats);
    std::fflush(stdout);
  }
  std::vector<int64_t> ids;
  std::vector<uint8_t> weights, scales;
  for (uint64_t count; ReadAll(in, &count, 8);) {
    if (count == UINT64_MAX) {
      row_store_stats(s, stats);
      WriteAll(stats, sizeof stats);
      std::fflush(stdout);
      continue;
    }
    if (count > (1ull << 24)) Fail(2, "a batch of more than 2^24 ids");
    ids.resize(count);
    weights.resize(count * 256);
    scales.resize(count * 8);
    if (!ReadAll(in, ids.data(), count * 8)) Fail(2, "a batch ended early");
    LookupWork work{s, ids.data(), weights.data(), scales.data(), count};
    uint64_t io0 = ReadBytes(), c0 = CpuNs();
    auto t0 = std::chrono::steady_clock::now();
    row_store_lookup(&work);
    auto t1 = std::chrono::steady_clock::now();
    uint64_t reply[3] = {static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count()),
                         CpuNs() - c0, 0};
    uint64_t io1 = ReadBytes();
    reply[2] = io0 == UINT64_MAX || io1 == UINT64_MAX ? UINT64_MAX : io1 - io0;
    if (a.batches) {
      latencies.push_back(reply[0]);
      continue;
    }
    WriteAll(reply, sizeof reply);
    if (a.echo) {
      WriteAll(weights.data(), weights.size());
      WriteAll(scales.data(), scales.size());
    }
    std::fflush(stdout);
  }
  row_store_stats(s, stats);
  if (stats[8] == 1 && stats[2] > stats[1])
    Fail(1, "the library read more than once per miss: the checkpoint stand-in was read");
  if (a.batches) {
    std::printf("{\"attached\":1,\"latencyNs\":[");
    for (size_t i = 0; i < latencies.size(); i++)
      std::printf("%s%llu", i ? "," : "", static_cast<unsigned long long>(latencies[i]));
    std::printf("],\"stats\":[");
    for (int i = 0; i < 9; i++) std::printf("%s%llu", i ? "," : "", static_cast<unsigned long long>(stats[i]));
    std::printf("]}\n");
  }
  row_store_close(s);
  return 0;
}
