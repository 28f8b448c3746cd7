#include "core/pack/pack.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/base/crc32.h"
#include "core/pack/pack_format.h"
#include "core/pack/pack_journal.h"
#include "core/pack/verify.h"
#include "core/threads/thread_pool.h"
#include "test/direct_probe.h"
#include "test/pack_fixtures.h"
#include "test/testing.h"

using namespace spark;
using namespace pack_test;
using spark_test::DirectAllowedIn;
using spark_test::IsTmpfs;

namespace {

// A fake shard: `lead` bytes of header (not page aligned), weight [n, dim], then scale [n, dim/32].
struct Source {
  std::string dir, path;
  uint64_t rows = 0, dim = 0, lead = 0;
  uint64_t weight_offset() const { return lead; }
  uint64_t scale_offset() const { return lead + rows * dim; }
};

uint8_t WeightByte(uint64_t row, uint64_t col) { return static_cast<uint8_t>(row * 131 + col * 7 + (row >> 8)); }
uint8_t ScaleByte(uint64_t row, uint64_t col) { return static_cast<uint8_t>(0x70 + ((row + col) % 17)); }

Source MakeSource(uint64_t rows, uint64_t dim, uint64_t lead = 664) {
  Source s;
  s.dir = TempDir();
  s.path = s.dir + "/model.safetensors";
  s.rows = rows;
  s.dim = dim;
  s.lead = lead;
  std::vector<uint8_t> bytes(lead, 0x20);
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t c = 0; c < dim; ++c) bytes.push_back(WeightByte(r, c));
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t c = 0; c < dim / 32; ++c) bytes.push_back(ScaleByte(r, c));
  std::ofstream(s.path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return s;
}

// The key the journal of the file at `path` is written under.
std::string KeyOnDisk(const std::string& job_key, const std::string& path) {
  struct stat st;
  CHECK_EQ(::stat(path.c_str(), &st), 0);
  return FileJournalKey(job_key, st.st_dev, st.st_ino);
}

PackJob MakeJob(const Source& src, uint64_t start, uint64_t count, PackLayout layout, uint64_t chunk_rows,
                const Out& out) {
  PackJob job;
  job.weight = {src.path, src.weight_offset()};
  job.scale = {src.path, src.scale_offset()};
  job.start = start;
  Status s = PackGeometry::Make(count, src.dim, layout, chunk_rows, &job.geometry);
  CHECK(s.ok());
  job.header = std::string(kPackHeaderBytes, '\0');
  const std::string tag = LayoutName(layout);
  std::copy(tag.begin(), tag.end(), job.header.begin());  // any bytes: the block is written as given
  SetFileJob(&job.file, out, "key-" + std::to_string(start) + "-" + std::to_string(count) + LayoutName(layout));
  return job;
}

// Every row of the packed file equals the source; padding is zero; header as given.
bool PackedFileIsRight(const PackJob& job, const Source& src) {
  auto bytes = ReadAll(job.file.dir->PathOf(job.file.name));
  const PackGeometry& g = job.geometry;
  if (bytes.size() != g.file_bytes()) return false;
  if (std::string(bytes.begin(), bytes.begin() + kPackHeaderBytes) != job.header) return false;
  std::vector<uint8_t> expect(g.data_bytes(), 0);
  for (uint64_t i = 0; i < g.rows(); ++i) {
    uint64_t off = g.RowOffset(i);
    for (uint64_t c = 0; c < g.dim(); ++c) expect[off + c] = WeightByte(job.start + i, c);
    for (uint64_t c = 0; c < g.scale_bytes(); ++c) expect[off + g.dim() + c] = ScaleByte(job.start + i, c);
  }
  (void)src;
  return std::equal(expect.begin(), expect.end(), bytes.begin() + kPackHeaderBytes);
}

// Packs `job` and checks that it succeeded.
PackResult PackOk(const PackJob& job) {
  PackProgress progress;
  PackResult r;
  CHECK(PackLayer(job, &progress, &r).ok());
  return r;
}

