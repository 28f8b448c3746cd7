// The sparse copy (core/pack/pack_sparse.h), the output directory's link rules (core/pack/pack_dir.h),
// the hole probe and the rate limiter.
#include "core/pack/pack_sparse.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/base/crc32.h"
#include "core/pack/pack_dir.h"
#include "core/pack/pack_rate.h"
#include "core/threads/thread_pool.h"
#include "test/direct_probe.h"
#include "test/pack_fixtures.h"
#include "test/testing.h"

using namespace spark;
using namespace pack_test;

namespace {

constexpr const char* kShardName = "model-00002-of-00002.safetensors";

uint8_t Byte(uint64_t table, uint64_t row, uint64_t col) {
  return static_cast<uint8_t>(table * 29 + row * 131 + col * 7 + (row >> 8) + 1);
}

// A shard: 8-byte length, an N-byte header (not page aligned), then two tables' weight
// [rows, dim] and scale [rows, dim/32], one after the other.
struct Shard {
  std::string dir, path;
  uint64_t header_bytes = 0, dim = 64;
  std::vector<uint64_t> rows;
  std::vector<uint64_t> weight_offset, scale_offset;
  std::vector<uint8_t> bytes;
};

Shard MakeShard(std::vector<uint64_t> rows, uint64_t header_len = 650) {
  Shard s;
  s.dir = TempDir();
  s.path = s.dir + "/" + kShardName;
  s.rows = rows;
  s.bytes.assign(8, 0);
  for (int i = 0; i < 8; ++i) s.bytes[i] = static_cast<uint8_t>(header_len >> (8 * i));
  for (uint64_t i = 0; i < header_len; ++i) s.bytes.push_back(static_cast<uint8_t>('a' + i % 26));
  s.header_bytes = s.bytes.size();
  for (uint64_t t = 0; t < rows.size(); ++t) {
    s.weight_offset.push_back(s.bytes.size());
    for (uint64_t r = 0; r < rows[t]; ++r)
      for (uint64_t c = 0; c < s.dim; ++c) s.bytes.push_back(Byte(t, r, c));
    s.scale_offset.push_back(s.bytes.size());
    for (uint64_t r = 0; r < rows[t]; ++r)
      for (uint64_t c = 0; c < s.dim / 32; ++c) s.bytes.push_back(Byte(t + 7, r, c));
  }
  WriteAll(s.path, s.bytes);
  return s;
}

SparseShardJob MakeJob(const Shard& s, const Out& out, std::vector<std::pair<uint64_t, uint64_t>> ranges,
                       uint64_t chunk_rows) {
  SparseShardJob job;
  job.source_path = s.path;
  job.source_bytes = s.bytes.size();
  job.header_bytes = s.header_bytes;
  job.header_crc = Crc32(0, s.bytes.data(), s.header_bytes);
  for (size_t t = 0; t < ranges.size(); ++t) {
    job.tables.push_back(
        {s.weight_offset[t], s.scale_offset[t], s.dim, {ranges[t].first, ranges[t].second}, chunk_rows});
  }
  SetFileJob(&job.file, out, "sparse-test");
  return job;
}

// The copy holds the header and each table's rows at their offsets, zeros elsewhere.
bool CopyIsRight(const Shard& s, const SparseShardJob& job, const std::string& path) {
  auto got = ReadAll(path);
  if (got.size() != s.bytes.size()) return false;
  std::vector<uint8_t> want(s.bytes.size(), 0);
  std::copy(s.bytes.begin(), s.bytes.begin() + s.header_bytes, want.begin());
  for (const auto& t : job.tables) {
    const uint64_t sb = t.dim / 32;
    for (uint64_t at = t.weight_offset + t.rows.start * t.dim; at < t.weight_offset + t.rows.end * t.dim; ++at) {
      want[at] = s.bytes[at];
    }
    for (uint64_t at = t.scale_offset + t.rows.start * sb; at < t.scale_offset + t.rows.end * sb; ++at)
      want[at] = s.bytes[at];
  }
  return got == want;
}

// Chunk k's checksum as the manifest defines it: CRC-32 of the weight bytes, then the scale bytes.
uint32_t ChunkCrc(const Shard& s, const SparseTable& t, uint64_t a, uint64_t b) {
  uint32_t crc = Crc32(0, s.bytes.data() + t.weight_offset + a * t.dim, (b - a) * t.dim);
  return Crc32(crc, s.bytes.data() + t.scale_offset + a * (t.dim / 32), (b - a) * (t.dim / 32));
}

}  // namespace

