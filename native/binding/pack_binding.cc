// Node-API glue for the packer and verifier (core/pack/pack.h, core/pack/pack_sparse.h, core/pack/verify.h).
//
// packLayer(job), packSparseShard(job), verifyLayer(job) and verifySparseTable(job) return
// {promise, progress}: the promise settles once with the result; progress() reads the job's
// counters (atomics the core updates) at any time, so TypeScript can poll it for a progress
// line without any callback into JS from the worker threads. lockDirectory/unlockDirectory hold an flock on the output
// directory so two packs cannot write the same files (the kernel drops it when the process
// dies); the locked descriptor is also the directory every pack file is written through
// (dirWriteFile, dirReadFile, dirRemove, dirRename, probeHoles: small, synchronous, core/pack/pack_dir.h;
// dirJournalClaim: what a journal proves of a file beside it, core/pack/pack_journal.h).
#include <fcntl.h>
#include <napi.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "binding/addon_env.h"
#include "binding/args.h"
#include "binding/async.h"
#include "binding/errors.h"
#include "core/base/crc32.h"
#include "core/pack/pack.h"
#include "core/pack/pack_dir.h"
#include "core/pack/pack_journal.h"
#include "core/pack/pack_sparse.h"
#include "core/pack/verify.h"

namespace spark {
namespace {

PackSource GetSource(const Fields& o, const char* key) {
  Fields s = o.Object(key);
  return PackSource{s.String("path"), s.U64("offset")};
}

PackGeometry GetGeometry(const Fields& o) {
  PackLayout layout;
  if (!ParseLayout(o.String("layout"), &layout)) ThrowType(o.Env(), o.Name("layout") + " must be 'dense' or 'page'");
  PackGeometry g;
  Status s = PackGeometry::Make(o.U64("rows"), o.U64("dim"), layout, o.U64("chunkRows"), &g);
  if (!s.ok()) ThrowRange(o.Env(), s.message, s.code);
  return g;
}

uint32_t GetThreads(const Fields& o) {
  uint64_t t = o.U64Or("threads", 4);
  if (t < 1 || t > 256) ThrowRange(o.Env(), o.Name("threads") + " must be between 1 and 256", Code::E_USAGE);
  return static_cast<uint32_t>(t);
}

Napi::Array U64Array(Napi::Env env, const std::vector<uint64_t>& v) {
  Napi::Array a = Napi::Array::New(env, v.size());
  for (uint32_t i = 0; i < v.size(); ++i) a.Set(i, FromU64(env, v[i]));
  return a;
}

// {promise, progress}: progress() reads `counters()` of the shared state.
template <typename State, typename Read>
Napi::Object Handle(Napi::Env env, Napi::Promise promise, std::shared_ptr<State> state, Read read) {
  Napi::Object h = Napi::Object::New(env);
  h.Set("promise", promise);
  h.Set("progress", Napi::Function::New(env, [state, read](const Napi::CallbackInfo& info) -> Napi::Value {
          return U64Array(info.Env(), read(*state));
        }));
  return h;
}

Napi::Object PackResultObject(Napi::Env env, const PackResult& r) {
  Napi::Object o = U64Object(env, {{"chunksKept", r.chunks_kept},
                                   {"chunksRejected", r.chunks_rejected},
                                   {"chunksWritten", r.chunks_written},
                                   {"bytesWritten", r.bytes_written}});
  Napi::Array crcs = Napi::Array::New(env, r.crcs.size());
  for (uint32_t i = 0; i < r.crcs.size(); ++i) crcs.Set(i, Napi::Number::New(env, r.crcs[i]));
  o.Set("checksums", crcs);
  o.Set("journalDiscarded", r.journal_discarded);
  o.Set("wasComplete", r.was_complete);
  o.Set("readIo", r.read_io);
  o.Set("writeIo", r.write_io);
  return o;
}

// The directory a locked descriptor names (dirFd from lockDirectory), borrowed for one call
// or job; its path only names it in messages.
PackDir BorrowDir(Napi::Env env, Napi::Value fd_value, Napi::Value path_value) {
  uint64_t fd = U64Value(fd_value, "dirFd");
  if (fd > 1u << 30) ThrowType(env, "dirFd must be a file descriptor");
  PackDir dir;
  Status s = PackDir::Borrow(static_cast<int>(fd), StringValue(path_value, "dirPath"), &dir);
  if (!s.ok()) throw StatusToError(env, s);
  return dir;
}

// What every pack job shares: the directory (a borrowed descriptor), the file's name, the
// resume key, the workers and the commit policy. The baton owns the directory and the limiter.
struct FileJobParts {
  PackDir dir;
  std::unique_ptr<RateLimiter> rate;
};

void GetFileJob(const Fields& o, FileJobParts* parts, PackFileJob* file) {
  parts->dir = BorrowDir(o.Env(), o.Get("dirFd"), o.Get("dirPath"));
  parts->rate = std::make_unique<RateLimiter>(o.U64Or("rateLimit", 0));
  file->name = o.String("name");
  file->key = o.String("key");
  file->threads = GetThreads(o);
  file->commit_bytes = o.U64Or("commitBytes", file->commit_bytes);
  file->commit_seconds = static_cast<double>(o.U64Or("commitMs", 2000)) / 1000.0;
  file->drop_cache = o.BoolOr("dropCache", true);
  file->fault_after_chunks = o.U64Or("faultAfterChunks", 0);
  file->direct_io = o.BoolOr("directIo", true);
  file->finish_as_partial = o.BoolOr("finishAsPartial", false);
  if (o.Has("testDirectRefusal")) {  // tests only: "open" or "transfer"
    Napi::Value refusal = o.Get("testDirectRefusal");
    std::string r = refusal.IsString() ? refusal.As<Napi::String>().Utf8Value() : "";
    if (r != "open" && r != "transfer")
      ThrowType(o.Env(), o.Name("testDirectRefusal") + " must be \"open\" or \"transfer\"");
    file->direct_refusal_for_tests = r == "open" ? DirectRefusal::kAtOpen : DirectRefusal::kAtTransfer;
  }
}

std::vector<uint64_t> ReadPackProgress(const PackProgress& p) {
  return {p.phase.load(), p.chunks_total.load(), p.chunks_done.load(), p.bytes_total.load(), p.bytes_done.load()};
}

// Job is PackJob or SparseShardJob; Run is PackLayer or PackSparseShard.
template <typename Job, Status (*Run)(const Job&, PackProgress*, PackResult*)>
class PackBaton : public JobBaton {
 public:
  // The copy workers and the committer run on the environment's job pool, with that many
  // threads kept for this job while it is in flight.
  PackBaton(Napi::Env env, Job job, std::unique_ptr<FileJobParts> parts, std::shared_ptr<PackProgress> progress)
      : JobBaton(env, size_t{job.file.threads} + 1),
        job_(std::move(job)),
        parts_(std::move(parts)),
        progress_(std::move(progress)) {
    job_.file.dir = &parts_->dir;
    job_.file.rate = parts_->rate.get();
  }
  void Execute() override {
    job_.file.pool = &pool();
    status_ = Run(job_, progress_.get(), &result_);
  }
  Napi::Value OnOk(Napi::Env env) override { return PackResultObject(env, result_); }