// How a pack treated the chunks of the file it found: kept from the journal, rejected by the
// re-check, written anew. Prints the three counts when they are not the ones expected.
bool ChunksAre(const PackResult& r, uint64_t kept, uint64_t rejected, uint64_t written) {
  if (r.chunks_kept == kept && r.chunks_rejected == rejected && r.chunks_written == written) return true;
  std::printf("  chunks kept %llu rejected %llu written %llu\n", static_cast<unsigned long long>(r.chunks_kept),
              static_cast<unsigned long long>(r.chunks_rejected), static_cast<unsigned long long>(r.chunks_written));
  return false;
}

VerifyJob VerifyFor(const PackJob& job, const PackResult& r) {
  VerifyJob v;
  v.path = job.file.dir->PathOf(job.file.name);
  v.geometry = job.geometry;
  v.header = job.header;
  v.crcs = r.crcs;
  v.threads = 2;
  v.weight = job.weight;
  v.scale = job.scale;
  v.start = job.start;
  return v;
}

}  // namespace

TEST(GeometryDenseAndPage) {
  PackGeometry d, p;
  CHECK(PackGeometry::Make(100, 256, PackLayout::kDense, 16, &d).ok());
  CHECK_EQ(d.row_bytes(), 264u);
  CHECK_EQ(d.data_bytes(), 26400u);
  CHECK_EQ(d.chunk_count(), 7u);
  CHECK_EQ(d.Chunk(6).rows, 4u);
  CHECK_EQ(d.Chunk(6).offset, 96u * 264);
  CHECK(PackGeometry::Make(100, 256, PackLayout::kPage, 30, &p).ok());
  CHECK_EQ(p.rows_per_page(), 15u);
  CHECK_EQ(p.data_bytes(), 7u * 4096);  // 100 rows -> 7 pages, the last one padded
  CHECK_EQ(p.RowOffset(16), 4096u + 264);
  CHECK_EQ(p.Chunk(3).offset, 6u * 4096);
  CHECK_EQ(p.Chunk(3).bytes, 4096u);
  PackGeometry bad;
  CHECK(!PackGeometry::Make(100, 256, PackLayout::kPage, 16, &bad).ok());  // not a page multiple
  CHECK(!PackGeometry::Make(100, 100, PackLayout::kDense, 16, &bad).ok());
  CHECK(!PackGeometry::Make(100, 8192, PackLayout::kPage, 15, &bad).ok());
  CHECK(!PackGeometry::Make(~uint64_t{0} / 2, 256, PackLayout::kDense, 16, &bad).ok());
}

TEST(PacksBothLayoutsByteExact) {
  Source src = MakeSource(1000, 64);
  for (PackLayout layout : {PackLayout::kDense, PackLayout::kPage}) {
    uint64_t chunk = layout == PackLayout::kPage ? (4096 / 66) * 3 : 64;  // 62 rows of 66 bytes per page
    auto out = MakeOut(std::string("out-") + LayoutName(layout) + ".bin");
    PackJob job = MakeJob(src, 123, 700, layout, chunk, *out);
    PackProgress progress;
    PackResult r;
    Status s = PackLayer(job, &progress, &r);
    CHECK(s.ok());
    if (!s.ok()) std::printf("  %s\n", s.ToString().c_str());
    CHECK(PackedFileIsRight(job, src));
    CHECK(!PathExists(out->partial()));
    CHECK(PathExists(out->journal()));
    CHECK_EQ(r.chunks_written, job.geometry.chunk_count());
    CHECK_EQ(progress.bytes_done.load(), job.geometry.data_bytes());
    auto bytes = ReadAll(out->path());
    for (uint64_t k = 0; k < job.geometry.chunk_count(); ++k) {
      ChunkSpan span = job.geometry.Chunk(k);
      CHECK_EQ(r.crcs[k], Crc32(0, bytes.data() + kPackHeaderBytes + span.offset, span.bytes));
    }
    VerifyJob v = VerifyFor(job, r);
    v.all_rows = true;
    v.has_source = true;
    VerifyProgress vp;
    VerifyResult vr;
    CHECK(VerifyLayer(v, &vp, &vr).ok());
    CHECK(vr.size_ok && vr.header_ok);
    CHECK_EQ(vr.bad_chunk_count, 0u);
    CHECK_EQ(vr.rows_compared, 700u);
    CHECK_EQ(vr.bad_row_count, 0u);
  }
}