TEST(SparseCopyKeepsOffsetsHeaderAndHoles) {
  // 4 MiB of rows of table 0 on either side of the copied range: whole holes to find.
  Shard s = MakeShard({200000, 50000});
  auto out = MakeOut(kShardName);
  SparseShardJob job = MakeJob(s, *out, {{70000, 130001}, {0, 12345}}, 4096);
  PackProgress progress;
  PackResult r;
  Status st = PackSparseShard(job, &progress, &r);
  if (!st.ok()) std::printf("  %s\n", st.ToString().c_str());
  CHECK(st.ok());
  CHECK(CopyIsRight(s, job, out->path()));
  CHECK_EQ(r.crcs.size(), SparseChunkCount(job.tables[0]) + SparseChunkCount(job.tables[1]));
  // O_DIRECT wherever the filesystem allows it (the holes are checked below either way).
  CHECK_EQ(r.read_io, std::string(IoModeName(spark_test::DirectAllowedIn(DirName(s.path)))));
  CHECK_EQ(r.write_io, std::string(IoModeName(spark_test::DirectAllowedIn(out->dir.path()))));
  CHECK_EQ(r.crcs[0], ChunkCrc(s, job.tables[0], 70000, 74096));
  CHECK_EQ(SparseChunkCount(job.tables[0]), 15u);
  CHECK_EQ(r.crcs[14], ChunkCrc(s, job.tables[0], 70000 + 14 * 4096, 130001));
  CHECK_EQ(r.crcs.back(), ChunkCrc(s, job.tables[1], 12288, 12345));
  struct stat sb;
  CHECK_EQ(::stat(out->path().c_str(), &sb), 0);
  uint64_t rows_bytes = (60001 + 12345) * (64 + 2) + s.header_bytes;
  uint64_t allocated = static_cast<uint64_t>(sb.st_blocks) * 512;
  CHECK(allocated >= rows_bytes);
  CHECK(allocated < rows_bytes + 6 * 4096 + 65536);  // block edges of 5 runs, some slack
  CHECK(allocated * 2 < s.bytes.size());
  CHECK_EQ(progress.bytes_done.load(), (60001 + 12345) * 66);
}

TEST(SparseResumeKeepsCheckedChunksAndRedoesDamagedOnes) {
  Shard s = MakeShard({30000, 9000});
  auto out = MakeOut(kShardName);
  SparseShardJob job = MakeJob(s, *out, {{1000, 29000}, {100, 9000}}, 1000);  // 28 + 9 chunks
  job.file.fault_after_chunks = 20;
  PackProgress progress;
  PackResult first;
  Status st = PackSparseShard(job, &progress, &first);
  CheckResumableIoError(st);
  CHECK(first.chunks_written >= 1 && first.chunks_written <= 20);
  // Damage one byte of one committed chunk (table 0's chunk 0: its first weight byte).
  std::string partial = out->partial();
  auto data = ReadAll(partial);
  bool first_committed = first.crcs[0] != 0;
  data[s.weight_offset[0] + 1000 * 64] ^= 0x10;
  WriteAll(partial, data);
  job.file.fault_after_chunks = 0;
  PackResult second;
  CHECK(PackSparseShard(job, &progress, &second).ok());
  CHECK_EQ(second.chunks_kept + second.chunks_written, 37u);
  CHECK_EQ(second.chunks_rejected, first_committed ? 1u : 0u);
  CHECK_EQ(second.chunks_kept, first.chunks_written - second.chunks_rejected);
  CHECK(CopyIsRight(s, job, out->path()));
  // A finished copy without its manifest: re-checked, not rewritten.
  PackResult third;
  CHECK(PackSparseShard(job, &progress, &third).ok());
  CHECK(third.was_complete);
  CHECK_EQ(third.chunks_written, 0u);
  CHECK(third.crcs == second.crcs);
}

TEST(SparseSourceChangesAreRefused) {
  Shard s = MakeShard({5000});
  auto out = MakeOut(kShardName);
  SparseShardJob job = MakeJob(s, *out, {{0, 5000}}, 512);
  job.header_crc ^= 1;
  PackProgress progress;
  PackResult r;
  Status st = PackSparseShard(job, &progress, &r);
  CHECK(st.code == Code::E_SOURCE_CHANGED);
  CHECK(!PathExists(out->partial()));
  job = MakeJob(s, *out, {{0, 5000}}, 512);
  job.source_bytes += 1;
  CHECK(PackSparseShard(job, &progress, &r).code == Code::E_SOURCE_CHANGED);
  job = MakeJob(s, *out, {{0, 5001}}, 512);  // a row past the tensor's end is past the file
  CHECK(PackSparseShard(job, &progress, &r).code == Code::E_SOURCE_CHANGED);
  job = MakeJob(s, *out, {{0, 5000}}, 512);
  job.tables[0].weight_offset = ~uint64_t{0} - 10;  // overflow: refused, no crash
  CHECK(PackSparseShard(job, &progress, &r).code == Code::E_SOURCE_CHANGED);
  job = MakeJob(s, *out, {{0, 5000}}, 0);
  CHECK(PackSparseShard(job, &progress, &r).code == Code::E_USAGE);
}

