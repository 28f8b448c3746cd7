// The output directory of a pack, as an opened directory descriptor: every file the packer
// writes is created, opened, renamed and removed relative to it, never through a path that
// could be re-resolved (a parent swapped for a link) between two steps.
//
// The rules (issue: "writers that never follow links"):
//   - a new file is created with O_CREAT|O_EXCL|O_NOFOLLOW: a name that already exists is
//     never written through;
//   - an existing file is reused (a resume) only when it is a regular file with exactly one
//     link, opened with O_NOFOLLOW; the caller also ties it to its journal by inode;
//   - a symbolic link, or a hard-linked file, at a name the packer writes, renames onto or
//     removes is refused with E_UNSAFE_PATH (exit 3) naming it: its target is never touched.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>

#include "core/base/status.h"
#include "core/io/durable_file.h"

namespace spark {

class PackDir {
 public:
  PackDir() = default;
  // Opens `path` as a directory (the caller owns the choice of directory, links included).
  static Status Open(const std::string& path, PackDir* out);
  // Uses an already opened directory descriptor (not owned: the caller keeps it open).
  static Status Borrow(int fd, const std::string& path, PackDir* out);

  int fd() const { return fd_ >= 0 ? fd_ : owned_.get(); }
  const std::string& path() const { return path_; }
  std::string PathOf(const std::string& name) const { return path_ + "/" + name; }

  // lstat of `name`: *exists false when there is none. Any other failure is an error.
  Status Lstat(const std::string& name, struct stat* st, bool* exists) const;
  // Creates `name` (read-write), failing with E_UNSAFE_PATH on a link and E_IO if it exists.
  Status Create(const std::string& name, Fd* out) const;
  // Creates `name` after removing a leftover regular file of that name (never a link).
  Status CreateFresh(const std::string& name, Fd* out) const;
  // Opens an existing regular, singly linked file (flags: O_RDONLY or O_RDWR);
  // *exists false when there is none.
  Status OpenExisting(const std::string& name, int flags, Fd* out, bool* exists) const;
  // Removes `name` if present; anything but a singly linked regular file there is refused.
  Status Remove(const std::string& name) const;
  // rename(from, to) inside the directory, then fsync of the directory. A link at `to` is
  // refused (rename would replace the link itself, but a link there is not ours).
  Status Rename(const std::string& from, const std::string& to) const;
  // Writes `name` atomically: `name.tmp` created fresh, written, fsync'd, renamed, dir fsync'd.
  Status WriteFileAtomic(const std::string& name, const void* data, size_t size) const;
  // Reads a regular file of at most max_bytes; *exists false when there is none.
  Status ReadSmallFile(const std::string& name, uint64_t max_bytes, std::string* out, bool* exists) const;
  Status Sync() const;

 private:
  Status Refuse(const std::string& name, const struct stat& st) const;

  Fd owned_;
  int fd_ = -1;
  std::string path_;
};

// Whether the filesystem of `dir` keeps holes: a file truncated to 16 MiB with 4 KiB written
// in its middle, synced, then measured. *allocated is what it took. With `fill` (tests: what
// a filesystem without holes does) the whole file is written instead.
struct HoleProbe {
  uint64_t apparent = 0;
  uint64_t allocated = 0;
  bool holes() const { return allocated * 2 < apparent; }
};
inline constexpr const char* kHoleProbeName = ".spark-hole-probe";
Status ProbeHoles(const PackDir& dir, bool fill, HoleProbe* out);

}  // namespace spark
