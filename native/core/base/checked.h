// Checked 64-bit arithmetic. Tables here are ~100 GB and row ids pass 2^32, so every size
// and offset is uint64_t and every product or sum that could wrap goes through these.
#pragma once

#include <cstdint>
#include <optional>

namespace spark {

inline std::optional<uint64_t> CheckedMul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<uint64_t> CheckedAdd(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

}  // namespace spark
