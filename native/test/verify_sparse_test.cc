// VerifySparseTable: the data pass of `spark verify` over one table of a sparse copy.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "core/base/crc32.h"
#include "core/pack/verify.h"
#include "test/direct_probe.h"
#include "test/pack_fixtures.h"
#include "test/testing.h"

using namespace spark;
using namespace pack_test;
using spark_test::DirectAllowedIn;

namespace {

constexpr uint64_t kRows = 1000, kDim = 256, kScale = kDim / 32, kLead = 4760;  // 264-byte rows, odd offsets
constexpr uint64_t kStart = 137, kEnd = 911, kChunkRows = 100;                  // 8 chunks, the last of 74 rows

uint64_t WeightAt(uint64_t row) { return kLead + row * kDim; }
uint64_t ScaleAt(uint64_t row) { return kLead + kRows * kDim + row * kScale; }

// A shard: kLead header bytes, weight [kRows, kDim], scale [kRows, kDim/32].
std::vector<uint8_t> ShardBytes() {
  std::vector<uint8_t> b(kLead + kRows * (kDim + kScale), 0x20);
  for (uint64_t r = 0; r < kRows; ++r) {
    for (uint64_t c = 0; c < kDim; ++c) b[WeightAt(r) + c] = static_cast<uint8_t>(r * 131 + c * 7 + (r >> 8));
    for (uint64_t c = 0; c < kScale; ++c) b[ScaleAt(r) + c] = static_cast<uint8_t>(0x70 + (r + c) % 17);
  }
  return b;
}

// The manifest's checksums: per chunk, the CRC-32 of its weight bytes followed by its scale bytes.
std::vector<uint32_t> Checksums(const std::vector<uint8_t>& b) {
  std::vector<uint32_t> crcs;
  for (uint64_t a = kStart; a < kEnd; a += kChunkRows) {
    uint64_t n = std::min(kChunkRows, kEnd - a);
    crcs.push_back(Crc32(Crc32(0, b.data() + WeightAt(a), n * kDim), b.data() + ScaleAt(a), n * kScale));
  }
  return crcs;
}

SparseVerifyJob JobFor(const std::string& copy, const std::vector<uint32_t>& crcs) {
  SparseVerifyJob job;
  job.weight = {copy, WeightAt(0)};
  job.scale = {copy, ScaleAt(0)};
  job.dim = kDim;
  job.start = kStart;
  job.end = kEnd;
  job.chunk_rows = kChunkRows;
  job.check_chunks = true;
  job.crcs = crcs;
  job.threads = 3;
  job.pool = &Pool();
  return job;
}

void WithSource(SparseVerifyJob* job, const std::string& source) {
  job->compare_rows = true;
  job->source_weight = {source, WeightAt(0)};
  job->source_scale = {source, ScaleAt(0)};
}

VerifyResult Run(const SparseVerifyJob& job) {
  VerifyProgress progress;
  VerifyResult r;
  Status s = VerifySparseTable(job, &progress, &r);
  CHECK(s.ok());
  if (!s.ok()) std::printf("  %s\n", s.message.c_str());
  CHECK_EQ(progress.bytes_done.load(), progress.bytes_total.load());
  return r;
}

}  // namespace

// A clean copy, then one flipped weight byte and one flipped scale byte, under each I/O mode
// in /tmp and (where it is tmpfs) /dev/shm: O_DIRECT exactly where the filesystem allows it.
TEST(SparseChunksAndRowsUnderEachIoMode) {
  std::vector<std::string> parents = {"/tmp"};
  if (spark_test::IsTmpfs("/dev/shm")) parents.push_back("/dev/shm");
  for (const std::string& parent : parents) {
    const std::string dir = TempDir(parent);
    const auto good = ShardBytes();
    const std::string source = dir + "/source.safetensors", copy = dir + "/copy.safetensors";
    WriteAll(source, good);
    WriteAll(copy, good);
    const bool direct_allowed = DirectAllowedIn(dir);
    for (bool direct : {true, false}) {
      SparseVerifyJob job = JobFor(copy, Checksums(good));
      job.direct_io = direct;
      VerifyResult r = Run(job);
      CHECK_EQ(r.chunks_checked, 8u);
      CHECK_EQ(r.bad_chunk_count, 0u);
      CHECK_EQ(r.bytes_read, (kEnd - kStart) * (kDim + kScale));
      CHECK_EQ(r.read_io, std::string(direct && direct_allowed ? "direct" : "buffered"));
      WithSource(&job, source);
      r = Run(job);
      CHECK_EQ(r.rows_compared, kEnd - kStart);
      CHECK_EQ(r.bad_row_count, 0u);
      CHECK_EQ(r.bytes_read, 2 * (kEnd - kStart) * (kDim + kScale));
    }
    auto bad = good;
    bad[WeightAt(500) + 255] ^= 1;  // chunk 3's last weight byte of row 500
    bad[ScaleAt(900)] ^= 0x80;      // chunk 7, row 900's first scale byte
    bad[WeightAt(kEnd) + 1] ^= 1;   // outside the range: never read
    WriteAll(copy, bad);
    SparseVerifyJob job = JobFor(copy, Checksums(good));
    WithSource(&job, source);
    VerifyResult r = Run(job);
    CHECK_EQ(r.bad_chunk_count, 2u);
    CHECK(r.bad_chunks == (std::vector<uint64_t>{3, 7}));
    CHECK_EQ(r.bad_row_count, 2u);
    CHECK(r.bad_rows == (std::vector<uint64_t>{500, 900}));
    // Rows only (a copy without checksums, given its source).
    job.check_chunks = false;
    job.crcs.clear();
    r = Run(job);
    CHECK_EQ(r.chunks_checked, 0u);
    CHECK(r.bad_rows == (std::vector<uint64_t>{500, 900}));
    std::filesystem::remove_all(dir);
  }
}

