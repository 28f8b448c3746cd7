// The Mia stack's packed shard, as its reader checks it (docs/engine-libs.md): a 4096-byte
// header of six little-endian uint64 (magic "DSV41EN1" = 0x31344E4531565344, layer, lo, hi,
// N, row bytes 264), then the rows [lo, hi) of 264 bytes back to back.
#pragma once

#include <cstdint>
#include <memory>

#include "core/io/random_read.h"

namespace spark::engines {

inline constexpr uint64_t kMiaMagic = 0x31344E4531565344ull;
inline constexpr uint64_t kMiaHeaderBytes = 4096;

// Opens `path` for the layer's rows [lo, hi) of N. Null when the file is absent or the
// filesystem refuses O_DIRECT (the pack then counts as absent). A pack that is present but
// does not match (magic, layer, lo, hi, N, row bytes, or shorter than its rows) prints one
// line naming the field and aborts.
std::unique_ptr<ReadFile> OpenMiaPack(const char* path, uint64_t layer, uint64_t lo, uint64_t hi, uint64_t rows);

}  // namespace spark::engines
