// How the ranks of a tensor-parallel group split an Engram table's rows. Every rule returns one
// half-open range per rank and the ranges tile [0, rows) exactly: the serving overlay refuses
// to start otherwise, and a row owned twice is double-counted in the all-reduce.
//
//   floor  rank r owns [rows*r/W, rows*(r+1)/W)                        (SGLang)
//   front  the first rows%W ranks own ceil(rows/W), the rest floor      (even chunks)
//   heads  whole (order, head) sub-tables, ceil(H/W) per rank, so every  (vLLM)
//          boundary sits on a sub-table offset
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/status.h"

namespace spark {

struct RowRange {
  uint64_t start = 0;
  uint64_t end = 0;  // exclusive
};

// A world of more ranks than this is a mistake in the caller's arguments, not a cluster.
inline constexpr uint64_t kMaxWorld = 1u << 20;

enum class Split { kFloor, kFront, kHeads };

// Parses "floor" / "front" / "heads"; anything else is E_USAGE naming the accepted values.
Status ParseSplit(const std::string& name, Split* out);
const char* SplitName(Split split);

// One range per rank for `rows` rows over `world` ranks (world >= 1).
Status TileFloor(uint64_t rows, uint64_t world, std::vector<RowRange>* out);
Status TileFront(uint64_t rows, uint64_t world, std::vector<RowRange>* out);

// `sub_tables` are the sizes of the layer's sub-tables in table order (their prefix sums are
// the head offsets). Their sum must equal `rows` (E_ENGRAM_ROWS otherwise: the sizes came from
// a config that does not describe this tensor). Ranks past the last sub-table own [rows, rows).
Status TileHeads(const std::vector<uint64_t>& sub_tables, uint64_t rows, uint64_t world, std::vector<RowRange>* out);

}  // namespace spark