TEST(ResumeKeepsGoodChunksAndRedoesBadOnes) {
  Source src = MakeSource(500, 32);
  auto out = MakeOut("l.bin");
  PackJob job = MakeJob(src, 0, 500, PackLayout::kDense, 40, *out);
  PackResult first = PackOk(job);
  // Make it look interrupted: back to .partial, journal cut to 6 records plus a torn tail,
  // one journaled chunk damaged on disk, one unjournaled chunk garbage.
  CHECK_EQ(::rename(out->path().c_str(), out->partial().c_str()), 0);
  auto journal = ReadAll(out->journal());
  if (journal.size() < 13 * 16) {
    CHECK(journal.size() >= 13 * 16);  // the journal of 13 chunks, read back
    return;
  }
  uint64_t records_at = journal.size() - 13 * 16;
  journal.resize(records_at + 6 * 16 + 7);
  WriteAll(out->journal(), journal);
  std::vector<JournalRecord> kept;
  bool matches = false;
  CHECK(
      PackJournal::Read(out->dir, JournalName(out->name), KeyOnDisk(job.file.key, out->partial()), 13, &kept, &matches)
          .ok());
  CHECK(matches);
  CHECK_EQ(kept.size(), 6u);
  auto data = ReadAll(out->partial());
  uint64_t damaged = kept[2].chunk;
  data[kPackHeaderBytes + job.geometry.Chunk(damaged).offset + 5] ^= 0x40;
  for (uint64_t k = 0; k < 13; ++k) {
    bool journaled = false;
    for (auto& r : kept) journaled |= r.chunk == k;
    if (!journaled) data[kPackHeaderBytes + job.geometry.Chunk(k).offset] ^= 0xff;
  }
  WriteAll(out->partial(), data);
  PackResult second = PackOk(job);
  CHECK(ChunksAre(second, 5, 1, 8));
  CHECK(second.crcs == first.crcs);
  CHECK(PackedFileIsRight(job, src));
}

TEST(FinishedFileWithoutManifestIsRecheckedNotRewritten) {
  Source src = MakeSource(300, 32);
  auto out = MakeOut("l.bin");
  PackJob job = MakeJob(src, 10, 280, PackLayout::kPage, 124, *out);
  PackResult first = PackOk(job);
  PackResult second = PackOk(job);
  CHECK(second.was_complete);
  CHECK(ChunksAre(second, job.geometry.chunk_count(), 0, 0));
  CHECK(PackedFileIsRight(job, src));
}

