// The serving overlay's sparse copy of one shard (docs/serving-stacks.md, stack A): a file of the
// shard's name and apparent size holding the safetensors header bytes (8 + N) copied byte for
// byte, a rank's rows of each Engram weight and scale tensor at their ORIGINAL offsets, and
// holes everywhere else. One shard may hold several Engram layers.
//
// Chunk k walks the tables in order: table t's rows in chunks of chunk_rows rows.
// A chunk is copied as two runs (its weight rows, then its scale rows), each one read from the
// source and one write at the same offset (O_DIRECT where possible, core/pack/span_io.h); its checksum is the CRC-32 of
// the weight bytes followed by the scale bytes (src/stacks/overlay/sparse-manifest.ts). Only the header and the rows'
// byte ranges are allocated (fallocate, so a full disk shows before the copy, not in it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/id_range.h"
#include "core/base/status.h"
#include "core/pack/pack_engine.h"

namespace spark {

struct SparseTable {
  uint64_t weight_offset = 0;  // absolute file offset of the weight's row 0
  uint64_t scale_offset = 0;   // absolute file offset of the scale's row 0
  uint64_t dim = 0;            // weight bytes per row; scale bytes per row are dim / 32
  IdRange rows;                // the global rows copied
  uint64_t chunk_rows = 0;
};

struct SparseShardJob {
  std::string source_path;
  uint64_t source_bytes = 0;  // the shard's size: the copy's apparent size
  uint64_t header_bytes = 0;  // 8 + N, copied verbatim
  uint32_t header_crc = 0;    // CRC-32 of those bytes when the pack was planned
  std::vector<SparseTable> tables;
  bool drop_source_cache = true;  // drop the source's pages once read (the node may be serving)
  PackFileJob file;
};

// Checks the job's numbers (dims, chunk sizes, ranges inside the shard, the header before the
// data) with checked arithmetic: nothing the packer computes afterwards can overflow.
Status CheckSparseJob(const SparseShardJob& job);

// Packs one shard. result->crcs holds every table's chunk checksums, table after table.
Status PackSparseShard(const SparseShardJob& job, PackProgress* progress, PackResult* result);

// Chunks of table t: ceil(rows.size() / chunk_rows).
uint64_t SparseChunkCount(const SparseTable& t);

}  // namespace spark
