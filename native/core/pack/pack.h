// Packs one layer's rows [start, start + rows) of an Engram table into a data file (layouts
// dense and page, core/pack/pack_format.h), crash-safely and resumably, through the shared engine
// (core/pack/pack_engine.h: files, journal, resume, commit). The 4096-byte header block is the
// caller's: written as given (the dense layout's is the Mia stack's binary header), so the
// format of its bytes lives in one place, the caller's.
//
// Chunk k: each worker reads the chunk's weight rows (pieces of up to 16 MiB) and scale rows
// with large reads on its own descriptors, interleaves them, checksums the chunk while it is
// in memory and writes it with one write at 4096 + the chunk's offset (O_DIRECT where the
// filesystems allow it, core/pack/span_io.h; the next chunk is read meanwhile).
#pragma once

#include <cstdint>
#include <string>

#include "core/base/status.h"
#include "core/pack/pack_engine.h"
#include "core/pack/pack_format.h"

namespace spark {

struct PackSource {
  std::string path;
  uint64_t offset = 0;  // absolute file offset of the tensor's row 0
};

struct PackJob {
  PackSource weight, scale;
  uint64_t start = 0;  // global id of local row 0
  PackGeometry geometry;
  std::string header;             // the header block, exactly kPackHeaderBytes bytes, written at offset 0
  bool drop_source_cache = true;  // drop the source's pages once read (the node may be serving)
  PackFileJob file;               // directory, name, key, workers, commit policy
};

Status PackLayer(const PackJob& job, PackProgress* progress, PackResult* result);

// Refuses a header block that is not exactly kPackHeaderBytes bytes.
Status CheckHeaderBlock(const std::string& block);

}  // namespace spark