TEST(TheJournalClaimsOnlyTheFileItWasWrittenFor) {
  Source src = MakeSource(300, 32);
  auto out = MakeOut("l.bin");
  PackJob job = MakeJob(src, 0, 300, PackLayout::kDense, 50, *out);
  PackOk(job);  // finished: the data file and its journal, no manifest yet
  const std::string jname = JournalName(out->name);
  JournalClaim c;
  CHECK(PackJournal::Claim(out->dir, jname, out->name, &c).ok());
  CHECK(c.journal && c.names_file);
  // Another tool's file under the name (same bytes, another inode): the journal does not name it.
  auto bytes = ReadAll(out->path());
  WriteAll(out->path() + ".theirs", bytes);
  CHECK_EQ(::rename((out->path() + ".theirs").c_str(), out->path().c_str()), 0);
  CHECK(PackJournal::Claim(out->dir, jname, out->name, &c).ok());
  CHECK(c.journal && !c.names_file);
  // A journal for other parameters still is spark's; it names its file all the same.
  CHECK(PackJournal::Claim(out->dir, jname, PartialName(out->name), &c).ok());
  CHECK(c.journal && !c.names_file);  // no .partial there
  // Not a journal spark wrote: a torn header, another magic, an empty file.
  auto journal = ReadAll(out->journal());
  for (size_t cut : {size_t{0}, size_t{12}, size_t{20}}) {
    WriteAll(out->journal(), std::vector<uint8_t>(journal.begin(), journal.begin() + cut));
    CHECK(PackJournal::Claim(out->dir, jname, out->name, &c).ok());
    CHECK(!c.journal && !c.names_file);
  }
  auto other = journal;
  other[0] = 'X';
  WriteAll(out->journal(), other);
  CHECK(PackJournal::Claim(out->dir, jname, out->name, &c).ok());
  CHECK(!c.journal);
  other = journal;
  other[20] ^= 1;  // a key byte: its checksum fails
  WriteAll(out->journal(), other);
  CHECK(PackJournal::Claim(out->dir, jname, out->name, &c).ok());
  CHECK(!c.journal);
  // No journal: nothing is proven; a link at either name is refused, never followed.
  CHECK_EQ(::unlink(out->journal().c_str()), 0);
  CHECK(PackJournal::Claim(out->dir, jname, out->name, &c).ok());
  CHECK(!c.journal && !c.names_file);
  CHECK_EQ(::symlink(out->path().c_str(), out->journal().c_str()), 0);
  CHECK(PackJournal::Claim(out->dir, jname, out->name, &c).code == Code::E_UNSAFE_PATH);
}

TEST(ChangedParametersDiscardTheJournal) {
  Source src = MakeSource(300, 32);
  auto out = MakeOut("l.bin");
  PackJob job = MakeJob(src, 0, 300, PackLayout::kDense, 50, *out);
  PackOk(job);
  CHECK_EQ(::rename(out->path().c_str(), out->partial().c_str()), 0);
  job.file.key += "-other-source-mtime";
  PackResult r = PackOk(job);
  CHECK(r.journal_discarded);
  CHECK(ChunksAre(r, 0, 0, job.geometry.chunk_count()));
  CHECK(PackedFileIsRight(job, src));
}

TEST(AnIoErrorMidPackKeepsWhatWasCommittedAndResumes) {
  Source src = MakeSource(2000, 32);
  auto out = MakeOut("l.bin");
  PackJob job = MakeJob(src, 0, 2000, PackLayout::kDense, 50, *out);  // 40 chunks
  job.file.fault_after_chunks = 17;
  PackProgress progress;
  PackResult r;
  Status s = PackLayer(job, &progress, &r);
  CheckResumableIoError(s);
  CHECK(s.message.find("Input/output error") != std::string::npos);
  CHECK(!PathExists(out->path()));
  CHECK(PathExists(out->partial()));
  CHECK(r.chunks_written <= 17);
  CHECK(r.chunks_written >= 1);
  uint64_t committed = r.chunks_written;
  job.file.fault_after_chunks = 0;
  PackResult again = PackOk(job);
  CHECK(ChunksAre(again, committed, 0, 40 - committed));
  CHECK(PackedFileIsRight(job, src));
}

TEST(ShortSourceIsRefused) {
  Source src = MakeSource(100, 32);
  auto out = MakeOut("l.bin");
  PackJob job = MakeJob(src, 50, 60, PackLayout::kDense, 16, *out);  // rows 50..110 of 100
  job.scale.offset = src.scale_offset() + 1000;
  PackProgress progress;
  PackResult r;
  Status s = PackLayer(job, &progress, &r);
  CHECK(s.code == Code::E_SOURCE_CHANGED);
  CHECK(!PathExists(out->partial()));
}