 private:
  Job job_;
  std::unique_ptr<FileJobParts> parts_;
  std::shared_ptr<PackProgress> progress_;
  PackResult result_;
};

template <typename Job, Status (*Run)(const Job&, PackProgress*, PackResult*)>
Napi::Value SchedulePack(Napi::Env env, Job job, std::unique_ptr<FileJobParts> parts) {
  auto progress = std::make_shared<PackProgress>();
  auto baton = std::make_unique<PackBaton<Job, Run>>(env, std::move(job), std::move(parts), progress);
  Napi::Promise promise = ScheduleJob(env, std::move(baton));
  return Handle(env, promise, progress, ReadPackProgress);
}

Napi::Value PackLayerJs(const Napi::CallbackInfo& info) {
  Fields o(info[0], "job");
  PackJob job;
  auto parts = std::make_unique<FileJobParts>();
  GetFileJob(o, parts.get(), &job.file);
  job.weight = GetSource(o, "weight");
  job.scale = GetSource(o, "scale");
  job.start = o.U64("start");
  job.geometry = GetGeometry(o);
  job.header = o.Bytes("header");
  job.drop_source_cache = o.BoolOr("dropSourceCache", true);
  return SchedulePack<PackJob, PackLayer>(info.Env(), std::move(job), std::move(parts));
}

Napi::Value PackSparseShardJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Fields o(info[0], "job");
  SparseShardJob job;
  auto parts = std::make_unique<FileJobParts>();
  GetFileJob(o, parts.get(), &job.file);
  job.source_path = o.String("sourcePath");
  job.source_bytes = o.U64("sourceBytes");
  job.header_bytes = o.U64("headerBytes");
  uint64_t crc = o.U64("headerCrc");
  if (crc > 0xFFFFFFFFull) ThrowType(env, "job.headerCrc must be a uint32");
  job.header_crc = static_cast<uint32_t>(crc);
  job.drop_source_cache = o.BoolOr("dropSourceCache", true);
  Napi::Value tv = o.Get("tables");
  if (!tv.IsArray()) ThrowType(env, "job.tables must be an array");
  auto tables = tv.As<Napi::Array>();
  for (uint32_t i = 0; i < tables.Length(); ++i) {
    Fields t(tables.Get(i), "job.tables[" + std::to_string(i) + "]");
    job.tables.push_back({t.U64("weightOffset"),
                          t.U64("scaleOffset"),
                          t.U64("dim"),
                          {t.U64("start"), t.U64("end")},
                          t.U64("chunkRows")});
  }
  Status s = CheckSparseJob(job);
  if (!s.ok()) throw StatusToError(env, s);
  return SchedulePack<SparseShardJob, PackSparseShard>(env, std::move(job), std::move(parts));
}

// A dense/page pack's layer (VerifyLayer) or a sparse copy's table (VerifySparseTable): the
// same result object (a sparse table leaves the file fields unset).
template <typename Job, Status (*Run)(const Job&, VerifyProgress*, VerifyResult*)>
class VerifyBaton : public JobBaton {
 public:
  VerifyBaton(Napi::Env env, Job job, std::shared_ptr<VerifyProgress> progress)
      : JobBaton(env, job.threads), job_(std::move(job)), progress_(std::move(progress)) {}
  void Execute() override {
    job_.pool = &pool();
    status_ = Run(job_, progress_.get(), &result_);
  }
  Napi::Value OnOk(Napi::Env env) override {
    Napi::Object o = U64Object(env, {{"fileBytes", result_.file_bytes},
                                     {"chunksChecked", result_.chunks_checked},
                                     {"badChunkCount", result_.bad_chunk_count},
                                     {"rowsCompared", result_.rows_compared},
                                     {"badRowCount", result_.bad_row_count},
                                     {"bytesRead", result_.bytes_read}});
    o.Set("sizeOk", result_.size_ok);
    o.Set("headerOk", result_.header_ok);
    o.Set("badChunks", U64Array(env, result_.bad_chunks));
    o.Set("badRows", U64Array(env, result_.bad_rows));
    o.Set("readIo", result_.read_io);
    return o;
  }

