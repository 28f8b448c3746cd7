// The parser's duplicate-key check for large objects (core/format/json_parser.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace spark::json {

// A string in the document's pool: where it starts and how many bytes.
struct KeyRef {
  uint64_t off;
  uint32_t len;
};

// Keys of a large object: open addressing over (hash, pool offset, length), a flat array
// that stays in cache far better than node-based sets. The hash is seeded per process so
// a crafted header cannot force every key into one probe chain.
class KeySet {
 public:
  explicit KeySet(const std::string* pool) : pool_(pool), slots_(64) {}
  // Returns false when an equal key is already present.
  bool Insert(KeyRef key);

 private:
  struct Slot {
    uint64_t hash = 0;  // 0 = empty; stored hashes have the low bit set
    uint32_t off = 0;
    uint32_t len = 0;
  };
  void Grow();
  const std::string* pool_;
  std::vector<Slot> slots_;
  size_t used_ = 0;
};

}  // namespace spark::json