TEST(VerifyNamesFlippedChunkTruncationHeaderAndRows) {
  Source src = MakeSource(400, 64);
  auto out = MakeOut("l.bin");
  PackJob job = MakeJob(src, 0, 400, PackLayout::kDense, 32, *out);
  PackResult r = PackOk(job);
  auto good = ReadAll(out->path());
  if (good.size() < 16 * 66 + 100) {
    CHECK(good.size() >= 16 * 66 + 100);  // the packed layer, read back
    return;
  }
  VerifyProgress vp;
  VerifyResult vr;
  // One flipped byte in chunk 5 (row 5*32+3).
  auto bytes = good;
  bytes[kPackHeaderBytes + job.geometry.RowOffset(5 * 32 + 3) + 65] ^= 1;  // its last scale byte
  WriteAll(out->path(), bytes);
  VerifyJob v = VerifyFor(job, r);
  v.has_source = true;
  v.all_rows = true;
  CHECK(VerifyLayer(v, &vp, &vr).ok());
  CHECK_EQ(vr.bad_chunk_count, 1u);
  CHECK(vr.bad_chunks == std::vector<uint64_t>{5});
  CHECK(vr.bad_rows == std::vector<uint64_t>{163});
  v.all_rows = false;
  v.sample_rows = {0, 163, 399};
  CHECK(VerifyLayer(v, &vp, &vr).ok());
  CHECK(vr.bad_rows == std::vector<uint64_t>{163});
  CHECK_EQ(vr.rows_compared, 3u);
  // A flipped header byte.
  bytes = good;
  bytes[3] ^= 0x20;
  WriteAll(out->path(), bytes);
  v = VerifyFor(job, r);
  CHECK(VerifyLayer(v, &vp, &vr).ok());
  CHECK(!vr.header_ok);
  CHECK_EQ(vr.bad_chunk_count, 0u);
  // Truncated: the size is wrong and the cut chunks are bad.
  bytes = good;
  bytes.resize(bytes.size() - (16 * 66 + 100));  // all of the last chunk (16 rows), 100 bytes of chunk 11
  WriteAll(out->path(), bytes);
  CHECK(VerifyLayer(v, &vp, &vr).ok());
  CHECK(!vr.size_ok);
  CHECK(vr.header_ok);
  CHECK_EQ(vr.bad_chunk_count, 2u);
  CHECK(vr.bad_chunks == (std::vector<uint64_t>{11, 12}));
  // No checksums to check (a shard without a manifest): the rows are still compared.
  v.check_chunks = false;
  v.crcs.clear();
  v.has_source = true;
  v.all_rows = true;
  CHECK(VerifyLayer(v, &vp, &vr).ok());
  CHECK_EQ(vr.bad_chunk_count, 0u);
  CHECK(vr.bad_row_count > 0);
  // A header block of any other size is refused, never padded.
  v.header = "{}";
  CHECK(!VerifyLayer(v, &vp, &vr).ok());
}

