#include "core/format/json_key_set.h"

#include <chrono>
#include <cstring>

namespace spark::json {

namespace {

uint64_t Mix(uint64_t x) {  // the splitmix64 finalizer
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

uint64_t HashSeed() {
  static const uint64_t seed = [] {
    uint64_t t = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    return Mix(t ^ reinterpret_cast<uintptr_t>(&t));
  }();
  return seed;
}

uint64_t HashBytes(const char* p, size_t n) {
  uint64_t h = HashSeed() ^ (n * 0x9E3779B97F4A7C15ULL);
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = Mix(h ^ w);
  }
  uint64_t w = 0;
  std::memcpy(&w, p, n);
  return Mix(h ^ w);
}

}  // namespace

bool KeySet::Insert(KeyRef key) {
  if ((used_ + 1) * 2 > slots_.size()) Grow();
  const char* text = pool_->data() + key.off;
  uint64_t hash = HashBytes(text, key.len) | 1;
  size_t mask = slots_.size() - 1;
  for (size_t i = (hash >> 1) & mask;; i = (i + 1) & mask) {
    Slot& slot = slots_[i];
    if (slot.hash == 0) {
      slot = Slot{hash, static_cast<uint32_t>(key.off), key.len};
      ++used_;
      return true;
    }
    if (slot.hash == hash && slot.len == key.len && std::memcmp(pool_->data() + slot.off, text, key.len) == 0)
      return false;
  }
}

void KeySet::Grow() {
  std::vector<Slot> old(slots_.size() * 2);
  old.swap(slots_);
  size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.hash == 0) continue;
    size_t i = (s.hash >> 1) & mask;
    while (slots_[i].hash != 0) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

}  // namespace spark::json