// A copy cut inside its scale rows: the missing bytes read as zeros, so the pass goes on and
// names the chunk and the rows they belong to; fewer bytes were read.
TEST(SparseTruncatedCopyFailsItsChunkAndRows) {
  const std::string dir = TempDir();
  const auto good = ShardBytes();
  const std::string source = dir + "/source.safetensors", copy = dir + "/copy.safetensors";
  WriteAll(source, good);
  auto cut = good;
  cut.resize(ScaleAt(850) + 3);
  WriteAll(copy, cut);
  SparseVerifyJob job = JobFor(copy, Checksums(good));
  WithSource(&job, source);
  VerifyResult r = Run(job);
  CHECK(r.bad_chunks == (std::vector<uint64_t>{7}));
  CHECK_EQ(r.bad_row_count, kEnd - 850);
  CHECK_EQ(r.bad_rows.size(), 16u);
  CHECK_EQ(r.bad_rows.front(), 850u);
  CHECK_EQ(r.bad_rows.back(), 865u);
  CHECK_EQ(r.bytes_read, (kEnd - kStart) * (2 * kDim + kScale) + (850 - kStart) * kScale + 3);
  std::filesystem::remove_all(dir);
}

// Fewer checksums than chunks: the chunks without one fail (a manifest that lost entries).
TEST(SparseChunksWithoutAChecksumFail) {
  const std::string dir = TempDir();
  const auto good = ShardBytes();
  WriteAll(dir + "/copy", good);
  auto crcs = Checksums(good);
  crcs.resize(6);
  VerifyResult r = Run(JobFor(dir + "/copy", crcs));
  CHECK_EQ(r.chunks_checked, 8u);
  CHECK(r.bad_chunks == (std::vector<uint64_t>{6, 7}));
  std::filesystem::remove_all(dir);
}

// Nothing to do, an empty range, and jobs whose numbers cannot describe a table.
TEST(SparseEmptyAndImpossibleJobs) {
  const std::string dir = TempDir();
  const auto good = ShardBytes();
  WriteAll(dir + "/copy", good);
  SparseVerifyJob job = JobFor(dir + "/copy", {});
  job.check_chunks = false;
  VerifyResult r = Run(job);
  CHECK_EQ(r.read_io, std::string("none"));
  CHECK_EQ(r.bytes_read, 0u);
  job = JobFor(dir + "/copy", {});
  job.end = job.start;
  r = Run(job);
  CHECK_EQ(r.chunks_checked, 0u);
  CHECK_EQ(r.read_io, std::string("none"));
  auto refused = [](SparseVerifyJob j) {
    VerifyProgress p;
    VerifyResult res;
    Status s = VerifySparseTable(j, &p, &res);
    CHECK(!s.ok());
    CHECK(s.code == Code::E_USAGE);
  };
  job = JobFor(dir + "/copy", Checksums(good));
  job.dim = 100;
  refused(job);
  job = JobFor(dir + "/copy", Checksums(good));
  job.chunk_rows = 0;
  refused(job);
  job = JobFor(dir + "/copy", Checksums(good));
  job.start = job.end + 1;
  refused(job);
  job = JobFor(dir + "/copy", Checksums(good));
  job.end = UINT64_MAX / 64;  // the last row's offset overflows
  refused(job);
  job = JobFor(dir + "/copy", Checksums(good));
  job.weight.offset = UINT64_MAX - 10;
  refused(job);
  job = JobFor(dir + "/copy", Checksums(good));
  job.chunk_rows = uint64_t{1} << 40;  // a chunk no buffer can hold
  refused(job);
  std::filesystem::remove_all(dir);
}

// A file that cannot be opened is an error, not a pass.
TEST(SparseMissingCopyIsAnError) {
  SparseVerifyJob job = JobFor("/nonexistent/spark-sparse-verify/copy", {1, 2, 3, 4, 5, 6, 7, 8});
  VerifyProgress p;
  VerifyResult r;
  CHECK(!VerifySparseTable(job, &p, &r).ok());
}

int main() { return spark_test::RunAll("verify_sparse_test"); }