 private:
  Job job_;
  std::shared_ptr<VerifyProgress> progress_;
  VerifyResult result_;
};

template <typename Job, Status (*Run)(const Job&, VerifyProgress*, VerifyResult*)>
Napi::Value ScheduleVerify(Napi::Env env, Job job) {
  auto progress = std::make_shared<VerifyProgress>();
  auto baton = std::make_unique<VerifyBaton<Job, Run>>(env, std::move(job), progress);
  Napi::Promise promise = ScheduleJob(env, std::move(baton));
  return Handle(env, promise, progress, [](const VerifyProgress& p) {
    return std::vector<uint64_t>{p.bytes_total.load(), p.bytes_done.load()};
  });
}

std::vector<uint32_t> GetChecksums(const Fields& o) {
  std::vector<uint32_t> crcs;
  for (uint64_t c : o.U64ListOr("checksums")) {
    if (c > 0xFFFFFFFFull) ThrowType(o.Env(), o.Name("checksums") + " must hold 32-bit values");
    crcs.push_back(static_cast<uint32_t>(c));
  }
  return crcs;
}

Napi::Value VerifyLayerJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Fields o(info[0], "job");
  VerifyJob job;
  job.path = o.String("path");
  job.geometry = GetGeometry(o);
  job.header = o.Bytes("header");
  job.crcs = GetChecksums(o);
  job.threads = GetThreads(o);
  job.check_chunks = o.BoolOr("checkChunks", true);
  job.drop_cache = o.BoolOr("dropCache", true);
  job.direct_io = o.BoolOr("directIo", true);
  if (o.Has("source")) {
    Fields s = o.Object("source");
    job.has_source = true;
    job.weight = GetSource(s, "weight");
    job.scale = GetSource(s, "scale");
    job.start = s.U64("start");
    job.all_rows = s.BoolOr("allRows", false);
    job.sample_rows = s.U64ListOr("sampleRows");
  }
  return ScheduleVerify<VerifyJob, VerifyLayer>(env, std::move(job));
}

