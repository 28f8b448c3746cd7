// Geometry of a packed Engram data file, format version 1 (docs/packed-format.md):
//   [0, 4096)          header block: the layer's manifest entry as JSON, padded with spaces
//   [4096, ...)        rows i = 0 .. count-1 (global id start + i), each weight[D] ‖ scale[D/32]
// dense: row i at 4096 + i * rowBytes.
// page:  rowsPerPage = floor(4096 / rowBytes) rows per 4096-byte page, the rest of each page
//        zero (the last page too), so no row crosses a page.
// Checksums cover chunks of chunkRows rows: chunk k is rows [k*chunkRows, min((k+1)*chunkRows,
// count)) and, in the page layout (chunkRows a multiple of rowsPerPage), the whole pages that
// hold them, padding included, so every byte after the header block is under one checksum.
#pragma once

#include <cstdint>
#include <string>

#include "core/base/status.h"

namespace spark {

inline constexpr uint64_t kPackHeaderBytes = 4096;
inline constexpr uint64_t kPackPageBytes = 4096;

enum class PackLayout { kDense, kPage };

struct ChunkSpan {
  uint64_t first_row = 0;  // local row index (0 = the layer's `start`)
  uint64_t rows = 0;
  uint64_t offset = 0;  // byte offset from dataOffset
  uint64_t bytes = 0;
};

class PackGeometry {
 public:
  // Validates everything (dim a positive multiple of 32, chunk rows compatible with the layout,
  // sizes that fit in 64 bits) so the accessors below cannot overflow.
  static Status Make(uint64_t rows, uint64_t dim, PackLayout layout, uint64_t chunk_rows, PackGeometry* out);

  uint64_t rows() const { return rows_; }
  uint64_t dim() const { return dim_; }
  uint64_t scale_bytes() const { return dim_ / 32; }
  uint64_t row_bytes() const { return dim_ + dim_ / 32; }
  PackLayout layout() const { return layout_; }
  uint64_t chunk_rows() const { return chunk_rows_; }
  uint64_t rows_per_page() const { return kPackPageBytes / row_bytes(); }
  uint64_t chunk_count() const { return rows_ == 0 ? 0 : (rows_ - 1) / chunk_rows_ + 1; }
  uint64_t data_bytes() const { return data_bytes_; }
  uint64_t file_bytes() const { return kPackHeaderBytes + data_bytes_; }
  // Largest chunk's byte size (every chunk but the last has this size).
  uint64_t max_chunk_bytes() const { return rows_ == 0 ? 0 : Chunk(0).bytes; }

  ChunkSpan Chunk(uint64_t k) const;
  // Byte offset of local row i from dataOffset.
  uint64_t RowOffset(uint64_t i) const;
  // Bytes that n rows take from a page boundary on (page layout: whole pages).
  uint64_t BytesForRows(uint64_t n) const;

 private:
  uint64_t rows_ = 0, dim_ = 0, chunk_rows_ = 1, data_bytes_ = 0;
  PackLayout layout_ = PackLayout::kDense;
};

const char* LayoutName(PackLayout layout);
bool ParseLayout(const std::string& name, PackLayout* out);

// Interleaves n rows (weight rows of dim bytes, scale rows of dim/32 bytes) into `out`, which
// starts at a row that begins a page in the page layout; writes g.BytesForRows(n) bytes, page
// padding zeroed.
void InterleaveRows(const PackGeometry& g, uint64_t n, const uint8_t* weight, const uint8_t* scale, uint8_t* out);

}  // namespace spark
