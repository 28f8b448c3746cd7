// Chunk-level helpers shared by the packer and the verifier.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/pack.h"
#include "core/pack_format.h"
#include "core/file_io.h"
#include "core/status.h"

namespace spark {

// Reads whole chunks of a data file (chunk k at kPackHeaderBytes + span.offset), one large
// pread each, on its own descriptor. Give each reader a contiguous run of chunks: its
// descriptor then sees one sequential stream and the kernel's readahead keeps the disk busy
// (bench/RESULTS.md: ~1.9x faster than 4 threads taking chunks in turn from one descriptor,
// and faster than O_DIRECT on a virtual disk). With drop_cache, pages are dropped once
// checked: a check re-reads tens of GiB, and page cache is GPU memory on the target machines.
// Reads chunk k of a data file open as `fd` into *buf, with its CRC-32 (the re-check of a
// resumed pack, and ChunkReader below). *complete false when the file ends inside the chunk.
Status ReadChunk(int fd, const std::string& path, const PackGeometry& g, uint64_t k, bool drop_cache,
                 std::vector<uint8_t>* buf, uint32_t* crc, bool* complete);

class ChunkReader {
 public:
  Status Open(const std::string& path, bool drop_cache);
  // Reads chunk k and its CRC-32. A file that ends inside the chunk sets *complete false (no
  // error); size() is then the bytes that exist.
  Status Read(const PackGeometry& g, uint64_t k, uint32_t* crc, bool* complete);
  const uint8_t* data() const { return buf_.data(); }
  size_t size() const { return buf_.size(); }

 private:
  std::string path_;
  Fd fd_;
  bool drop_cache_ = false;
  std::vector<uint8_t> buf_;
};

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
