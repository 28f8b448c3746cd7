// Holes in sparse files. A node-local sparse copy (docs/serving-stacks.md, stack A) holds the rank's
// rows at their original offsets and holes everywhere else; a hole reads as zeros, so a reader
// that does not look for holes serves zeros for rows the copy never held. The row store and
// `spark verify` ask the filesystem (lseek SEEK_HOLE) where the holes are instead.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/base/id_range.h"
#include "core/base/status.h"

namespace spark {

// The first byte of [start, end) of `fd` that lies in a hole, or nullopt when the range is all
// data. A filesystem that cannot report holes reports none (the whole file is data).
Status FirstHole(int fd, uint64_t start, uint64_t end, const std::string& path, std::optional<uint64_t>* hole);

// What a hole among a table's readable rows means.
enum class HoleRule {
  kAllow,    // nothing (callers that know the file is sparse on purpose)
  kRefuse,   // a snapshot without a manifest: a sparse copy whose engram-local.json is missing
  kCorrupt,  // inside a sparse copy's manifest range: the copy is damaged
};

// One column of a table (row `id` at base + id * pitch), rows `rows`: Ok when no byte of them
// lies in a hole (or rule is kAllow); otherwise an error naming the file, the layer, the first
// row touching the hole and its byte offset. `column` is "weight" or "scale".
Status CheckColumnHoles(int fd, const std::string& path, uint32_t layer, const char* column, uint64_t base,
                        uint64_t pitch, const IdRange& rows, HoleRule rule);

}  // namespace spark
