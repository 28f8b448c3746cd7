// Holes (core/holes.h) and the overlay's mmap gather (core/mmap_gather.h) on sparse files
// written here: a file of kFileBytes with data only in [kDataAt, kDataAt + kDataBytes).
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/holes.h"
#include "core/mmap_gather.h"
#include "core/thread_pool.h"
#include "test/scratch.h"
#include "test/testing.h"

namespace {

using spark::Code;
using spark::HoleRule;

constexpr uint64_t kFileBytes = 64 << 20;
constexpr uint64_t kDataAt = 16 << 20;
constexpr uint64_t kDataBytes = 1 << 20;

std::string SparseFile(const char* name) {
  static std::string dir = spark_test::ScratchDir("/tmp", "sparse_test");
  std::string path = dir + "/" + name;
  int fd = open(path.c_str(), O_CREAT | O_TRUNC | O_RDWR, 0644);
  CHECK(fd >= 0);
  CHECK_EQ(ftruncate(fd, kFileBytes), 0);
  std::vector<uint8_t> data(kDataBytes);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 131 + 7);
  CHECK_EQ(pwrite(fd, data.data(), data.size(), kDataAt), static_cast<ssize_t>(data.size()));
  close(fd);
  return path;
}

TEST(FirstHoleFindsTheHoleAfterData) {
  std::string path = SparseFile("a");
  int fd = open(path.c_str(), O_RDONLY);
  std::optional<uint64_t> hole;
  CHECK(spark::FirstHole(fd, kDataAt, kDataAt + kDataBytes, path, &hole).ok());
  CHECK(!hole.has_value());
  CHECK(spark::FirstHole(fd, kDataAt + 100, kDataAt + kDataBytes + 1, path, &hole).ok());
  CHECK(hole.has_value() && *hole >= kDataAt + kDataBytes);
  CHECK(spark::FirstHole(fd, 0, 10, path, &hole).ok());
  CHECK(hole.has_value() && *hole == 0);
  CHECK(spark::FirstHole(fd, kFileBytes + 5, kFileBytes + 10, path, &hole).ok());  // past the end: nothing there
  CHECK(hole.has_value() && *hole == kFileBytes + 5);
  CHECK(spark::FirstHole(fd, 7, 7, path, &hole).ok());  // empty range
  CHECK(!hole.has_value());
  close(fd);
}

TEST(ColumnHoleRules) {
  std::string path = SparseFile("b");
  int fd = open(path.c_str(), O_RDONLY);
  // Rows of 256 bytes from base kDataAt: rows [0, 4096) are data, row 4096 on is a hole.
  CHECK(spark::CheckColumnHoles(fd, path, 1, "weight", kDataAt, 256, 0, 4096, HoleRule::kCorrupt).ok());
  spark::Status st = spark::CheckColumnHoles(fd, path, 1, "weight", kDataAt, 256, 10, 5000, HoleRule::kCorrupt);
  CHECK_EQ(st.code, Code::E_SHARD_TRUNCATED);
  CHECK(st.message.find("weight of row 4096 is a hole inside the copy's range [10, 5000)") != std::string::npos);
  CHECK(st.has_offset && st.offset == kDataAt + kDataBytes);
  st = spark::CheckColumnHoles(fd, path, 14, "scale", 0, 8, 0, 100, HoleRule::kRefuse);
  CHECK_EQ(st.code, Code::E_SNAPSHOT);
  CHECK(st.message.find("layer 14: scale of row 0 is a hole") != std::string::npos);
  CHECK(spark::CheckColumnHoles(fd, path, 14, "scale", 0, 8, 0, 100, HoleRule::kAllow).ok());
  st = spark::CheckColumnHoles(fd, path, 1, "weight", UINT64_MAX - 10, 256, 0, 100, HoleRule::kCorrupt);
  CHECK_EQ(st.code, Code::E_USAGE);  // offsets overflow: refused, not wrapped
  close(fd);
}

TEST(MmapGatherCopiesOwnedRowsAndZeroesTheRest) {
  std::string path = SparseFile("c");
  // A table of 1000 rows of dim 64 (66-byte rows): weight at kDataAt, scale right after.
  spark::MmapTable t;
  t.layer = 3;
  t.rows = 1000;
  t.dim = 64;
  t.weight_path = t.scale_path = path;
  t.weight_offset = kDataAt;
  t.scale_offset = kDataAt + 1000 * 64;
  t.lo = 100;
  t.hi = 900;
  std::shared_ptr<spark::MmapGather> g;
  CHECK(spark::MmapGather::Open({t}, {}, &g).ok());
  CHECK_EQ(g->RowBytes(3), 66u);
  CHECK_EQ(g->RowBytes(4), 0u);
  spark::ThreadPool pool(4);
  std::vector<uint64_t> ids;
  for (uint64_t i = 0; i < 300; ++i) ids.push_back((i * 37) % 1000);
  std::vector<uint8_t> out(ids.size() * 66, 0xAB);
  CHECK(g->Gather(pool, 4, 3, ids.data(), ids.size(), out.data(), out.size()).ok());
  uint64_t zeros = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const uint8_t* row = out.data() + i * 66;
    bool owned = ids[i] >= 100 && ids[i] < 900;
    zeros += owned ? 0 : 1;
    for (uint64_t c = 0; c < 66; ++c) {
      uint64_t off = c < 64 ? ids[i] * 64 + c : 1000 * 64 + ids[i] * 2 + (c - 64);
      uint8_t want = owned ? static_cast<uint8_t>(off * 131 + 7) : 0;
      if (row[c] != want) {
        CHECK_EQ(static_cast<int>(row[c]), static_cast<int>(want));
        break;
      }
    }
  }
  CHECK_EQ(g->zero_rows(), zeros);
  CHECK_EQ(g->rows(), ids.size());
  uint64_t past = 1000;
  CHECK_EQ(g->Gather(pool, 4, 3, &past, 1, out.data(), out.size()).code, Code::E_ROW_RANGE);
  CHECK_EQ(g->Gather(pool, 4, 3, ids.data(), ids.size(), out.data(), 10).code, Code::E_USAGE);
  // A table that does not fit in the file is refused at open.
  t.rows = kFileBytes;
  std::shared_ptr<spark::MmapGather> too_big;
  CHECK_EQ(spark::MmapGather::Open({t}, {}, &too_big).code, Code::E_SHARD_TRUNCATED);
  t.rows = UINT64_MAX / 2;  // rows x dim overflows 64 bits: refused, not wrapped
  CHECK_EQ(spark::MmapGather::Open({t}, {}, &too_big).code, Code::E_SHARD_TRUNCATED);
  t.rows = 1000;
  t.hi = 1001;
  CHECK_EQ(spark::MmapGather::Open({t}, {}, &too_big).code, Code::E_USAGE);
  t.hi = 900;
  t.scale_offset = kFileBytes - 10;
  CHECK_EQ(spark::MmapGather::Open({t}, {}, &too_big).code, Code::E_SHARD_TRUNCATED);
}

}  // namespace

int main() { return spark_test::RunAll("sparse"); }