// 264-byte rows (dim 256), a tensor at an odd offset, a range starting at an odd row and
// chunks of 100 rows: every chunk starts and ends off a block boundary, in the source and in
// the pack. Packs it under each I/O mode; the bytes must not depend on the mode, and the
// result must say which mode was taken: direct wherever the filesystem allows it.
TEST(PacksDirectWhereAllowedBufferedWhereNotByteExact) {
  Source src = MakeSource(3000, 256, 4097);
  const bool shm = IsTmpfs("/dev/shm");
  Source shm_src = src;
  if (shm) {
    shm_src.dir = TempDir("/dev/shm");
    shm_src.path = shm_src.dir + "/model.safetensors";
    WriteAll(shm_src.path, ReadAll(src.path));
  }
  struct Case {
    const char* what;
    const Source* source;
    std::string out_parent;
    bool direct_io;
    DirectRefusal refusal;
  };
  std::vector<Case> cases = {{"direct", &src, "/tmp", true, DirectRefusal::kNone},
                             {"buffered by request", &src, "/tmp", false, DirectRefusal::kNone},
                             {"refused at open", &src, "/tmp", true, DirectRefusal::kAtOpen},
                             {"refused at the first write", &src, "/tmp", true, DirectRefusal::kAtTransfer}};
  if (shm) {
    // tmpfs takes O_DIRECT since Linux 6.6, refuses it before: whichever, the result must say.
    cases.push_back({"output on tmpfs", &src, "/dev/shm", true, DirectRefusal::kNone});
    cases.push_back({"source on tmpfs", &shm_src, "/tmp", true, DirectRefusal::kNone});
  } else {
    std::printf("  (/dev/shm is not tmpfs here: the tmpfs cases are skipped)\n");
  }
  for (const auto& c : cases) {
    auto out = MakeOut("l.bin", c.out_parent);
    PackJob job = MakeJob(*c.source, 7, 2893, PackLayout::kDense, 100, *out);
    job.file.direct_io = c.direct_io;
    job.file.direct_refusal_for_tests = c.refusal;
    PackProgress progress;
    PackResult r;
    Status s = PackLayer(job, &progress, &r);
    if (!s.ok()) std::printf("  %s: %s\n", c.what, s.ToString().c_str());
    CHECK(s.ok());
    CHECK(PackedFileIsRight(job, *c.source));
    const bool usable = c.direct_io && c.refusal == DirectRefusal::kNone;
    const bool read_direct = usable && DirectAllowedIn(c.source->dir);
    const bool write_direct = usable && DirectAllowedIn(out->dir.path());
    std::printf("  %s: read %s, write %s\n", c.what, r.read_io.c_str(), r.write_io.c_str());
    CHECK_EQ(r.read_io, std::string(IoModeName(read_direct)));
    CHECK_EQ(r.write_io, std::string(IoModeName(write_direct)));
    VerifyJob v = VerifyFor(job, r);
    v.has_source = true;
    v.all_rows = true;
    v.direct_io = usable;
    VerifyProgress vp;
    VerifyResult vr;
    CHECK(VerifyLayer(v, &vp, &vr).ok());
    CHECK_EQ(vr.bad_chunk_count, 0u);
    CHECK_EQ(vr.bad_row_count, 0u);
    CHECK_EQ(vr.rows_compared, 2893u);
    // The verifier reads the pack and the source: direct only if both allow it.
    CHECK_EQ(vr.read_io,
             std::string(IoModeName(usable && DirectAllowedIn(out->dir.path()) && DirectAllowedIn(c.source->dir))));
    if (c.out_parent == "/dev/shm") std::filesystem::remove_all(out->dir.path());  // memory, not disk
  }
  if (shm) std::filesystem::remove_all(shm_src.dir);
}

// The limiter is asked for each chunk's bytes before its read starts, read-ahead included:
// 16 chunks of 67,584 bytes at 2 MB/s cannot take less than 15 chunks' worth of time.
TEST(RateLimitHoldsThePackToItsRate) {
  Source src = MakeSource(4096, 256);
  auto out = MakeOut("l.bin");
  PackJob job = MakeJob(src, 0, 4096, PackLayout::kDense, 256, *out);
  RateLimiter rate(2'000'000);
  job.file.rate = &rate;
  PackProgress progress;
  PackResult r;
  auto t0 = std::chrono::steady_clock::now();
  CHECK(PackLayer(job, &progress, &r).ok());
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("  16 chunks at 2 MB/s: %.2f s\n", seconds);
  CHECK(seconds >= 15.0 * 67584 / 2e6 * 0.98);
  CHECK_EQ(r.chunks_written, 16u);
  CHECK(PackedFileIsRight(job, src));
}

int main() { return spark_test::RunAll("pack_test"); }
