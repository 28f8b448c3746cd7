#include "row_cache.h"

#include <cstdlib>
#include <cstring>

namespace mia {

unsigned WaysFromEnv() {
  const char* v = std::getenv("DSV41_CACHE_WAYS");
  if (!v || !*v) return 4;
  char* end = nullptr;
  long long n = std::strtoll(v, &end, 10);
  if (*end != '\0') return 4;
  return n < 1 ? 1 : n > 16 ? 16 : static_cast<unsigned>(n);
}

// Set layout: `ways` slots of [8-byte tag = id + 1 (0: empty)][264-byte row], then the victim byte.
RowCache::RowCache(uint64_t budget, unsigned ways) : ways_(ways) {
  uint64_t set_bytes = kSlotBytes * ways_ + 1;
  uint64_t sets = budget / set_bytes;
  if (sets == 0) return;
  // calloc: zero tags (empty slots), pages touched only as sets fill; no cache if refused.
  mem_ = static_cast<uint8_t*>(std::calloc(sets, set_bytes));
  if (mem_) sets_ = sets;
}

RowCache::~RowCache() { std::free(mem_); }

bool RowCache::Get(uint64_t id, uint8_t* row264) {
  uint64_t set = id % sets_;
  uint8_t* s = Set(set);
  std::lock_guard<std::mutex> l(Stripe(set));
  for (unsigned w = 0; w < ways_; w++) {
    uint8_t* slot = s + w * kSlotBytes;
    uint64_t tag;
    std::memcpy(&tag, slot, 8);
    if (tag == id + 1) {
      std::memcpy(row264, slot + 8, kRowBytes);
      return true;
    }
  }
  return false;
}

void RowCache::Put(uint64_t id, const uint8_t* row264) {
  uint64_t set = id % sets_;
  uint8_t* s = Set(set);
  std::lock_guard<std::mutex> l(Stripe(set));
  uint64_t tag = id + 1;
  for (unsigned w = 0; w < ways_; w++) {
    if (std::memcmp(s + w * kSlotBytes, &tag, 8) == 0) return;  // another thread read it too
  }
  uint8_t& victim = s[kSlotBytes * ways_];
  uint8_t* slot = s + (victim % ways_) * kSlotBytes;
  victim = static_cast<uint8_t>((victim + 1) % ways_);
  std::memcpy(slot, &tag, 8);
  std::memcpy(slot + 8, row264, kRowBytes);
}

}  // namespace mia
