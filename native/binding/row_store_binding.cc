// JS class RowStore over core/row_store/row_store.h. Arguments are checked and copied here on the JS
// thread; every gather is one Baton on the store's own thread pool (owned through the
// environment, binding/addon_env.h) that fans its reads out over that pool and settles one
// Promise. The wrapper object and the caller's output buffer stay referenced until then.
//
// Rows are read into memory the baton owns, never straight into a JS buffer: JS can detach
// an ArrayBuffer at any time (postMessage or structuredClone with transfer, a resizable
// buffer shrinking), after which its memory may be freed while reads are still landing, and
// Node-API has no way to pin or refuse such buffers. At completion, on the JS thread, the rows
// are copied into the caller's buffer if it is still whole (else the batch rejects), or
// handed to JS as a new Buffer, without a copy, when the caller gave none.
#include <napi.h>

#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "binding/addon_env.h"
#include "binding/args.h"
#include "binding/async.h"
#include "binding/errors.h"
#include "binding/ids.h"
#include "binding/modules.h"
#include "binding/row_store_args.h"
#include "core/row_store/row_store.h"

namespace spark {

namespace {

class RowStoreWrap;

class StoreBaton : public Baton {
 public:
  StoreBaton(Napi::Env env, RowStoreWrap* wrap);

 protected:
  void ReleaseJs() override;  // the wrapper's in-flight count

  RowStoreWrap* wrap_;  // JS thread only
  std::shared_ptr<RowStore> store_;
  std::shared_ptr<ThreadPool> pool_;
};

class RowStoreWrap : public Napi::ObjectWrap<RowStoreWrap> {
 public:
  static void Init(Napi::Env env, Napi::Object exports) {
    Napi::Function cls = DefineClass(
        env, "RowStore",
        {InstanceMethod("gather", &RowStoreWrap::Gather), InstanceMethod("loadResident", &RowStoreWrap::LoadResident),
         InstanceMethod("learnCached", &RowStoreWrap::LearnCached),
         InstanceMethod("gatherCached", &RowStoreWrap::GatherCached), InstanceMethod("stats", &RowStoreWrap::Stats),
         InstanceMethod("tables", &RowStoreWrap::Tables), InstanceMethod("close", &RowStoreWrap::Close),
         InstanceMethod("dispose", &RowStoreWrap::Dispose)});
    exports.Set("RowStore", cls);
  }

  // new RowStore(tables, options): opens every file now (synchronously: a few open calls).
  explicit RowStoreWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<RowStoreWrap>(info) {
    Napi::Env env = info.Env();
    if (!info[0].IsArray()) ThrowType(env, "tables must be an array");
    if (!info[1].IsObject()) ThrowType(env, "options must be an object");
    Napi::Array arr = info[0].As<Napi::Array>();
    std::vector<TableSpec> tables;
    for (uint32_t i = 0; i < arr.Length(); ++i) tables.push_back(ParseTable(arr.Get(i), i));
    PoolOptions pool;
    StoreOptions opts = ParseOptions(info[1].As<Napi::Object>(), &pool);
    AddonEnv& addon = AddonEnv::Of(env);
    Status st = addon.NewStorePool(pool.threads, pool.fail_start_at, &pool_);
    if (st.ok()) st = RowStore::Open(tables, opts, &store_);
    if (!st.ok()) {
      pool_.reset();
      throw StatusToError(env, st);
    }
    addon.TrackStore(store_);
  }

  ~RowStoreWrap() override { Release(); }

  int inflight_ = 0;
  std::shared_ptr<RowStore> store_;
  std::shared_ptr<ThreadPool> pool_;
  StoreStats final_stats_;  // what stats() reports after dispose()

 private:
  void Release() {
    if (store_) final_stats_ = store_->Stats();
    pool_.reset();  // joins the idle workers: nothing is in flight (batons keep this object alive)
    store_.reset();
  }

  RowStore& Live(Napi::Env env) {
    if (!store_ || store_->closed())
      throw StatusToError(env, Status::Error(Code::E_STORE_CLOSED, "the row store is closed"));
    return *store_;
  }

  Napi::Value Gather(const Napi::CallbackInfo& info);
  Napi::Value LoadResident(const Napi::CallbackInfo& info);
  Napi::Value LearnCached(const Napi::CallbackInfo& info);
  Napi::Value GatherCached(const Napi::CallbackInfo& info);

