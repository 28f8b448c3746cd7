// A half-open range of global row ids, [start, end): the rows a table holds, a rank owns, a
// sparse copy keeps, or whose scales stay resident. The one spelling of such a range in the
// core, so every reader meets start/end and the same checks.
#pragma once

#include <cstdint>
#include <string>

namespace spark {

struct IdRange {
  uint64_t start = 0, end = 0;

  bool valid() const { return start <= end; }
  uint64_t size() const { return end - start; }  // of a valid range
  bool contains(uint64_t id) const { return id >= start && id < end; }
  bool within(const IdRange& outer) const { return start >= outer.start && end <= outer.end; }
  // "[start, end)", as messages print a range.
  std::string text() const { return "[" + std::to_string(start) + ", " + std::to_string(end) + ")"; }
};

}  // namespace spark
