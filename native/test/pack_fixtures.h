// What the packer's tests share (pack_test.cc, pack_sparse_test.cc): temp directories, whole
// files in and out, one pool, the output directory of a test and the file-job settings that
// exercise the journal.
#pragma once

#include <stdlib.h>

#include <memory>
#include <string>
#include <vector>

#include "core/pack/pack_dir.h"
#include "core/pack/pack_engine.h"
#include "core/threads/thread_pool.h"
#include "test/scratch.h"
#include "test/testing.h"

namespace pack_test {

// Removed when the test binary exits (scratch.h).
inline std::string TempDir(const std::string& parent = "/tmp") {
  return spark_test::ScratchDir(parent, "spark-pack-test");
}

using spark_test::ReadAll;
using spark_test::WriteAll;

inline spark::ThreadPool& Pool() {
  static spark::ThreadPool pool(6);
  return pool;
}

// The output directory of a test (its own temp dir) and the name of the data file in it.
struct Out {
  spark::PackDir dir;
  std::string name;
  std::string path() const { return dir.PathOf(name); }
  std::string partial() const { return dir.PathOf(spark::PartialName(name)); }
  std::string journal() const { return dir.PathOf(spark::JournalName(name)); }
};

inline std::unique_ptr<Out> MakeOut(const std::string& name, const std::string& parent = "/tmp") {
  auto out = std::make_unique<Out>();
  CHECK(spark::PackDir::Open(TempDir(parent), &out->dir).ok());
  out->name = name;
  return out;
}

// Three copy workers on the shared pool, writing `out`, committing after every chunk (so the
// journal is exercised).
inline void SetFileJob(spark::PackFileJob* file, const Out& out, std::string key) {
  file->dir = &out.dir;
  file->name = out.name;
  file->key = std::move(key);
  file->threads = 3;
  file->pool = &Pool();
  file->commit_bytes = 1;
}

// An I/O failure mid-pack: E_IO, and the message tells the user how to resume.
inline void CheckResumableIoError(const spark::Status& s) {
  CHECK(s.code == spark::Code::E_IO);
  CHECK(s.message.find("re-run the same command to resume") != std::string::npos);
}

}  // namespace pack_test