  Napi::Value Stats(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    StoreStats s = store_ ? store_->Stats() : final_stats_;
    Napi::Object o = U64Object(env, {{"batches", s.batches},
                                     {"rows", s.rows},
                                     {"reads", s.reads},
                                     {"inlineReads", s.inline_reads},
                                     {"bytesRead", s.bytes_read},
                                     {"duplicates", s.duplicates},
                                     {"merged", s.merged},
                                     {"retries", s.retries},
                                     {"errorRetries", s.error_retries},
                                     {"reopens", s.reopens},
                                     {"residentBytes", s.resident_bytes},
                                     {"mappedRows", s.mapped_rows},
                                     {"mappedStale", s.mapped_stale},
                                     {"mappedFiles", s.mapped_files},
                                     {"threads", pool_ ? pool_->size() : 0},
                                     {"inflight", static_cast<uint64_t>(inflight_)}});
    o.Set("ioEngine", s.io_engine);
    if (!s.io_engine_note.empty()) o.Set("ioEngineNote", s.io_engine_note);
    return o;
  }

  Napi::Value Tables(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Napi::Array out = Napi::Array::New(env);
    if (!store_) return out;
    uint32_t i = 0;
    for (const TableInfo& t : store_->Tables()) {
      Napi::Object o =
          U64Object(env, {{"layer", t.layer}, {"lo", t.ids.start}, {"hi", t.ids.end}, {"rowBytes", t.row_bytes}});
      o.Set("directRequested", t.direct_requested);
      o.Set("directActive", t.direct_active);
      o.Set("residentScales", t.resident);
      out.Set(i++, o);
    }
    return out;
  }

  // Marks the store closed: batches in flight reject at their next read, new ones at once.
  Napi::Value Close(const Napi::CallbackInfo& info) {
    if (store_) store_->Close();
    return info.Env().Undefined();
  }

  // Frees the pool and the files. Only once nothing is in flight (the TS wrapper waits).
  Napi::Value Dispose(const Napi::CallbackInfo& info) {
    if (inflight_ > 0) ThrowType(info.Env(), "dispose() while batches are in flight: close() and await them first");
    if (store_) store_->Close();
    Release();
    return info.Env().Undefined();
  }
};

StoreBaton::StoreBaton(Napi::Env env, RowStoreWrap* wrap)
    : Baton(env), wrap_(wrap), store_(wrap->store_), pool_(wrap->pool_) {
  Keep(wrap->Value());
  ++wrap->inflight_;
}

void StoreBaton::ReleaseJs() { --wrap_->inflight_; }

class GatherBaton : public StoreBaton {
 public:
  // `out`: the caller's buffer, filled at completion; empty for a new Buffer.
  GatherBaton(Napi::Env env, RowStoreWrap* wrap, uint32_t layer, std::vector<uint64_t> ids, size_t bytes,
              Napi::Value out)
      : StoreBaton(env, wrap), layer_(layer), ids_(std::move(ids)), bytes_(bytes), has_out_(!out.IsEmpty()) {
    if (has_out_) out_ = Napi::Persistent(out);
  }

  void Execute() override {
    rows_.reset(new (std::nothrow) uint8_t[bytes_ == 0 ? 1 : bytes_]);
    if (!rows_) {
      status_ = Status::Error(Code::E_INTERNAL, "out of memory for a batch of " + std::to_string(bytes_) + " bytes");
      return;
    }
    status_ = store_->Gather(*pool_, layer_, ids_.data(), ids_.size(), rows_.get(), bytes_);
  }

  Napi::Value OnOk(Napi::Env env) override {
    if (!has_out_) {
      return Napi::Buffer<uint8_t>::NewOrCopy(env, rows_.release(), bytes_, [](Napi::Env, uint8_t* p) { delete[] p; });
    }
    Napi::Uint8Array out = out_.Value().As<Napi::Uint8Array>();
    if (out.ArrayBuffer().IsDetached() || out.ByteLength() < bytes_) {
      throw StatusToError(env, Status::Error(Code::E_USAGE,
                                             "the output buffer was detached or shrunk while the batch was read "
                                             "(transferred by postMessage or structuredClone?); keep it until the "
                                             "gather's promise settles"));
    }
    if (bytes_ > 0) std::memcpy(out.Data(), rows_.get(), bytes_);
    return env.Undefined();
  }

 protected:
  void ReleaseJs() override {
    out_.Reset();
    StoreBaton::ReleaseJs();
  }

 private:
  uint32_t layer_;
  std::vector<uint64_t> ids_;
  size_t bytes_;
  bool has_out_;
  Napi::Reference<Napi::Value> out_;  // JS thread only
  std::unique_ptr<uint8_t[]> rows_;   // the batch, filled by the pool
};

class ResidentBaton : public StoreBaton {
 public:
  using StoreBaton::StoreBaton;
  void Execute() override { status_ = store_->LoadResident(*pool_); }
};

// learnCached(): Promise<number>, the pages of the tables' rows found in the page cache.
class LearnBaton : public StoreBaton {
 public:
  using StoreBaton::StoreBaton;
  void Execute() override { pages_ = store_->LearnCached(*pool_); }
  Napi::Value OnOk(Napi::Env env) override { return Napi::Number::New(env, static_cast<double>(pages_)); }