// verifySparseTable({weight, scale, dim, start, end, chunkRows, checksums?, source?: {weight,
// scale}, threads, dropCache?, directIo?}): every chunk checksum when checksums are given,
// every row against source when it is.
Napi::Value VerifySparseTableJs(const Napi::CallbackInfo& info) {
  Fields o(info[0], "job");
  SparseVerifyJob job;
  job.weight = GetSource(o, "weight");
  job.scale = GetSource(o, "scale");
  job.dim = o.U64("dim");
  job.start = o.U64("start");
  job.end = o.U64("end");
  job.chunk_rows = o.U64("chunkRows");
  job.check_chunks = o.Has("checksums");
  job.crcs = GetChecksums(o);
  if (o.Has("source")) {
    Fields s = o.Object("source");
    job.compare_rows = true;
    job.source_weight = GetSource(s, "weight");
    job.source_scale = GetSource(s, "scale");
  }
  job.threads = GetThreads(o);
  job.drop_cache = o.BoolOr("dropCache", true);
  job.direct_io = o.BoolOr("directIo", true);
  return ScheduleVerify<SparseVerifyJob, VerifySparseTable>(info.Env(), std::move(job));
}

// lockDirectory(path): an fd holding flock(LOCK_EX) on the directory; E_PACK_BUSY if taken.
Napi::Value LockDirectoryJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) ThrowType(env, "path must be a string");
  std::string path = info[0].As<Napi::String>().Utf8Value();
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw StatusToError(env, ErrnoStatus(errno, "open", path));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      throw StatusToError(env, Status::Error(Code::E_PACK_BUSY,
                                             "another spark pack is writing this directory; wait for it or "
                                             "use another --out",
                                             path));
    }
    throw StatusToError(env, ErrnoStatus(err, "lock", path));
  }
  return Napi::Number::New(env, fd);
}

void UnlockDirectoryJs(const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || !info[0].IsNumber()) ThrowType(info.Env(), "fd must be a number");
  ::close(info[0].As<Napi::Number>().Int32Value());  // closing releases the flock
}

// The directory a locked descriptor names: dirFd (from lockDirectory) and its path for messages.
PackDir DirArg(const Napi::CallbackInfo& info) { return BorrowDir(info.Env(), info[0], info[1]); }

std::string NameArg(const Napi::CallbackInfo& info, size_t i) { return StringValue(info[i], "name"); }

// dirWriteFile(dirFd, dirPath, name, data): name written atomically (name.tmp, fsync, rename).
void DirWriteFileJs(const Napi::CallbackInfo& info) {
  PackDir dir = DirArg(info);
  std::string name = NameArg(info, 2);
  if (info.Length() < 4 || !info[3].IsTypedArray()) ThrowType(info.Env(), "data must be a Buffer or Uint8Array");
  auto data = info[3].As<Napi::Uint8Array>();
  Status s = dir.WriteFileAtomic(name, data.Data(), data.ByteLength());
  if (!s.ok()) throw StatusToError(info.Env(), s);
}

// dirReadFile(dirFd, dirPath, name, maxBytes): the file's bytes, or undefined when absent.
Napi::Value DirReadFileJs(const Napi::CallbackInfo& info) {
  PackDir dir = DirArg(info);
  std::string name = NameArg(info, 2);
  uint64_t max = U64Value(info[3], "maxBytes");
  std::string text;
  bool exists = false;
  Status s = dir.ReadSmallFile(name, max, &text, &exists);
  if (!s.ok()) throw StatusToError(info.Env(), s);
  if (!exists) return info.Env().Undefined();
  return Napi::Buffer<char>::Copy(info.Env(), text.data(), text.size());
}

