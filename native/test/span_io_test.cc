// The pack's aligned transfers (core/pack/span_io.h): byte-exact reads and writes at unaligned
// starts and ends, only a span's own bytes written (holes stay holes), O_DIRECT taken where
// the filesystem allows it and the buffered fallback where it does not (tmpfs), and the
// background thread that overlaps reads with writes.
#include "core/pack/span_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/threads/background.h"
#include "test/direct_probe.h"
#include "test/scratch.h"
#include "test/testing.h"

using namespace spark;
using spark_test::IsTmpfs;

namespace {

std::string TempDirIn(const std::string& parent) { return spark_test::ScratchDir(parent, "spark-pack-io-test"); }

std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

using spark_test::ReadAll;
using spark_test::WriteAll;

bool DirectReadAllowed(const std::string& path) { return spark_test::DirectAllowedIn(DirName(path)); }
bool DirectWriteAllowed(const std::string& path) { return DirectReadAllowed(path); }

// Spans at every kind of alignment: starts and ends on a block, one byte off it, a row (264
// bytes) off it, and spans inside one block or crossing one boundary.
std::vector<std::pair<uint64_t, uint64_t>> Spans() {
  return {{0, 4096},
          {0, 1},
          {1, 1},
          {4095, 2},
          {4096, 8192},
          {264, 264 * 17},
          {4095, 4097},
          {12345, 0},
          {8191, 1 << 20},
          {100, 4000},
          {4096 * 7 + 5, (1 << 20) + 263},
          {(3 << 20) - 9, 9},
          {777, (2 << 20) + 1}};
}

// Reads every span from `src` and writes it at the same offset of a file pre-filled with 0x5A,
// checking the read bytes and that the write changed exactly the span.
// expect_*: what the filesystem allows (checked independently); the code must take the direct
// path exactly there, unless asked not to or told to behave as if refused.
void CheckSpansIn(const std::string& dir, bool want_direct, bool expect_direct_read, bool expect_direct_write,
                  DirectRefusal refusal = DirectRefusal::kNone) {
  const std::vector<uint8_t> bytes = RandomBytes((3 << 20) + 777, 7);
  const std::string src = dir + "/source.bin";
  WriteAll(src, bytes);
  std::vector<uint8_t> want(bytes.size(), 0x5A);
  WriteAll(dir + "/dest.bin", want);
  if (want_direct) {
    CHECK_EQ(DirectReadAllowed(src), expect_direct_read);
    CHECK_EQ(DirectWriteAllowed(dir + "/dest.bin"), expect_direct_write);
  }

  const bool usable = want_direct && refusal == DirectRefusal::kNone;
  SpanReader reader;
  CHECK(reader.Open(src, want_direct, refusal).ok());
  CHECK_EQ(reader.direct(), usable && expect_direct_read);
  PackDir pd;
  CHECK(PackDir::Open(dir, &pd).ok());
  Fd out;
  bool exists = false;
  CHECK(pd.OpenExisting("dest.bin", O_RDWR, &out, &exists).ok() && exists);
  SpanWriter writer;
  CHECK(writer.Open(pd, "dest.bin", out.get(), want_direct, refusal).ok());
  // Refused at the transfer: direct until the first direct write fails, buffered after.
  CHECK_EQ(writer.direct(), want_direct && expect_direct_write && refusal != DirectRefusal::kAtOpen);

  AlignedBuffer buf;
  for (auto [off, len] : Spans()) {
    uint8_t* base = buf.Reserve(SpanBufferBytes(off, len));
    CHECK(base != nullptr);
    size_t got = 0;
    CHECK(reader.Read(off, len, base, &got).ok());
    CHECK_EQ(got, len);
    CHECK(len == 0 || std::memcmp(base + SpanLead(off), bytes.data() + off, len) == 0);
    CHECK(writer.Write(off, base + SpanLead(off), len).ok());
    std::memcpy(want.data() + off, bytes.data() + off, len);
    CHECK(ReadAll(dir + "/dest.bin") == want);
  }
  // A span reaching past the end of the file: the bytes that exist, counted.
  uint8_t* base = buf.Reserve(SpanBufferBytes(bytes.size() - 100, 5000));
  size_t got = 0;
  CHECK(reader.Read(bytes.size() - 100, 5000, base, &got).ok());
  CHECK_EQ(got, 100u);
  CHECK(std::memcmp(base + SpanLead(bytes.size() - 100), bytes.data() + bytes.size() - 100, 100) == 0);
  CHECK(reader.ReadExact(bytes.size() - 100, 5000, base, Code::E_SOURCE_CHANGED).code == Code::E_SOURCE_CHANGED);
  // Data not laid out by the placement rule is still written exactly (buffered).
  std::vector<uint8_t> odd(bytes.begin() + 5000, bytes.begin() + 5000 + 70000);
  CHECK(writer.Write(9000, odd.data() + 1, 60000).ok());
  std::memcpy(want.data() + 9000, odd.data() + 1, 60000);
  CHECK(ReadAll(dir + "/dest.bin") == want);
  CHECK_EQ(writer.direct(), usable && expect_direct_write);
}

}  // namespace

