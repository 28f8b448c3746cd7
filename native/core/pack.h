// Packs one layer's rows [start, start + rows) of an Engram table into a data file of format
// version 1 (core/pack_format.h, layouts dense and page), crash-safely and resumably, through
// the shared engine (core/pack_engine.h: files, journal, resume, commit).
//
// Chunk k: each worker reads the chunk's weight rows (pieces of up to 16 MiB) and scale rows
// with large reads on its own descriptors, interleaves them, checksums the chunk while it is
// in memory and writes it with one write at 4096 + the chunk's offset (O_DIRECT where the
// filesystems allow it, core/pack_io.h; the next chunk is read meanwhile).
#pragma once

#include <cstdint>
#include <string>

#include "core/pack_engine.h"
#include "core/pack_format.h"
#include "core/status.h"

namespace spark {

struct PackSource {
  std::string path;
  uint64_t offset = 0;  // absolute file offset of the tensor's row 0
};

struct PackJob {
  PackSource weight, scale;
  uint64_t start = 0;  // global id of local row 0
  PackGeometry geometry;
  std::string header;  // header block JSON, at most 4096 bytes (padded with spaces here)
  bool drop_source_cache = true;  // drop the source's pages once read (the node may be serving)
  PackFileJob file;               // directory, name, key, workers, commit policy
};

Status PackLayer(const PackJob& job, PackProgress* progress, PackResult* result);

// The 4096-byte header block for `json`, or an error when it does not fit.
Status HeaderBlock(const std::string& json, std::string* block);

}  // namespace spark
