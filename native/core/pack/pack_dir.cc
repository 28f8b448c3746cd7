#include "core/pack/pack_dir.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

namespace spark {

namespace {

Status OpenAt(int dir, const std::string& name, int flags, const std::string& path, Fd* out, int* err) {
  int fd;
  do {
    fd = ::openat(dir, name.c_str(), flags | O_CLOEXEC | O_NOFOLLOW, 0644);
  } while (fd < 0 && errno == EINTR);
  *err = fd < 0 ? errno : 0;
  if (fd < 0) return ErrnoStatus(errno, "open", path);
  *out = Fd(fd);
  return Status::Ok();
}

bool PlainName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

}  // namespace

Status PackDir::Open(const std::string& path, PackDir* out) {
  out->path_ = path;
  out->fd_ = -1;
  return OpenFile(path, O_RDONLY | O_DIRECTORY, &out->owned_);
}

Status PackDir::Borrow(int fd, const std::string& path, PackDir* out) {
  struct stat st;
  if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status::Error(Code::E_USAGE, "the output directory descriptor is not an open directory", path);
  }
  out->path_ = path;
  out->fd_ = fd;
  return Status::Ok();
}

Status PackDir::Refuse(const std::string& name, const struct stat& st) const {
  std::string what = S_ISLNK(st.st_mode)   ? "is a symbolic link"
                     : S_ISREG(st.st_mode) ? "is a file with " + std::to_string(st.st_nlink) + " hard links"
                                           : "is not a regular file";
  return Status::Error(Code::E_UNSAFE_PATH,
                       what +
                           " where spark pack writes; spark never writes through links: remove it (or use "
                           "another --out) and re-run",
                       PathOf(name));
}

Status PackDir::Lstat(const std::string& name, struct stat* st, bool* exists) const {
  if (!PlainName(name)) return Status::Error(Code::E_USAGE, "'" + name + "' is not a plain file name", path_);
  if (::fstatat(fd(), name.c_str(), st, AT_SYMLINK_NOFOLLOW) == 0) {
    *exists = true;
    return Status::Ok();
  }
  *exists = false;
  if (errno == ENOENT) return Status::Ok();
  return ErrnoStatus(errno, "stat", PathOf(name));
}

Status PackDir::Create(const std::string& name, Fd* out) const {
  if (!PlainName(name)) return Status::Error(Code::E_USAGE, "'" + name + "' is not a plain file name", path_);
  int err = 0;
  Status s = OpenAt(fd(), name, O_RDWR | O_CREAT | O_EXCL, PathOf(name), out, &err);
  if (err == EEXIST || err == ELOOP) {
    struct stat st;
    bool exists = false;
    Status l = Lstat(name, &st, &exists);
    if (!l.ok()) return l;
    if (exists && (!S_ISREG(st.st_mode) || st.st_nlink != 1)) return Refuse(name, st);
  }
  return s;
}

Status PackDir::CreateFresh(const std::string& name, Fd* out) const {
  Status s = Remove(name);
  if (!s.ok()) return s;
  return Create(name, out);
}

Status PackDir::OpenExisting(const std::string& name, int flags, Fd* out, bool* exists) const {
  struct stat st;
  Status s = Lstat(name, &st, exists);
  if (!s.ok() || !*exists) return s;
  if (!S_ISREG(st.st_mode) || st.st_nlink != 1) return Refuse(name, st);
  int err = 0;
  // O_NONBLOCK: should the name become a FIFO between the lstat and the open, do not hang.
  s = OpenAt(fd(), name, flags | O_NONBLOCK, PathOf(name), out, &err);
  if (err == ENOENT) {
    *exists = false;
    return Status::Ok();
  }
  if (!s.ok()) return err == ELOOP ? Refuse(name, st) : s;
  if (::fstat(out->get(), &st) != 0) return ErrnoStatus(errno, "stat", PathOf(name));
  if (!S_ISREG(st.st_mode) || st.st_nlink != 1) return Refuse(name, st);
  int fl = ::fcntl(out->get(), F_GETFL);
  if (fl >= 0) ::fcntl(out->get(), F_SETFL, fl & ~O_NONBLOCK);
  return Status::Ok();
}