TEST(SpansAreByteExactAtUnalignedStartsAndEndsWithODirect) {
  std::string dir = TempDirIn("/tmp");
  CHECK(!dir.empty());
  const bool allowed = DirectReadAllowed(dir + "/probe");
  std::printf("  (O_DIRECT allowed in %s: %d)\n", dir.c_str(), allowed ? 1 : 0);
  // Where the filesystem allows it, the direct path must be the one taken.
  CheckSpansIn(dir, true, allowed, DirectWriteAllowed(dir + "/probe"));
}

TEST(SpansAreByteExactBuffered) {
  std::string dir = TempDirIn("/tmp");
  CHECK(!dir.empty());
  CheckSpansIn(dir, false, false, false);
}

// tmpfs refused O_DIRECT before Linux 6.6 and takes it since: whichever this kernel does,
// the code must follow it, byte-exact either way.
TEST(TmpfsTakesWhatItsKernelAllowsByteExact) {
  if (!IsTmpfs("/dev/shm")) {
    std::printf("  (skipped: /dev/shm is not tmpfs here)\n");
    return;
  }
  std::string dir = TempDirIn("/dev/shm");
  CHECK(!dir.empty());
  const bool allowed = DirectReadAllowed(dir + "/probe");
  std::printf("  (O_DIRECT allowed on tmpfs with this kernel: %d)\n", allowed ? 1 : 0);
  CheckSpansIn(dir, true, allowed, DirectWriteAllowed(dir + "/probe"));
  std::filesystem::remove_all(dir);  // memory, not disk
}

// A filesystem that refuses O_DIRECT at open, or at the first transfer: buffered, exact.
TEST(RefusedODirectFallsBackToBufferedExactly) {
  for (DirectRefusal refusal : {DirectRefusal::kAtOpen, DirectRefusal::kAtTransfer}) {
    std::string dir = TempDirIn("/tmp");
    CHECK(!dir.empty());
    CheckSpansIn(dir, true, DirectReadAllowed(dir + "/probe"), DirectWriteAllowed(dir + "/probe"), refusal);
  }
}

TEST(WritesTouchOnlyTheirSpanAndHolesStayHoles) {
  std::string dir = TempDirIn("/tmp");
  PackDir pd;
  CHECK(PackDir::Open(dir, &pd).ok());
  Fd out;
  CHECK(pd.Create("sparse.bin", &out).ok());
  const uint64_t size = uint64_t{64} << 20;
  CHECK_EQ(::ftruncate(out.get(), static_cast<off_t>(size)), 0);
  SpanWriter writer;
  CHECK(writer.Open(pd, "sparse.bin", out.get(), true).ok());
  const std::vector<uint8_t> bytes = RandomBytes(1 << 20, 9);
  AlignedBuffer buf;
  const std::pair<uint64_t, uint64_t> spans[] = {{(8 << 20) + 264, 300000}, {(40 << 20) + 4095, 123457}};
  uint64_t written = 0;
  for (auto [off, len] : spans) {
    uint8_t* base = buf.Reserve(SpanBufferBytes(off, len));
    std::memcpy(base + SpanLead(off), bytes.data(), len);
    CHECK(writer.Write(off, base + SpanLead(off), len).ok());
    written += len;
  }
  CHECK(SyncAll(out.get(), pd.PathOf("sparse.bin")).ok());
  std::vector<uint8_t> got = ReadAll(pd.PathOf("sparse.bin"));
  CHECK_EQ(got.size(), size);
  std::vector<uint8_t> want(size, 0);
  for (auto [off, len] : spans) std::memcpy(want.data() + off, bytes.data(), len);
  CHECK(got == want);
  struct stat st;
  CHECK_EQ(::fstat(out.get(), &st), 0);
  const uint64_t allocated = static_cast<uint64_t>(st.st_blocks) * 512;
  // Each span's blocks, its partial head and tail block included, and nothing else
  // (some filesystems allocate in larger units: allow 64 KiB per span).
  std::printf("  (allocated %llu bytes for %llu written)\n", static_cast<unsigned long long>(allocated),
              static_cast<unsigned long long>(written));
  CHECK(allocated <= written + 2 * 65536);
}

TEST(BackgroundRunsOneTaskAtATimeAndReportsItsStatus) {
  Background bg;
  CHECK(bg.Wait().ok());  // nothing started
  std::atomic<int> runs{0};
  for (int i = 0; i < 200; ++i) {
    bg.Start([&runs, i] {
      runs.fetch_add(1);
      return i % 50 == 49 ? Status::Error(Code::E_IO, "task " + std::to_string(i)) : Status::Ok();
    });
    Status s = bg.Wait();
    CHECK_EQ(s.ok(), i % 50 != 49);
  }
  CHECK_EQ(runs.load(), 200);
  {
    Background unused;  // never started: destroys cleanly
  }
  Background pending;
  pending.Start([] { return Status::Ok(); });  // destroyed without a Wait: joins cleanly
}

int main() { return spark_test::RunAll("span_io_test"); }