 private:
  uint64_t pages_ = 0;
};

// The layer and ids of a gather-like call and the bytes they need. Bad arguments and unknown
// layers throw here; the ids are checked against the table by the caller (ThrowIfBadIds).
struct BatchArgs {
  const TableInfo* table;
  std::vector<uint64_t> ids;
  uint64_t need;
};

BatchArgs ReadBatchArgs(Napi::Env env, RowStore& store, const Napi::CallbackInfo& info) {
  uint64_t layer = 0;
  if (!ToU64(info[0], &layer) || layer > UINT32_MAX) ThrowType(env, "layer must be a non-negative integer");
  BatchArgs a{store.Find(static_cast<uint32_t>(layer)), {}, 0};
  if (a.table == nullptr) ThrowRange(env, "layer " + std::to_string(layer) + " is not in this row store");
  a.ids = CopyIds(info[1]);
  if (__builtin_mul_overflow(static_cast<uint64_t>(a.ids.size()), a.table->row_bytes, &a.need) || a.need > SIZE_MAX) {
    ThrowRange(env, "a batch of " + std::to_string(a.ids.size()) + " rows is too large", Code::E_USAGE);
  }
  return a;
}

// An id outside the table is a RangeError naming it, before any read.
void ThrowIfBadIds(Napi::Env env, const Status& st) {
  if (st.code == Code::E_ROW_RANGE) ThrowRange(env, st.message);
  if (!st.ok()) throw StatusToError(env, st);
}

// `v` as the output buffer of batch `a`: a Uint8Array of at least a.need bytes, else a TypeError.
Napi::Uint8Array ReadOut(Napi::Env env, Napi::Value v, const BatchArgs& a) {
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    ThrowType(env, "out must be a Buffer or Uint8Array");
  }
  Napi::Uint8Array out = v.As<Napi::Uint8Array>();
  if (a.need > out.ByteLength()) {
    ThrowType(env, "out holds " + std::to_string(out.ByteLength()) + " bytes but " + std::to_string(a.ids.size()) +
                       " rows of " + std::to_string(a.table->row_bytes) + " bytes need " + std::to_string(a.need));
  }
  return out;
}

// gather(layer, ids: Uint32Array | BigUint64Array, out?: Uint8Array): Promise<void | Buffer>
// fills `out`, or resolves with a new Buffer when it is omitted.
Napi::Value RowStoreWrap::Gather(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  RowStore& store = Live(env);
  BatchArgs a = ReadBatchArgs(env, store, info);
  ThrowIfBadIds(env, store.CheckIds(a.table->layer, a.ids.data(), a.ids.size()));
  Napi::Value out;  // empty: resolve with a new Buffer
  if (info.Length() > 2 && !info[2].IsUndefined()) out = ReadOut(env, info[2], a);
  auto baton =
      std::make_unique<GatherBaton>(env, this, a.table->layer, std::move(a.ids), static_cast<size_t>(a.need), out);
  return Schedule(env, *pool_, std::move(baton));
}

Napi::Value RowStoreWrap::LoadResident(const Napi::CallbackInfo& info) {
  Live(info.Env());
  return Schedule(info.Env(), *pool_, std::make_unique<ResidentBaton>(info.Env(), this));
}

// gatherCached(layer, ids, out: Uint8Array): boolean. On the JS thread, out of the mapping
// only: true when every row was copied into `out`; false when a row's pages are not known
// cached (nothing waits for a device; `out` is partly written). The same errors as gather().
Napi::Value RowStoreWrap::GatherCached(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  RowStore& store = Live(env);
  BatchArgs a = ReadBatchArgs(env, store, info);
  Napi::Uint8Array out = ReadOut(env, info[2], a);
  bool copied = false;  // GatherCached checks the ids itself: once, not here and there
  ThrowIfBadIds(env,
                store.GatherCached(a.table->layer, a.ids.data(), a.ids.size(), out.Data(), out.ByteLength(), &copied));
  return Napi::Boolean::New(env, copied);
}

Napi::Value RowStoreWrap::LearnCached(const Napi::CallbackInfo& info) {
  Live(info.Env());
  return Schedule(info.Env(), *pool_, std::make_unique<LearnBaton>(info.Env(), this));
}

}  // namespace

void InitRowStore(Napi::Env env, Napi::Object exports) { RowStoreWrap::Init(env, exports); }

}  // namespace spark
