// The strict safetensors header reader.
//
// A safetensors file is an 8-byte little-endian header length N (at most 100,000,000), N bytes
// of UTF-8 JSON, then the data. Every rule the reference implementation enforces is enforced
// here, plus the ones it leaves out: duplicate tensor names and duplicate or unknown keys in a
// tensor entry are errors (the reference keeps the last duplicate, so two readers can disagree
// on which bytes a tensor is). All sizes are uint64 with checked arithmetic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/status.h"

namespace spark::safetensors {

inline constexpr uint64_t kMaxHeaderLength = 100'000'000;
// Tensors one header may list, and JSON values (keys included) its text may hold: far above a
// real checkpoint (DeepSeek-V4.1-Flash's shards list a few thousand tensors each), far below
// what costs gigabytes (1,000,000 tensors took 0.6-1.4 GB and 15-22 s to inspect). A tensor
// entry is 9 values plus its shape's rank; 16 a tensor leaves room for rank 7 and metadata.
// The parser stops at either cap (core/format/json.h), before the rest of the text is parsed.
inline constexpr uint64_t kMaxTensors = 262'144;
inline constexpr uint64_t kMaxHeaderValues = kMaxTensors * 16;

// X(name, bits per element)
#define SPARK_SAFETENSORS_DTYPES(X) \
  X(BOOL, 8)                        \
  X(F4, 4)                          \
  X(F6_E2M3, 6)                     \
  X(F6_E3M2, 6)                     \
  X(U8, 8)                          \
  X(I8, 8)                          \
  X(F8_E5M2, 8)                     \
  X(F8_E4M3, 8)                     \
  X(F8_E8M0, 8)                     \
  X(F8_E4M3FNUZ, 8)                 \
  X(F8_E5M2FNUZ, 8)                 \
  X(I16, 16)                        \
  X(U16, 16)                        \
  X(F16, 16)                        \
  X(BF16, 16)                       \
  X(I32, 32)                        \
  X(U32, 32)                        \
  X(F32, 32)                        \
  X(C64, 64)                        \
  X(F64, 64)                        \
  X(I64, 64)                        \
  X(U64, 64)

enum class Dtype : uint8_t {
#define SPARK_X(name, bits) name,
  SPARK_SAFETENSORS_DTYPES(SPARK_X)
#undef SPARK_X
};

const char* DtypeName(Dtype dtype);
unsigned DtypeBits(Dtype dtype);
bool ParseDtype(std::string_view name, Dtype* out);
// "BOOL, F4, ..., U64": for messages.
std::string DtypeList();

struct Tensor {
  std::string name;
  Dtype dtype = Dtype::U8;
  std::vector<uint64_t> shape;
  uint64_t begin = 0;        // data_offsets[0], relative to the data start
  uint64_t end = 0;          // data_offsets[1]
  uint64_t file_offset = 0;  // absolute offset of the first byte: 8 + header_length + begin
  uint64_t bytes = 0;        // end - begin = elements x bits / 8
};

struct Header {
  std::string path;
  std::vector<Tensor> tensors;  // sorted by data offset (zero-size tensors before their neighbour)
  std::vector<std::pair<std::string, std::string>> metadata;  // __metadata__, in file order
  uint64_t header_length = 0;                                 // N
  uint64_t data_start = 0;                                    // 8 + N
  uint64_t data_length = 0;                                   // file size - 8 - N
  uint64_t file_size = 0;
};

// Validates the N header bytes `json` of a file whose data section holds `data_length`
// bytes. Pure: no I/O. `path` only names the file in messages.
Status ParseHeaderBytes(const uint8_t* json, size_t len, uint64_t data_length, const std::string& path, Header* out);

// Reads and validates the header of the file at `path` with open + fstat + two preads (the
// length, then the header): never mmap, never a byte of the data. The length is checked
// against the cap and the file size before anything is allocated or read.
Status ReadHeader(const std::string& path, Header* out);

}  // namespace spark::safetensors
