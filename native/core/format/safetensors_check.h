// What a safetensors header must satisfy beyond its JSON shape (core/format/safetensors.cc reads
// the shape): each tensor's offsets hold exactly its dtype x shape bytes, and the tensors
// tile the data section with no gap, overlap or trailing bytes. Shared by the header parser
// only; the messages' common parts live here too.
#pragma once

#include <string>
#include <string_view>

#include "core/base/status.h"
#include "core/format/safetensors.h"

namespace spark::safetensors {

inline constexpr const char* kReexport = "re-export or re-download this file";

// 'name', printable and shortened.
std::string Quoted(std::string_view name);
// An error about the file at `path`, and the tensor when one is named.
Status TensorError(const std::string& path, Code code, std::string message, std::string_view tensor = {});

// Sets t->bytes, or fails when data_offsets do not hold exactly the bytes dtype x shape needs.
Status CheckTensorBytes(const std::string& path, Tensor* t);
// Sorts h->tensors by data offset, sets each file_offset, and fails on a gap, an overlap, a
// truncated file or data past the last tensor. h->data_start and data_length must be set.
Status CheckLayout(Header* h);

}  // namespace spark::safetensors
