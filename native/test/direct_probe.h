// What a directory's filesystem allows, found without the code under test, so tests can
// insist the O_DIRECT path is taken exactly where it is possible.
#pragma once

#include <fcntl.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace spark_test {

// An O_DIRECT open and one aligned read of a scratch file in `dir`.
inline bool DirectAllowedIn(const std::string& dir) {
  const std::string probe = dir + "/.direct-probe";
  int w = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (w < 0) return false;
  char block[4096] = {1};
  bool ok = ::write(w, block, sizeof block) == static_cast<ssize_t>(sizeof block);
  ::close(w);
  int fd = ok ? ::open(probe.c_str(), O_RDONLY | O_DIRECT) : -1;
  ok = fd >= 0;
  if (ok) {
    void* p = std::aligned_alloc(4096, 4096);
    ok = p != nullptr && ::pread(fd, p, 4096, 0) == 4096;
    std::free(p);
    ::close(fd);
  }
  ::unlink(probe.c_str());
  return ok;
}

inline bool IsTmpfs(const std::string& dir) {
  struct statfs fs;
  return ::statfs(dir.c_str(), &fs) == 0 && fs.f_type == 0x01021994;
}

}  // namespace spark_test
