// Chunk-level helpers shared by the packer and the verifier.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/io/durable_file.h"
#include "core/io/random_read.h"
#include "core/pack/pack.h"
#include "core/pack/pack_format.h"
#include "core/pack/span_io.h"

namespace spark {

// Reads chunk k of a data file open as `fd` (buffered) into *buf, with its CRC-32: the
// re-check of a resumed pack. *complete false when the file ends inside the chunk. With
// drop_cache, the pages read are dropped (page cache is GPU memory on the target machines).
Status ReadChunk(int fd, const std::string& path, const PackGeometry& g, uint64_t k, bool drop_cache,
                 std::vector<uint8_t>* buf, uint32_t* crc, bool* complete);

// Builds chunk k from the source tensors: reads the weight rows in pieces of at most 16 MiB
// and the chunk's scale rows (O_DIRECT where the source allows it, core/pack/span_io.h) into the
// scratch buffers, interleaves into `out` (the chunk's bytes long). Source offsets are checked
// against the file sizes by the caller. Not thread-safe: one chunk at a time.
struct SourceReader {
  SpanReader weight_file, scale_file;
  const PackSource* weight = nullptr;
  const PackSource* scale = nullptr;
  uint64_t start = 0;
  bool drop_cache = false;  // drop the pages of buffered reads behind them
  AlignedBuffer weight_buf, scale_buf;

  Status Open(const PackSource& weight_src, const PackSource& scale_src, uint64_t start_row, bool direct, bool drop,
              DirectRefusal refusal = DirectRefusal::kNone);
  bool direct() const { return weight_file.direct() && scale_file.direct(); }
  Status BuildChunk(const PackGeometry& g, uint64_t k, uint8_t* out);
};

// Opens both source files and checks they hold rows [start, start + rows).
Status CheckSourceRange(const PackSource& weight, const PackSource& scale, uint64_t start, const PackGeometry& g);

}  // namespace spark