Status PackDir::Remove(const std::string& name) const {
  struct stat st;
  bool exists = false;
  Status s = Lstat(name, &st, &exists);
  if (!s.ok() || !exists) return s;
  if (!S_ISREG(st.st_mode) || st.st_nlink != 1) return Refuse(name, st);
  if (::unlinkat(fd(), name.c_str(), 0) != 0 && errno != ENOENT) return ErrnoStatus(errno, "remove", PathOf(name));
  return Status::Ok();
}

Status PackDir::Rename(const std::string& from, const std::string& to) const {
  struct stat st;
  bool exists = false;
  Status s = Lstat(to, &st, &exists);
  if (!s.ok()) return s;
  if (exists && !S_ISREG(st.st_mode)) return Refuse(to, st);
  s = Lstat(from, &st, &exists);
  if (!s.ok()) return s;
  if (!exists) return Status::Error(Code::E_IO, "is missing: cannot rename it to " + to, PathOf(from));
  if (!S_ISREG(st.st_mode)) return Refuse(from, st);
  if (::renameat(fd(), from.c_str(), fd(), to.c_str()) != 0) return ErrnoStatus(errno, "rename to " + to, PathOf(from));
  return Sync();
}

Status PackDir::Sync() const {
  // Some filesystems refuse fsync on a directory (EINVAL); their renames are synchronous.
  if (::fsync(fd()) != 0 && errno != EINVAL) return ErrnoStatus(errno, "fsync of directory", path_);
  return Status::Ok();
}

Status PackDir::WriteFileAtomic(const std::string& name, const void* data, size_t size) const {
  const std::string tmp = name + ".tmp";
  Fd f;
  Status s = CreateFresh(tmp, &f);
  if (!s.ok()) return s;  // nothing of ours to clean up: a link there stays as it is
  s = PwriteFull(f.get(), data, size, 0, PathOf(tmp));
  if (s.ok()) s = SyncAll(f.get(), PathOf(tmp));
  f.Close();
  if (s.ok()) s = Rename(tmp, name);
  if (!s.ok()) ::unlinkat(fd(), tmp.c_str(), 0);  // the file this call created
  return s;
}

Status PackDir::ReadSmallFile(const std::string& name, uint64_t max_bytes, std::string* out, bool* exists) const {
  Fd f;
  Status s = OpenExisting(name, O_RDONLY, &f, exists);
  if (!s.ok() || !*exists) return s;
  uint64_t size = 0;
  s = FileSize(f.get(), PathOf(name), &size);
  if (!s.ok()) return s;
  if (size > max_bytes) {
    return Status::Error(Code::E_PACK_MANIFEST,
                         "is " + std::to_string(size) + " bytes, more than a manifest can be (" +
                             std::to_string(max_bytes) + "); remove it or use another --out",
                         PathOf(name));
  }
  out->assign(size, '\0');
  size_t got = 0;
  s = PreadFull(f.get(), out->data(), size, 0, PathOf(name), &got);
  out->resize(got);
  return s;
}

Status ProbeHoles(const PackDir& dir, bool fill, HoleProbe* out) {
  constexpr uint64_t kApparent = uint64_t{16} << 20;
  constexpr uint64_t kWrite = 4096;
  const std::string path = dir.PathOf(kHoleProbeName);
  Fd f;
  Status s = dir.CreateFresh(kHoleProbeName, &f);
  if (!s.ok()) return s;
  std::vector<uint8_t> block(fill ? (uint64_t{1} << 20) : kWrite, 0x5a);
  if (::ftruncate(f.get(), static_cast<off_t>(kApparent)) != 0) s = ErrnoStatus(errno, "truncate", path);
  if (s.ok() && fill) {
    for (uint64_t at = 0; s.ok() && at < kApparent; at += block.size())
      s = PwriteFull(f.get(), block.data(), block.size(), at, path);
  } else if (s.ok()) {
    s = PwriteFull(f.get(), block.data(), kWrite, kApparent / 2, path);
  }
  if (s.ok()) s = SyncAll(f.get(), path);  // some filesystems account blocks only once written back
  struct stat st;
  if (s.ok() && ::fstat(f.get(), &st) != 0) s = ErrnoStatus(errno, "stat", path);
  if (s.ok()) {
    out->apparent = kApparent;
    out->allocated = static_cast<uint64_t>(st.st_blocks) * 512;
  }
  f.Close();
  Status r = dir.Remove(kHoleProbeName);
  return s.ok() ? r : s;
}

}  // namespace spark
