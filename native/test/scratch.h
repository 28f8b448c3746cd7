// Scratch directories for the C++ tests, removed when the test binary exits, so a test run
// leaves nothing behind in /tmp. A forked child that exits never removes its parent's. And the
// whole-file reads and writes the tests check their files with.
#pragma once

#include <ftw.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

namespace spark_test {

class ScratchDirs {
 public:
  static ScratchDirs& Get() {
    static ScratchDirs dirs;
    return dirs;
  }

  // A new directory `parent/prefix-XXXXXX`, or "" when it cannot be made.
  std::string Make(const std::string& parent, const std::string& prefix) {
    std::string tmpl = parent + "/" + prefix + "-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) return std::string();
    std::lock_guard<std::mutex> lock(mu_);
    made_.push_back(tmpl);
    return tmpl;
  }

  ~ScratchDirs() {
    if (getpid() != owner_) return;
    for (const auto& d : made_) nftw(d.c_str(), RemoveOne, 16, FTW_DEPTH | FTW_PHYS);
  }

 private:
  ScratchDirs() : owner_(getpid()) {}
  static int RemoveOne(const char* path, const struct stat*, int, struct FTW*) {
    ::remove(path);
    return 0;  // go on: remove what can be removed
  }

  const pid_t owner_;
  std::mutex mu_;
  std::vector<std::string> made_;
};

inline std::string ScratchDir(const std::string& parent = "/tmp", const std::string& prefix = "spark-test") {
  return ScratchDirs::Get().Make(parent, prefix);
}

// The whole file in one read (a byte-wise iterator costs seconds on a 64 MiB file in the
// tests' -Og build); empty when it cannot be read.
inline std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  std::vector<uint8_t> bytes(static_cast<size_t>(in.tellg()));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!in) return {};
  return bytes;
}

inline void WriteAll(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace spark_test
