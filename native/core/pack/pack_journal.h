// The journal of a pack in progress: which chunks of a .partial data file are written and
// durable, with their checksums, so an interrupted pack resumes instead of starting over.
//
//   "SPKJRNL1" | u32 key length | u32 crc32(key) | key bytes (the job's identity, JSON)
//   then 16-byte records: u64 chunk index | u32 chunk crc32 | u32 crc32 of the first 12 bytes
// All integers little-endian. A record is appended only after the data file's fdatasync has
// returned, so the journal never claims bytes that are not on disk. A torn or garbled tail
// (a crash mid-append) ends the valid prefix; it is cut off before new records are appended.
// A journal for another key (changed source, layout, range...) is discarded, never reused.
// Journals live in the pack's directory and are opened through it (core/pack/pack_dir.h): never
// through a link.
//
// The journal is also spark's proof of ownership: its key ends with the identity (device and
// inode) of the data file it was written for (FileJournalKey), and spark writes no byte into a
// new `.partial` before the journal naming it is durable. A `.partial` (or a finished file
// without its manifest) is spark's exactly when the journal beside it names it (Claim); any
// other file under those names is someone else's, and the pack leaves it alone unless told to
// replace it (src/stacks/pack-owner.ts).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/io/durable_file.h"
#include "core/pack/pack_dir.h"

namespace spark {

// The journal key of the data file with identity (dev, ino): the job's key plus that identity.
std::string FileJournalKey(const std::string& job_key, uint64_t dev, uint64_t ino);

// What a journal proves of a file beside it: `journal`, the journal is one spark wrote (its
// magic and its key's checksum hold), for whatever job; `names_file`, its key names the file's
// device and inode, so the file is the one spark created for that journal.
struct JournalClaim {
  bool journal = false;
  bool names_file = false;
};

struct JournalRecord {
  uint64_t chunk = 0;
  uint32_t crc = 0;
};

class PackJournal {
 public:
  // Opens `name` in `dir`. If it is a journal for `key`, keeps its valid records (those naming
  // a chunk below chunk_count) and sets *reused; otherwise replaces it with a fresh, durable,
  // empty journal.
  static Status Open(const PackDir& dir, const std::string& name, const std::string& key, uint64_t chunk_count,
                     PackJournal* out, bool* reused);
  // Reads the valid records of a journal for `key` without changing it (*matches false when
  // the file is missing or belongs to another key).
  static Status Read(const PackDir& dir, const std::string& name, const std::string& key, uint64_t chunk_count,
                     std::vector<JournalRecord>* records, bool* matches);

  // What the journal `name` proves of `file` in `dir` (both absent: nothing). A link or a file
  // that is not a singly linked regular file at either name is refused (E_UNSAFE_PATH).
  static Status Claim(const PackDir& dir, const std::string& name, const std::string& file, JournalClaim* out);

  const std::vector<JournalRecord>& records() const { return records_; }
  const std::string& path() const { return path_; }
  // Appends the records and makes them durable (fdatasync) before returning.
  Status Append(const std::vector<JournalRecord>& recs);

 private:
  std::string path_;
  Fd fd_;
  uint64_t end_ = 0;
  std::vector<JournalRecord> records_;
};

}  // namespace spark
