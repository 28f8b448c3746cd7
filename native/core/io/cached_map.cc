#include "core/io/cached_map.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>

namespace spark {

namespace {

unsigned PageShift() {
  long page = sysconf(_SC_PAGESIZE);
  unsigned shift = 12;
  while (page > 0 && (1L << shift) < page) ++shift;
  return shift;
}

}  // namespace

std::unique_ptr<FileMap> FileMap::Create(int fd, uint64_t size) {
  if (size == 0 || size > SIZE_MAX / 2) return nullptr;
  void* base = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) return nullptr;
  std::unique_ptr<FileMap> map(new FileMap());
  map->base_ = static_cast<uint8_t*>(base);
  map->size_ = size;
  // Random ids: a fault should bring in its page, not a readahead window nobody asked for.
  madvise(base, size, MADV_RANDOM);
  map->page_shift_ = PageShift();
  const uint64_t pages = ((size - 1) >> map->page_shift_) + 1;
  map->bit_words_ = (pages + 63) / 64;
  void* bits =
      mmap(nullptr, map->bit_words_ * 8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (bits == MAP_FAILED) return nullptr;  // the destructor unmaps the file
  map->bits_ = static_cast<uint64_t*>(bits);
  return map;
}

uint64_t FileMap::Learn(uint64_t offset, uint64_t len) {
  uint64_t first, last;
  if (!Pages(offset, len, &first, &last)) return 0;
  uint64_t learned = 0;
  unsigned char vec[kLearnPages];
  for (uint64_t p = first; p <= last; p += kLearnPages) {
    const uint64_t count = std::min<uint64_t>(kLearnPages, last - p + 1);
    const uint64_t bytes = std::min<uint64_t>(count << page_shift_, size_ - (p << page_shift_));
    if (mincore(base_ + (p << page_shift_), bytes, vec) != 0) return learned;
    for (uint64_t k = 0; k < count; ++k) {
      if ((vec[k] & 1) == 0) continue;
      const uint64_t page = p + k;
      std::atomic_ref<uint64_t>(bits_[page >> 6]).fetch_or(uint64_t{1} << (page & 63), std::memory_order_relaxed);
      ++learned;
    }
  }
  return learned;
}

FileMap::~FileMap() {
  if (base_ != nullptr) munmap(base_, size_);
  if (bits_ != nullptr) munmap(bits_, bit_words_ * 8);
}

bool FileMap::Pages(uint64_t offset, uint64_t len, uint64_t* first, uint64_t* last) const {
  if (len == 0 || offset >= size_ || len > size_ - offset) return false;
  *first = offset >> page_shift_;
  *last = (offset + len - 1) >> page_shift_;
  return true;
}

bool FileMap::Known(uint64_t offset, uint64_t len) const {
  uint64_t first, last;
  if (!Pages(offset, len, &first, &last)) return false;
  for (uint64_t p = first; p <= last; ++p) {
    uint64_t word = std::atomic_ref<uint64_t>(bits_[p >> 6]).load(std::memory_order_relaxed);
    if ((word >> (p & 63) & 1) == 0) return false;
  }
  return true;
}

void FileMap::Mark(uint64_t offset, uint64_t len) { SetKnown(offset, len, true); }

void FileMap::Forget(uint64_t offset, uint64_t len) { SetKnown(offset, len, false); }

void FileMap::SetKnown(uint64_t offset, uint64_t len, bool known) {
  uint64_t first, last;
  if (!Pages(offset, len, &first, &last)) return;
  for (uint64_t p = first; p <= last; ++p) {
    std::atomic_ref<uint64_t> word(bits_[p >> 6]);
    const uint64_t bit = uint64_t{1} << (p & 63);
    // Most marks are of pages already known: a load first keeps the line shared between cores.
    if (((word.load(std::memory_order_relaxed) & bit) != 0) == known) continue;
    if (known) {
      word.fetch_or(bit, std::memory_order_relaxed);
    } else {
      word.fetch_and(~bit, std::memory_order_relaxed);
    }
  }
}

}  // namespace spark
