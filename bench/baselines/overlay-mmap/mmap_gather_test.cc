// The overlay's read path re-implemented as a bench baseline (mmap_gather.h), on a sparse
// file (native/test/sparse_fixtures.h). Built and run by native/test/run.sh.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/threads/thread_pool.h"
#include "mmap_gather.h"
#include "test/sparse_fixtures.h"
#include "test/testing.h"

namespace {

using namespace sparse_fixtures;
using spark::Code;

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
  t.owned = {100, 900};
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
  t.owned.end = 1001;
  CHECK_EQ(spark::MmapGather::Open({t}, {}, &too_big).code, Code::E_USAGE);
  t.owned.end = 900;
  t.scale_offset = kFileBytes - 10;
  CHECK_EQ(spark::MmapGather::Open({t}, {}, &too_big).code, Code::E_SHARD_TRUNCATED);
}

}  // namespace

int main() { return spark_test::RunAll("overlay_mmap_test"); }
