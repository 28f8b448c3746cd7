#include "core/format/tiling.h"

#include <string>

#include "core/base/checked.h"

namespace spark {

namespace {

Status CheckWorld(uint64_t world) {
  if (world == 0 || world > kMaxWorld) {
    return Status::Error(Code::E_USAGE, "world size must be between 1 and " + std::to_string(kMaxWorld) + ", got " +
                                            std::to_string(world));
  }
  return Status::Ok();
}

// floor(rows * r / world) without the product: rows = q*world + m, so
// rows*r/world = q*r + (m*r)/world exactly, where q*r <= rows and m*r < world^2 <= 2^40.
uint64_t FloorBoundary(uint64_t rows, uint64_t world, uint64_t r) {
  uint64_t q = rows / world;
  uint64_t m = rows % world;
  return q * r + (m * r) / world;
}

}  // namespace

Status ParseSplit(const std::string& name, Split* out) {
  if (name == "floor") {
    *out = Split::kFloor;
  } else if (name == "front") {
    *out = Split::kFront;
  } else if (name == "heads") {
    *out = Split::kHeads;
  } else {
    return Status::Error(Code::E_USAGE, "unknown split '" + name + "' (use floor, front or heads)");
  }
  return Status::Ok();
}

const char* SplitName(Split split) {
  switch (split) {
    case Split::kFloor:
      return "floor";
    case Split::kFront:
      return "front";
    case Split::kHeads:
      return "heads";
  }
  return "floor";
}

Status TileFloor(uint64_t rows, uint64_t world, std::vector<RowRange>* out) {
  Status st = CheckWorld(world);
  if (!st.ok()) return st;
  out->assign(world, RowRange{});
  for (uint64_t r = 0; r < world; ++r) {
    (*out)[r].start = FloorBoundary(rows, world, r);
    (*out)[r].end = r + 1 == world ? rows : FloorBoundary(rows, world, r + 1);
  }
  return Status::Ok();
}

Status TileFront(uint64_t rows, uint64_t world, std::vector<RowRange>* out) {
  Status st = CheckWorld(world);
  if (!st.ok()) return st;
  uint64_t q = rows / world;
  uint64_t m = rows % world;
  out->assign(world, RowRange{});
  uint64_t cursor = 0;
  for (uint64_t r = 0; r < world; ++r) {
    uint64_t size = q + (r < m ? 1 : 0);
    (*out)[r].start = cursor;
    cursor += size;  // the sizes sum to rows, so this never passes rows
    (*out)[r].end = cursor;
  }
  return Status::Ok();
}

Status TileHeads(const std::vector<uint64_t>& sub_tables, uint64_t rows, uint64_t world, std::vector<RowRange>* out) {
  Status st = CheckWorld(world);
  if (!st.ok()) return st;
  if (sub_tables.empty()) {
    return Status::Error(Code::E_ENGRAM_ROWS, "the heads split needs the layer's sub-table sizes, got none");
  }
  // Head offsets: prefix sums, checked (a corrupt config could name sizes that wrap).
  std::vector<uint64_t> offsets(sub_tables.size() + 1, 0);
  for (size_t i = 0; i < sub_tables.size(); ++i) {
    auto next = CheckedAdd(offsets[i], sub_tables[i]);
    if (!next) return Status::Error(Code::E_ENGRAM_ROWS, "the sub-table sizes overflow 64 bits");
    offsets[i + 1] = *next;
  }
  if (offsets.back() != rows) {
    return Status::Error(Code::E_ENGRAM_ROWS,
                         "the " + std::to_string(sub_tables.size()) + " sub-table sizes sum to " +
                             std::to_string(offsets.back()) + " rows but the tensor has " + std::to_string(rows) +
                             " (config.json does not describe this checkpoint; check engram_vocab_size, "
                             "engram_n_heads and engram_max_ngram_size, or use --split floor)");
  }
  uint64_t heads = sub_tables.size();
  uint64_t per_rank = heads / world + (heads % world != 0 ? 1 : 0);  // ceil(H/W)
  out->assign(world, RowRange{});
  for (uint64_t r = 0; r < world; ++r) {
    // r*per_rank <= world*per_rank < heads + world: no overflow for world <= kMaxWorld.
    uint64_t first = r * per_rank < heads ? r * per_rank : heads;
    uint64_t last = first + per_rank < heads ? first + per_rank : heads;
    (*out)[r].start = offsets[first];
    (*out)[r].end = offsets[last];
  }
  return Status::Ok();
}

}  // namespace spark
