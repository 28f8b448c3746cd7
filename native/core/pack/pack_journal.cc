#include "core/pack/pack_journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/base/crc32.h"

namespace spark {

namespace {

constexpr char kMagic[8] = {'S', 'P', 'K', 'J', 'R', 'N', 'L', '1'};
constexpr size_t kRecordBytes = 16;
constexpr size_t kMaxKeyBytes = 1 << 20;
constexpr uint64_t kMaxJournalBytes = uint64_t{1} << 32;

void PutLe(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t GetLe(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

std::string HeaderFor(const std::string& key) {
  std::string h(16, '\0');
  std::memcpy(h.data(), kMagic, 8);
  PutLe(reinterpret_cast<uint8_t*>(h.data()) + 8, key.size(), 4);
  PutLe(reinterpret_cast<uint8_t*>(h.data()) + 12, Crc32(0, key.data(), key.size()), 4);
  return h + key;
}

// Parses a whole journal image: false if it is not a journal for `key`. *valid_end is the end
// of the last good record.
bool Parse(const std::vector<uint8_t>& img, const std::string& key, uint64_t chunk_count,
           std::vector<JournalRecord>* records, uint64_t* valid_end) {
  std::string header = HeaderFor(key);
  if (img.size() < header.size() || std::memcmp(img.data(), header.data(), header.size()) != 0) return false;
  size_t pos = header.size();
  records->clear();
  while (pos + kRecordBytes <= img.size()) {
    const uint8_t* r = img.data() + pos;
    if (Crc32(0, r, 12) != static_cast<uint32_t>(GetLe(r + 12, 4))) break;
    uint64_t chunk = GetLe(r, 8);
    if (chunk >= chunk_count) break;
    records->push_back({chunk, static_cast<uint32_t>(GetLe(r + 8, 4))});
    pos += kRecordBytes;
  }
  *valid_end = pos;
  return true;
}

Status ReadImage(const PackDir& dir, const std::string& name, std::vector<uint8_t>* img, bool* exists) {
  const std::string path = dir.PathOf(name);
  Fd fd;
  Status s = dir.OpenExisting(name, O_RDONLY, &fd, exists);
  if (!s.ok() || !*exists) return s;
  uint64_t size = 0;
  s = FileSize(fd.get(), path, &size);
  if (!s.ok()) return s;
  if (size > kMaxJournalBytes) size = kMaxJournalBytes;  // beyond any real journal: treat as damaged tail
  img->resize(size);
  size_t got = 0;
  s = PreadFull(fd.get(), img->data(), size, 0, path, &got);
  img->resize(got);
  return s;
}

// The header of the journal open at `fd` (magic, key length, key checksum) and its key; false
// when it is no journal spark wrote.
Status ReadKey(int fd, const std::string& path, std::string* key, bool* valid) {
  *valid = false;
  uint8_t head[16];
  size_t got = 0;
  Status s = PreadFull(fd, head, sizeof head, 0, path, &got);
  if (!s.ok() || got < sizeof head || std::memcmp(head, kMagic, 8) != 0) return s;
  const uint64_t length = GetLe(head + 8, 4);
  if (length > kMaxKeyBytes) return Status::Ok();
  key->assign(length, '\0');
  s = PreadFull(fd, key->data(), length, sizeof head, path, &got);
  *valid = s.ok() && got == length && Crc32(0, key->data(), length) == static_cast<uint32_t>(GetLe(head + 12, 4));
  return s;
}

}  // namespace

std::string FileJournalKey(const std::string& job_key, uint64_t dev, uint64_t ino) {
  return job_key + "\nfile " + std::to_string(dev) + ":" + std::to_string(ino);
}

Status PackJournal::Claim(const PackDir& dir, const std::string& name, const std::string& file, JournalClaim* out) {
  *out = JournalClaim{};
  // The file first: a link or a non-regular file there is refused even when no journal is.
  Fd ffd;
  bool file_exists = false;
  Status s = dir.OpenExisting(file, O_RDONLY, &ffd, &file_exists);
  if (!s.ok()) return s;
  Fd jfd;
  bool exists = false;
  s = dir.OpenExisting(name, O_RDONLY, &jfd, &exists);
  if (!s.ok() || !exists) return s;
  std::string key;
  s = ReadKey(jfd.get(), dir.PathOf(name), &key, &out->journal);
  if (!s.ok() || !out->journal || !file_exists) return s;
  struct stat st;
  if (::fstat(ffd.get(), &st) != 0) return ErrnoStatus(errno, "stat", dir.PathOf(file));
  const std::string identity = FileJournalKey("", st.st_dev, st.st_ino);
  out->names_file =
      key.size() >= identity.size() && key.compare(key.size() - identity.size(), identity.size(), identity) == 0;
  return Status::Ok();
}

Status PackJournal::Read(const PackDir& dir, const std::string& name, const std::string& key, uint64_t chunk_count,
                         std::vector<JournalRecord>* records, bool* matches) {
  if (key.size() > kMaxKeyBytes) return Status::Error(Code::E_USAGE, "journal key too long", dir.PathOf(name));
  std::vector<uint8_t> img;
  bool exists = false;
  Status s = ReadImage(dir, name, &img, &exists);
  if (!s.ok()) return s;
  uint64_t end = 0;
  *matches = exists && Parse(img, key, chunk_count, records, &end);
  if (!*matches) records->clear();
  return Status::Ok();
}

Status PackJournal::Open(const PackDir& dir, const std::string& name, const std::string& key, uint64_t chunk_count,
                         PackJournal* out, bool* reused) {
  const std::string path = dir.PathOf(name);
  if (key.size() > kMaxKeyBytes) return Status::Error(Code::E_USAGE, "journal key too long", path);
  std::vector<uint8_t> img;
  bool exists = false;
  Status s = ReadImage(dir, name, &img, &exists);
  if (!s.ok()) return s;
  out->path_ = path;
  out->records_.clear();
  uint64_t end = 0;
  *reused = exists && Parse(img, key, chunk_count, &out->records_, &end);
  if (*reused) {
    bool still = false;
    s = dir.OpenExisting(name, O_WRONLY, &out->fd_, &still);
    if (!s.ok()) return s;
    if (!still) return Status::Error(Code::E_IO, "disappeared while the pack was reading it", path);
    if (end != img.size()) {
      // Cut off a torn tail so new records follow the last good one.
      if (::ftruncate(out->fd_.get(), static_cast<off_t>(end)) != 0) return ErrnoStatus(errno, "truncate", path);
      s = SyncData(out->fd_.get(), path);
      if (!s.ok()) return s;
    }
    out->end_ = end;
    return Status::Ok();
  }
  // Never reuse a name this run did not vouch for: a journal for other parameters is replaced.
  s = dir.CreateFresh(name, &out->fd_);
  if (!s.ok()) return s;
  std::string header = HeaderFor(key);
  s = PwriteFull(out->fd_.get(), header.data(), header.size(), 0, path);
  if (!s.ok()) return s;
  s = SyncAll(out->fd_.get(), path);
  if (!s.ok()) return s;
  out->end_ = header.size();
  return dir.Sync();
}

Status PackJournal::Append(const std::vector<JournalRecord>& recs) {
  if (recs.empty()) return Status::Ok();
  std::vector<uint8_t> buf(recs.size() * kRecordBytes);
  for (size_t i = 0; i < recs.size(); ++i) {
    uint8_t* r = buf.data() + i * kRecordBytes;
    PutLe(r, recs[i].chunk, 8);
    PutLe(r + 8, recs[i].crc, 4);
    PutLe(r + 12, Crc32(0, r, 12), 4);
  }
  Status s = PwriteFull(fd_.get(), buf.data(), buf.size(), end_, path_);
  if (!s.ok()) return s;
  s = SyncData(fd_.get(), path_);
  if (!s.ok()) return s;
  end_ += buf.size();
  records_.insert(records_.end(), recs.begin(), recs.end());
  return Status::Ok();
}

}  // namespace spark
