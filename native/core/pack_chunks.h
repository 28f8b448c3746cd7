// Chunk-level helpers shared by the packer and the verifier.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/pack.h"
#include "core/pack_format.h"
#include "core/status.h"

namespace spark {

// Reads chunk k of the data file (at kPackHeaderBytes + span.offset) into *buf and returns
// its CRC-32 in *crc. A file that ends inside the chunk sets *complete false (no error) and
// leaves in *buf only the bytes that exist.
Status ReadChunk(int fd, const std::string& path, const PackGeometry& g, uint64_t k, std::vector<uint8_t>* buf,
                 uint32_t* crc, bool* complete);

// Builds chunk k from the source tensors: reads the weight rows in pieces of at most 8 MiB
// and the chunk's scale rows into the scratch buffers, interleaves into *out (resized to the
// chunk's bytes). Source offsets are checked against the file sizes by the caller.
struct SourceReader {
  int weight_fd = -1, scale_fd = -1;
  const PackSource* weight = nullptr;
  const PackSource* scale = nullptr;
  uint64_t start = 0;
  bool drop_cache = false;
  std::vector<uint8_t> weight_buf, scale_buf;

  Status BuildChunk(const PackGeometry& g, uint64_t k, std::vector<uint8_t>* out);
};

// Opens both source files and checks they hold rows [start, start + rows).
Status CheckSourceRange(const PackSource& weight, const PackSource& scale, uint64_t start, const PackGeometry& g);

}  // namespace spark
