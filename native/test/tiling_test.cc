#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/format/tiling.h"
#include "test/testing.h"

using spark::RowRange;

namespace {

// Deterministic 64-bit generator (splitmix64): the property cases are the same on every run.
uint64_t Next(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

bool Tiles(const std::vector<RowRange>& ranges, uint64_t rows) {
  uint64_t cursor = 0;
  for (const auto& r : ranges) {
    if (r.start != cursor || r.end < r.start) return false;
    cursor = r.end;
  }
  return cursor == rows;
}

std::vector<uint64_t> Boundaries(const std::vector<RowRange>& ranges) {
  std::vector<uint64_t> b;
  for (const auto& r : ranges) b.push_back(r.start);
  b.push_back(ranges.back().end);
  return b;
}

using Cuts = std::vector<uint64_t>;

// The boundaries `tile` (TileFloor or TileFront) draws for `rows` over `world` ranks; empty
// (and a failed check) when it refuses.
Cuts TiledBoundaries(spark::Status (*tile)(uint64_t, uint64_t, std::vector<RowRange>*), uint64_t rows, uint64_t world) {
  std::vector<RowRange> out;
  spark::Status st = tile(rows, world, &out);
  CHECK(st.ok());
  return st.ok() ? Boundaries(out) : Cuts{};
}

}  // namespace

TEST(FloorGivesSGLangBoundariesForTheRealTables) {
  CHECK(TiledBoundaries(spark::TileFloor, 384006168, 4) == (Cuts{0, 96001542, 192003084, 288004626, 384006168}));
  CHECK(TiledBoundaries(spark::TileFloor, 384016682, 4) == (Cuts{0, 96004170, 192008341, 288012511, 384016682}));
}

TEST(FrontPutsTheRemainderOnTheFirstRanks) {
  CHECK(TiledBoundaries(spark::TileFront, 384016682, 4) == (Cuts{0, 96004171, 192008342, 288012512, 384016682}));
  CHECK(TiledBoundaries(spark::TileFront, 10, 4) == (Cuts{0, 3, 6, 8, 10}));
}

TEST(HeadsSplitsOnSubTableOffsets) {
  std::vector<uint64_t> sizes = {5, 7, 11, 13, 17, 19};  // offsets 0 5 12 23 36 53 72
  std::vector<RowRange> out;
  CHECK(spark::TileHeads(sizes, 72, 4, &out).ok());  // ceil(6/4) = 2 per rank, the last rank empty
  CHECK(Boundaries(out) == (std::vector<uint64_t>{0, 12, 36, 72, 72}));
  CHECK(spark::TileHeads(sizes, 72, 1, &out).ok());
  CHECK(Boundaries(out) == (std::vector<uint64_t>{0, 72}));
  CHECK(spark::TileHeads(sizes, 72, 9, &out).ok());  // more ranks than sub-tables
  CHECK(out.size() == 9);
  CHECK(Tiles(out, 72));
  CHECK(out[6].start == 72 && out[8].end == 72);
}

TEST(HeadsRefusesSizesThatDoNotSumToTheRows) {
  std::vector<RowRange> out;
  spark::Status st = spark::TileHeads({5, 7}, 13, 2, &out);
  CHECK(st.code == spark::Code::E_ENGRAM_ROWS);
  CHECK(st.message.find("sum to 12 rows but the tensor has 13") != std::string::npos);
  st = spark::TileHeads({~uint64_t{0}, 2}, 1, 2, &out);
  CHECK(st.code == spark::Code::E_ENGRAM_ROWS);
  CHECK(spark::TileHeads({}, 0, 2, &out).code == spark::Code::E_ENGRAM_ROWS);
}

TEST(BadWorldIsUsageError) {
  std::vector<RowRange> out;
  CHECK(spark::TileFloor(10, 0, &out).code == spark::Code::E_USAGE);
  CHECK(spark::TileFront(10, spark::kMaxWorld + 1, &out).code == spark::Code::E_USAGE);
  CHECK(spark::TileHeads({10}, 10, 0, &out).code == spark::Code::E_USAGE);
  spark::Split split;
  CHECK(spark::ParseSplit("ceil", &split).code == spark::Code::E_USAGE);
  CHECK(spark::ParseSplit("heads", &split).ok() && split == spark::Split::kHeads);
}

TEST(FloorDoesNotOverflowNearTwoToThe64) {
  std::vector<RowRange> out;
  uint64_t rows = ~uint64_t{0};
  CHECK(spark::TileFloor(rows, 3, &out).ok());
  CHECK(Tiles(out, rows));
  CHECK(out[1].start == rows / 3);  // 2^64-1 is divisible by 3
  CHECK(spark::TileFloor(rows, spark::kMaxWorld, &out).ok());
  CHECK(Tiles(out, rows));
}

TEST(PropertyFloorAndFrontTileAndDifferByAtMostOne) {
  uint64_t state = 42;
  for (int i = 0; i < 20000; ++i) {
    uint64_t rows = Next(&state) >> (24 + Next(&state) % 40);  // up to 2^40, many small values
    uint64_t world = 1 + Next(&state) % 64;
    std::vector<RowRange> floor_ranges, front_ranges;
    CHECK(spark::TileFloor(rows, world, &floor_ranges).ok());
    CHECK(spark::TileFront(rows, world, &front_ranges).ok());
    CHECK(Tiles(floor_ranges, rows));
    CHECK(Tiles(front_ranges, rows));
    for (const auto* ranges : {&floor_ranges, &front_ranges}) {
      uint64_t lo = ~uint64_t{0}, hi = 0;
      for (const auto& r : *ranges) {
        lo = std::min(lo, r.end - r.start);
        hi = std::max(hi, r.end - r.start);
      }
      CHECK(hi - lo <= 1);
    }
    // floor matches the definition computed in 128 bits.
    uint64_t r = Next(&state) % world;
    unsigned __int128 exact = static_cast<unsigned __int128>(rows) * r / world;
    CHECK(floor_ranges[r].start == static_cast<uint64_t>(exact));
  }
}

TEST(PropertyHeadsTilesOnHeadOffsets) {
  uint64_t state = 7;
  for (int i = 0; i < 5000; ++i) {
    size_t heads = 1 + Next(&state) % 48;
    std::vector<uint64_t> sizes(heads);
    uint64_t rows = 0;
    for (auto& s : sizes) {
      s = Next(&state) >> (34 + Next(&state) % 30);  // sum stays below 2^40
      rows += s;
    }
    uint64_t world = 1 + Next(&state) % 64;
    std::vector<RowRange> out;
    CHECK(spark::TileHeads(sizes, rows, world, &out).ok());
    CHECK(out.size() == world);
    CHECK(Tiles(out, rows));
    std::vector<uint64_t> offsets = {0};
    for (auto s : sizes) offsets.push_back(offsets.back() + s);
    uint64_t per_rank = (heads + world - 1) / world;
    for (uint64_t r = 0; r < world; ++r) {
      uint64_t first = std::min<uint64_t>(r * per_rank, heads);
      CHECK(out[r].start == offsets[first]);
    }
  }
}

int main() { return spark_test::RunAll("tiling_test"); }
