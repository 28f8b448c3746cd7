// Holes (core/io/holes.h) on sparse files written here (test/sparse_fixtures.h).
#include <fcntl.h>
#include <unistd.h>

#include <optional>
#include <string>

#include "core/io/holes.h"
#include "test/sparse_fixtures.h"
#include "test/testing.h"

namespace {

using namespace sparse_fixtures;
using spark::Code;
using spark::HoleRule;

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
  CHECK(spark::CheckColumnHoles(fd, path, 1, "weight", kDataAt, 256, {0, 4096}, HoleRule::kCorrupt).ok());
  spark::Status st = spark::CheckColumnHoles(fd, path, 1, "weight", kDataAt, 256, {10, 5000}, HoleRule::kCorrupt);
  CHECK_EQ(st.code, Code::E_SHARD_TRUNCATED);
  CHECK(st.message.find("weight of row 4096 is a hole inside the copy's range [10, 5000)") != std::string::npos);
  CHECK(st.has_offset && st.offset == kDataAt + kDataBytes);
  st = spark::CheckColumnHoles(fd, path, 14, "scale", 0, 8, {0, 100}, HoleRule::kRefuse);
  CHECK_EQ(st.code, Code::E_SNAPSHOT);
  CHECK(st.message.find("layer 14: scale of row 0 is a hole") != std::string::npos);
  CHECK(spark::CheckColumnHoles(fd, path, 14, "scale", 0, 8, {0, 100}, HoleRule::kAllow).ok());
  st = spark::CheckColumnHoles(fd, path, 1, "weight", UINT64_MAX - 10, 256, {0, 100}, HoleRule::kCorrupt);
  CHECK_EQ(st.code, Code::E_USAGE);  // offsets overflow: refused, not wrapped
  close(fd);
}

}  // namespace

int main() { return spark_test::RunAll("holes_test"); }
