// A sparse file for the hole and mmap-gather tests: kFileBytes long, with data only in
// [kDataAt, kDataAt + kDataBytes), byte i of the data being i * 131 + 7.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "test/scratch.h"
#include "test/testing.h"

namespace sparse_fixtures {

constexpr uint64_t kFileBytes = 64 << 20;
constexpr uint64_t kDataAt = 16 << 20;
constexpr uint64_t kDataBytes = 1 << 20;

// Writes the file `name` in a scratch directory removed at exit (test/scratch.h).
inline std::string SparseFile(const char* name) {
  static std::string dir = spark_test::ScratchDir("/tmp", "sparse_test");
  std::string path = dir + "/" + name;
  int fd = open(path.c_str(), O_CREAT | O_TRUNC | O_RDWR, 0644);
  CHECK(fd >= 0);
  CHECK_EQ(ftruncate(fd, kFileBytes), 0);
  std::vector<uint8_t> data(kDataBytes);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 131 + 7);
  CHECK_EQ(pwrite(fd, data.data(), data.size(), kDataAt), static_cast<ssize_t>(data.size()));
  close(fd);
  return path;
}

}  // namespace sparse_fixtures
