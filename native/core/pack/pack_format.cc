#include "core/pack/pack_format.h"

#include <cstring>

#include "core/base/checked.h"

namespace spark {

namespace {
constexpr uint64_t kMaxDim = 1 << 20;
constexpr uint64_t kMaxChunkBytes = uint64_t{1} << 30;  // one chunk is held in memory per worker
}  // namespace

Status PackGeometry::Make(uint64_t rows, uint64_t dim, PackLayout layout, uint64_t chunk_rows, PackGeometry* out) {
  if (dim == 0 || dim % 32 != 0 || dim > kMaxDim) {
    return Status::Error(
        Code::E_USAGE, "row dimension must be a positive multiple of 32 (at most 1048576), got " + std::to_string(dim));
  }
  PackGeometry g;
  g.rows_ = rows;
  g.dim_ = dim;
  g.layout_ = layout;
  g.chunk_rows_ = chunk_rows;
  if (layout == PackLayout::kPage && g.row_bytes() > kPackPageBytes) {
    return Status::Error(Code::E_USAGE, "the page layout needs rows of at most 4096 bytes, got " +
                                            std::to_string(g.row_bytes()) + "; use the dense layout");
  }
  if (chunk_rows == 0 || (layout == PackLayout::kPage && chunk_rows % g.rows_per_page() != 0)) {
    return Status::Error(Code::E_USAGE, "chunk rows must be a positive multiple of the rows per page (" +
                                            std::to_string(layout == PackLayout::kPage ? g.rows_per_page() : 1) +
                                            "), got " + std::to_string(chunk_rows));
  }
  // Every size below is bounded by data_bytes (rows) or the chunk size, so checking these two
  // once makes the unchecked arithmetic in the accessors safe.
  auto chunk_bytes = CheckedMul(chunk_rows, g.row_bytes());
  auto pages = rows / (layout == PackLayout::kPage ? g.rows_per_page() : 1) + 1;
  auto data = layout == PackLayout::kPage ? CheckedMul(pages, kPackPageBytes) : CheckedMul(rows, g.row_bytes());
  if (!chunk_bytes || *chunk_bytes > kMaxChunkBytes) {
    return Status::Error(Code::E_USAGE, "a chunk of " + std::to_string(chunk_rows) + " rows exceeds 1 GiB");
  }
  if (!data || !CheckedAdd(*data, kPackHeaderBytes + kPackPageBytes)) {
    return Status::Error(Code::E_SAFETENSORS_OVERFLOW, "packed size of " + std::to_string(rows) + " rows overflows");
  }
  g.data_bytes_ = g.BytesForRows(rows);
  *out = g;
  return Status::Ok();
}

uint64_t PackGeometry::BytesForRows(uint64_t n) const {
  if (layout_ == PackLayout::kDense) return n * row_bytes();
  uint64_t rpp = rows_per_page();
  return (n / rpp + (n % rpp != 0 ? 1 : 0)) * kPackPageBytes;
}

ChunkSpan PackGeometry::Chunk(uint64_t k) const {
  ChunkSpan s;
  s.first_row = k * chunk_rows_;
  s.rows = rows_ - s.first_row < chunk_rows_ ? rows_ - s.first_row : chunk_rows_;
  s.offset = BytesForRows(s.first_row);  // exact: first_row is a multiple of rowsPerPage
  s.bytes = BytesForRows(s.rows);
  return s;
}

uint64_t PackGeometry::RowOffset(uint64_t i) const {
  if (layout_ == PackLayout::kDense) return i * row_bytes();
  uint64_t rpp = rows_per_page();
  return (i / rpp) * kPackPageBytes + (i % rpp) * row_bytes();
}

const char* LayoutName(PackLayout layout) { return layout == PackLayout::kPage ? "page" : "dense"; }

bool ParseLayout(const std::string& name, PackLayout* out) {
  if (name == "dense") {
    *out = PackLayout::kDense;
  } else if (name == "page") {
    *out = PackLayout::kPage;
  } else {
    return false;
  }
  return true;
}

void InterleaveRows(const PackGeometry& g, uint64_t n, const uint8_t* weight, const uint8_t* scale, uint8_t* out) {
  const uint64_t d = g.dim(), sb = g.scale_bytes(), rb = g.row_bytes();
  if (g.layout() == PackLayout::kDense) {
    for (uint64_t i = 0; i < n; ++i) {
      std::memcpy(out + i * rb, weight + i * d, d);
      std::memcpy(out + i * rb + d, scale + i * sb, sb);
    }
    return;
  }
  const uint64_t rpp = g.rows_per_page();
  const uint64_t pad = kPackPageBytes - rpp * rb;
  for (uint64_t first = 0; first < n; first += rpp) {
    uint8_t* page = out + (first / rpp) * kPackPageBytes;
    uint64_t in_page = n - first < rpp ? n - first : rpp;
    for (uint64_t j = 0; j < in_page; ++j) {
      std::memcpy(page + j * rb, weight + (first + j) * d, d);
      std::memcpy(page + j * rb + d, scale + (first + j) * sb, sb);
    }
    std::memset(page + in_page * rb, 0, (rpp - in_page) * rb + pad);
  }
}

}  // namespace spark