// dirRemove(dirFd, dirPath, name): removes a file if present; a link there is refused.
void DirRemoveJs(const Napi::CallbackInfo& info) {
  PackDir dir = DirArg(info);
  Status s = dir.Remove(NameArg(info, 2));
  if (s.ok()) s = dir.Sync();
  if (!s.ok()) throw StatusToError(info.Env(), s);
}

// dirRename(dirFd, dirPath, from, to): renames a regular file over `to` (a link at either is
// refused), then fsyncs the directory.
void DirRenameJs(const Napi::CallbackInfo& info) {
  PackDir dir = DirArg(info);
  std::string from = NameArg(info, 2), to = NameArg(info, 3);
  Status s = dir.Rename(from, to);
  if (!s.ok()) throw StatusToError(info.Env(), s);
}

// dirJournalClaim(dirFd, dirPath, journalName, fileName): {journal, namesFile}: whether
// journalName is a journal spark wrote, and whether it names fileName (core/pack/pack_journal.h).
Napi::Value DirJournalClaimJs(const Napi::CallbackInfo& info) {
  PackDir dir = DirArg(info);
  JournalClaim claim;
  Status s = PackJournal::Claim(dir, NameArg(info, 2), NameArg(info, 3), &claim);
  if (!s.ok()) throw StatusToError(info.Env(), s);
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("journal", claim.journal);
  o.Set("namesFile", claim.names_file);
  return o;
}

// probeHoles(dirFd, dirPath, fill): {apparent, allocated} of a 16 MiB file with 4 KiB written.
Napi::Value ProbeHolesJs(const Napi::CallbackInfo& info) {
  PackDir dir = DirArg(info);
  if (info.Length() < 3 || !info[2].IsBoolean()) ThrowType(info.Env(), "fill must be a boolean");
  HoleProbe probe;
  Status s = ProbeHoles(dir, info[2].As<Napi::Boolean>().Value(), &probe);
  if (!s.ok()) throw StatusToError(info.Env(), s);
  return U64Object(info.Env(), {{"apparent", probe.apparent}, {"allocated", probe.allocated}});
}

// crc32(buffer, crc = 0): the same CRC-32 the packer writes (zlib's).
Napi::Value Crc32Js(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsTypedArray() ||
      info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    ThrowType(env, "data must be a Buffer or Uint8Array");
  }
  auto data = info[0].As<Napi::Uint8Array>();
  uint64_t seed = 0;
  if (info.Length() > 1 && (!ToU64(info[1], &seed) || seed > 0xFFFFFFFFull)) ThrowType(env, "crc must be a uint32");
  return Napi::Number::New(env, Crc32(static_cast<uint32_t>(seed), data.Data(), data.ByteLength()));
}

}  // namespace

void InitPack(Napi::Env env, Napi::Object exports) {
  exports.Set("packLayer", Napi::Function::New(env, PackLayerJs, "packLayer"));
  exports.Set("packSparseShard", Napi::Function::New(env, PackSparseShardJs, "packSparseShard"));
  exports.Set("verifyLayer", Napi::Function::New(env, VerifyLayerJs, "verifyLayer"));
  exports.Set("verifySparseTable", Napi::Function::New(env, VerifySparseTableJs, "verifySparseTable"));
  exports.Set("dirWriteFile", Napi::Function::New(env, DirWriteFileJs, "dirWriteFile"));
  exports.Set("dirReadFile", Napi::Function::New(env, DirReadFileJs, "dirReadFile"));
  exports.Set("dirRemove", Napi::Function::New(env, DirRemoveJs, "dirRemove"));
  exports.Set("dirRename", Napi::Function::New(env, DirRenameJs, "dirRename"));
  exports.Set("dirJournalClaim", Napi::Function::New(env, DirJournalClaimJs, "dirJournalClaim"));
  exports.Set("probeHoles", Napi::Function::New(env, ProbeHolesJs, "probeHoles"));
  exports.Set("lockDirectory", Napi::Function::New(env, LockDirectoryJs, "lockDirectory"));
  exports.Set("unlockDirectory", Napi::Function::New(env, UnlockDirectoryJs, "unlockDirectory"));
  exports.Set("crc32", Napi::Function::New(env, Crc32Js, "crc32"));
  exports.Set("crc32Implementation", Napi::String::New(env, Crc32Implementation()));
}

}  // namespace spark