TEST(LinksWhereThePackWritesAreRefusedAndTheirTargetsUntouched) {
  Shard s = MakeShard({3000});
  const std::string names[] = {"model-00002-of-00002.safetensors", "model-00002-of-00002.safetensors.partial",
                               "model-00002-of-00002.safetensors.journal"};
  for (const auto& name : names) {
    for (bool hard : {false, true}) {
      auto out = MakeOut(kShardName);
      std::string victim = TempDir() + "/victim";
      WriteAll(victim, {'k', 'e', 'e', 'p'});
      std::string at = out->dir.PathOf(name);
      CHECK_EQ(hard ? ::link(victim.c_str(), at.c_str()) : ::symlink(victim.c_str(), at.c_str()), 0);
      SparseShardJob job = MakeJob(s, *out, {{0, 3000}}, 256);
      PackProgress progress;
      PackResult r;
      Status st = PackSparseShard(job, &progress, &r);
      CHECK(st.code == Code::E_UNSAFE_PATH);
      CHECK_EQ(st.path, at);
      if (st.path != at)
        std::printf("  %s (%s): %s\n", name.c_str(), hard ? "hard" : "symbolic", st.ToString().c_str());
      CHECK((ReadAll(victim) == std::vector<uint8_t>{'k', 'e', 'e', 'p'}));
    }
  }
}

TEST(AtomicWritesAndRemovalsRefuseLinks) {
  auto out = MakeOut(kShardName);
  std::string victim = TempDir() + "/victim";
  WriteAll(victim, {'v'});
  CHECK_EQ(::symlink(victim.c_str(), out->dir.PathOf("m.json.tmp").c_str()), 0);
  Status st = out->dir.WriteFileAtomic("m.json", "{}", 2);
  CHECK(st.code == Code::E_UNSAFE_PATH);
  CHECK(st.message.find("symbolic link") != std::string::npos);
  CHECK(out->dir.Remove("m.json.tmp").code == Code::E_UNSAFE_PATH);
  ::unlink(out->dir.PathOf("m.json.tmp").c_str());
  CHECK_EQ(::symlink(victim.c_str(), out->dir.PathOf("m.json").c_str()), 0);
  CHECK(out->dir.WriteFileAtomic("m.json", "{}", 2).code == Code::E_UNSAFE_PATH);
  CHECK((ReadAll(victim) == std::vector<uint8_t>{'v'}));
  std::string text;
  bool exists = false;
  CHECK(out->dir.ReadSmallFile("m.json", 100, &text, &exists).code == Code::E_UNSAFE_PATH);
  ::unlink(out->dir.PathOf("m.json").c_str());
  CHECK(out->dir.WriteFileAtomic("m.json", "{\"a\":1}", 7).ok());
  CHECK(out->dir.ReadSmallFile("m.json", 100, &text, &exists).ok());
  CHECK(exists && text == "{\"a\":1}");
  CHECK(!PathExists(out->dir.PathOf("m.json.tmp")));
  CHECK(out->dir.ReadSmallFile("m.json", 3, &text, &exists).code == Code::E_PACK_MANIFEST);
  CHECK(out->dir.ReadSmallFile("absent", 3, &text, &exists).ok() && !exists);
  CHECK(out->dir.Remove("../escape").code == Code::E_USAGE);
}

TEST(HoleProbeTellsSparseFilesFromFilledOnes) {
  auto out = MakeOut(kShardName);
  HoleProbe sparse, filled;
  CHECK(ProbeHoles(out->dir, false, &sparse).ok());
  CHECK(ProbeHoles(out->dir, true, &filled).ok());
  CHECK(sparse.holes());  // /tmp is ext4 or tmpfs here: both keep holes
  CHECK(!filled.holes());
  CHECK(filled.allocated >= filled.apparent);
  CHECK(!PathExists(out->dir.PathOf(kHoleProbeName)));
}

TEST(RateLimiterSpacesTransfers) {
  RateLimiter limit(20'000'000);  // 20 MB/s: 5 transfers of 1 MB take at least 0.2 s
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) limit.Acquire(1'000'000);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(s >= 0.19);
  CHECK(s < 2.0);
  RateLimiter none;
  t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000; ++i) none.Acquire(1'000'000'000);
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 0.1);
}

int main() { return spark_test::RunAll("pack_sparse_test"); }
