// A read-only mapping of a whole file, and which of its pages this process knows to be in the
// page cache. The row store copies a warm row out of the mapping with no system call (a read
// call costs ~0.5 us, copying a 264-byte row a few ns) when every page the row touches is
// known; pages become known when a read call has just brought them into the cache.
//
// Known is a belief, not a guarantee: the kernel may evict a page after it was marked. Copying
// from it is then still correct, only slow (a page fault reads it back), and the caller forgets
// what it believed once it sees a copy take that long. A copy from a file that was truncated
// faults (SIGBUS): copies run under RunFaultGuarded (core/io/fault_guard.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/base/noncopyable.h"

namespace spark {

class FileMap : NonCopyable {
 public:
  ~FileMap();
  // Maps the first `size` bytes of fd (read-only, shared, MADV_RANDOM: no readahead on a
  // fault). Null when the kernel refuses (address space, a filesystem without mmap) or size is 0.
  static std::unique_ptr<FileMap> Create(int fd, uint64_t size);

  const uint8_t* at(uint64_t offset) const { return base_ + offset; }
  // Whether every page of [offset, offset + len) is known to be cached; false for an empty
  // range or one that does not lie inside the mapped file (Mark and Forget ignore those).
  bool Known(uint64_t offset, uint64_t len) const;
  void Mark(uint64_t offset, uint64_t len);
  void Forget(uint64_t offset, uint64_t len);
  // Asks the kernel which pages of [offset, offset + len) the page cache holds now (mincore,
  // one call for up to kLearnPages pages) and marks them; returns how many it marked.
  uint64_t Learn(uint64_t offset, uint64_t len);
  static constexpr uint64_t kLearnPages = 1 << 16;
  uint64_t page_bytes() const { return uint64_t{1} << page_shift_; }

 private:
  FileMap() = default;
  bool Pages(uint64_t offset, uint64_t len, uint64_t* first, uint64_t* last) const;
  void SetKnown(uint64_t offset, uint64_t len, bool known);
  uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  unsigned page_shift_ = 12;
  // One bit a page, in memory mapped anonymous: a 100 GB file needs 3 MiB of bits, and only the
  // words of pages ever marked take real memory.
  uint64_t* bits_ = nullptr;
  uint64_t bit_words_ = 0;
};

}  // namespace spark
