// JS class RowStore over core/row_store.h. Arguments are checked and copied here on the JS
// thread; every gather is one Baton on the store's own thread pool that fans its reads out
// over that pool and settles one Promise. The wrapper object, the output buffer and the
// store stay referenced until the batch settles.
#include <napi.h>

#include <memory>
#include <string>
#include <vector>

#include "binding/async.h"
#include "binding/errors.h"
#include "binding/ids.h"
#include "binding/modules.h"
#include "core/row_store.h"

namespace spark {

namespace {

uint64_t U64Field(Napi::Object obj, const char* key, const std::string& where) {
  uint64_t v = 0;
  if (!ToU64(obj.Get(key), &v)) ThrowType(obj.Env(), where + "." + key + " must be a non-negative integer");
  return v;
}

std::string StringField(Napi::Object obj, const char* key, const std::string& where) {
  Napi::Value v = obj.Get(key);
  if (!v.IsString()) ThrowType(obj.Env(), where + "." + key + " must be a string");
  return v.As<Napi::String>().Utf8Value();
}

Napi::Object ObjectField(Napi::Object obj, const char* key, const std::string& where) {
  Napi::Value v = obj.Get(key);
  if (!v.IsObject()) ThrowType(obj.Env(), where + "." + key + " must be an object");
  return v.As<Napi::Object>();
}

bool BoolField(Napi::Object obj, const char* key, bool fallback) {
  Napi::Value v = obj.Get(key);
  if (v.IsUndefined()) return fallback;
  if (!v.IsBoolean()) ThrowType(obj.Env(), std::string(key) + " must be a boolean");
  return v.As<Napi::Boolean>().Value();
}

TableSpec ParseTable(Napi::Value value, size_t index) {
  std::string where = "tables[" + std::to_string(index) + "]";
  if (!value.IsObject()) ThrowType(value.Env(), where + " must be an object");
  Napi::Object o = value.As<Napi::Object>();
  TableSpec t;
  std::string kind = StringField(o, "kind", where);
  uint64_t layer = U64Field(o, "layer", where);
  if (layer > UINT32_MAX) ThrowType(o.Env(), where + ".layer is too large");
  t.layer = static_cast<uint32_t>(layer);
  if (kind == "snapshot") {
    t.kind = TableKind::kSnapshot;
    t.rows = U64Field(o, "rows", where);
    t.dim = U64Field(o, "dim", where);
    Napi::Object w = ObjectField(o, "weight", where), s = ObjectField(o, "scale", where);
    t.weight_path = StringField(w, "path", where + ".weight");
    t.weight_offset = U64Field(w, "offset", where + ".weight");
    t.scale_path = StringField(s, "path", where + ".scale");
    t.scale_offset = U64Field(s, "offset", where + ".scale");
    Napi::Value r = o.Get("residentScales");
    if (!r.IsUndefined()) {
      if (!r.IsArray() || r.As<Napi::Array>().Length() != 2) ThrowType(o.Env(), where + ".residentScales must be [start, end]");
      Napi::Array a = r.As<Napi::Array>();
      if (!ToU64(a.Get(0u), &t.resident_start) || !ToU64(a.Get(1u), &t.resident_end)) {
        ThrowType(o.Env(), where + ".residentScales must hold two non-negative integers");
      }
      t.resident_scales = true;
    }
    Napi::Value range = o.Get("range");
    if (!range.IsUndefined()) {
      if (!range.IsArray() || range.As<Napi::Array>().Length() != 2 || !ToU64(range.As<Napi::Array>().Get(0u), &t.lo) ||
          !ToU64(range.As<Napi::Array>().Get(1u), &t.hi)) {
        ThrowType(o.Env(), where + ".range must be [lo, hi] (two non-negative integers)");
      }
      t.ranged = true;
    }
    Napi::Value holes = o.Get("holes");
    if (!holes.IsUndefined()) {
      std::string rule = holes.IsString() ? holes.As<Napi::String>().Utf8Value() : "";
      if (rule != "allow" && rule != "refuse" && rule != "corrupt") ThrowType(o.Env(), where + ".holes must be 'allow', 'refuse' or 'corrupt'");
      t.holes = rule == "refuse" ? HoleRule::kRefuse : rule == "corrupt" ? HoleRule::kCorrupt : HoleRule::kAllow;
    }
  } else if (kind == "packed") {
    t.kind = TableKind::kPacked;
    t.path = StringField(o, "path", where);
    t.start = U64Field(o, "start", where);
    t.end = U64Field(o, "end", where);
    t.data_offset = U64Field(o, "dataOffset", where);
    t.stride = U64Field(o, "stride", where);
    t.row_bytes = U64Field(o, "rowBytes", where);
    std::string layout = StringField(o, "layout", where);
    if (layout != "dense" && layout != "page") ThrowType(o.Env(), where + ".layout must be 'dense' or 'page'");
    t.layout = layout == "page" ? PackedLayout::kPage : PackedLayout::kDense;
    t.direct = BoolField(o, "direct", false);
  } else {
    ThrowType(o.Env(), where + ".kind must be 'snapshot' or 'packed'");
  }
  return t;
}

StoreOptions ParseOptions(Napi::Object o, size_t* threads) {
  StoreOptions opts;
  uint64_t t = U64Field(o, "threads", "options");
  if (t < 1 || t > 1024) ThrowRange(o.Env(), "options.threads must be between 1 and 1024", Code::E_USAGE);
  *threads = static_cast<size_t>(t);
  opts.dedup = BoolField(o, "dedup", true);
  opts.merge = BoolField(o, "merge", true);
  opts.fadvise_random = BoolField(o, "fadviseRandom", true);
  if (!o.Get("maxMergeBytes").IsUndefined()) opts.max_merge_bytes = U64Field(o, "maxMergeBytes", "options");
  Napi::Value f = o.Get("faults");
  if (!f.IsUndefined()) {
    if (!f.IsObject()) ThrowType(o.Env(), "options.faults must be an object");
    Napi::Object fo = f.As<Napi::Object>();
    auto every = [&](const char* key) -> uint32_t {
      if (fo.Get(key).IsUndefined()) return 0;
      uint64_t v = U64Field(fo, key, "options.faults");
      return v > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(v);
    };
    opts.faults.short_every = every("shortEvery");
    opts.faults.eintr_every = every("eintrEvery");
    opts.faults.eio_every = every("eioEvery");
    if (!fo.Get("delayUs").IsUndefined()) opts.faults.delay_us = U64Field(fo, "delayUs", "options.faults");
  }
  return opts;
}

class RowStoreWrap;

class StoreBaton : public Baton {
 public:
  StoreBaton(Napi::Env env, RowStoreWrap* wrap);
  ~StoreBaton() override;

 protected:
  RowStoreWrap* wrap_;
  std::shared_ptr<RowStore> store_;
  ThreadPool* pool_;
};

class RowStoreWrap : public Napi::ObjectWrap<RowStoreWrap> {
 public:
  static void Init(Napi::Env env, Napi::Object exports) {
    Napi::Function cls = DefineClass(env, "RowStore",
                                     {InstanceMethod("gather", &RowStoreWrap::Gather),
                                      InstanceMethod("loadResident", &RowStoreWrap::LoadResident),
                                      InstanceMethod("stats", &RowStoreWrap::Stats),
                                      InstanceMethod("tables", &RowStoreWrap::Tables),
                                      InstanceMethod("close", &RowStoreWrap::Close),
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
    size_t threads = 0;
    StoreOptions opts = ParseOptions(info[1].As<Napi::Object>(), &threads);
    Status st = RowStore::Open(tables, opts, &store_);
    if (!st.ok()) throw StatusToError(env, st);
    pool_ = std::make_unique<ThreadPool>(threads);
  }

  ~RowStoreWrap() override { Release(); }

  int inflight_ = 0;
  std::shared_ptr<RowStore> store_;
  std::unique_ptr<ThreadPool> pool_;
  StoreStats final_stats_;  // what stats() reports after dispose()

 private:
  void Release() {
    if (store_) final_stats_ = store_->Stats();
    pool_.reset();  // joins the workers; nothing is in flight (batons keep this object alive)
    store_.reset();
  }

  RowStore& Live(Napi::Env env) {
    if (!store_ || store_->closed()) throw StatusToError(env, Status::Error(Code::E_STORE_CLOSED, "the row store is closed"));
    return *store_;
  }

  Napi::Value Gather(const Napi::CallbackInfo& info);
  Napi::Value LoadResident(const Napi::CallbackInfo& info);

  Napi::Value Stats(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    StoreStats s = store_ ? store_->Stats() : final_stats_;
    Napi::Object o = Napi::Object::New(env);
    o.Set("batches", FromU64(env, s.batches));
    o.Set("rows", FromU64(env, s.rows));
    o.Set("reads", FromU64(env, s.reads));
    o.Set("bytesRead", FromU64(env, s.bytes_read));
    o.Set("duplicates", FromU64(env, s.duplicates));
    o.Set("merged", FromU64(env, s.merged));
    o.Set("retries", FromU64(env, s.retries));
    o.Set("residentBytes", FromU64(env, s.resident_bytes));
    o.Set("threads", Napi::Number::New(env, pool_ ? static_cast<double>(pool_->size()) : 0));
    o.Set("inflight", Napi::Number::New(env, inflight_));
    return o;
  }

  Napi::Value Tables(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Napi::Array out = Napi::Array::New(env);
    if (!store_) return out;
    uint32_t i = 0;
    for (const TableInfo& t : store_->Tables()) {
      Napi::Object o = Napi::Object::New(env);
      o.Set("layer", t.layer);
      o.Set("lo", FromU64(env, t.lo));
      o.Set("hi", FromU64(env, t.hi));
      o.Set("rowBytes", FromU64(env, t.row_bytes));
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
    : Baton(env), wrap_(wrap), store_(wrap->store_), pool_(wrap->pool_.get()) {
  Keep(wrap->Value());
  ++wrap->inflight_;
}

// Destroyed on the JS thread after the Promise settled (see async.cc).
StoreBaton::~StoreBaton() { --wrap_->inflight_; }

class GatherBaton : public StoreBaton {
 public:
  GatherBaton(Napi::Env env, RowStoreWrap* wrap, uint32_t layer, std::vector<uint64_t> ids, uint8_t* out, size_t len)
      : StoreBaton(env, wrap), layer_(layer), ids_(std::move(ids)), out_(out), len_(len) {}
  void Execute() override { status_ = store_->Gather(*pool_, layer_, ids_.data(), ids_.size(), out_, len_); }

 private:
  uint32_t layer_;
  std::vector<uint64_t> ids_;
  uint8_t* out_;
  size_t len_;
};

class ResidentBaton : public StoreBaton {
 public:
  using StoreBaton::StoreBaton;
  void Execute() override { status_ = store_->LoadResident(*pool_); }
};

// gather(layer, ids: Uint32Array | BigUint64Array, out: Uint8Array): Promise<void>.
// Bad arguments, unknown layers and out-of-range ids throw here, before any read.
Napi::Value RowStoreWrap::Gather(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  RowStore& store = Live(env);
  uint64_t layer = 0;
  if (!ToU64(info[0], &layer) || layer > UINT32_MAX) ThrowType(env, "layer must be a non-negative integer");
  const TableInfo* table = store.Find(static_cast<uint32_t>(layer));
  if (table == nullptr) ThrowRange(env, "layer " + std::to_string(layer) + " is not in this row store");
  std::vector<uint64_t> copy = CopyIds(info[1]);
  Status st = store.CheckIds(table->layer, copy.data(), copy.size());
  if (!st.ok()) ThrowRange(env, st.message);
  if (!info[2].IsTypedArray() || info[2].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    ThrowType(env, "out must be a Buffer or Uint8Array");
  }
  Napi::Uint8Array out = info[2].As<Napi::Uint8Array>();
  uint64_t need = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(copy.size()), table->row_bytes, &need) || need > out.ByteLength()) {
    ThrowType(env, "out holds " + std::to_string(out.ByteLength()) + " bytes but " + std::to_string(copy.size()) +
                       " rows of " + std::to_string(table->row_bytes) + " bytes need " + std::to_string(need));
  }
  auto baton = std::make_unique<GatherBaton>(env, this, table->layer, std::move(copy), out.Data(), out.ByteLength());
  baton->Keep(out);
  return Schedule(env, *pool_, std::move(baton));
}

Napi::Value RowStoreWrap::LoadResident(const Napi::CallbackInfo& info) {
  Live(info.Env());
  return Schedule(info.Env(), *pool_, std::make_unique<ResidentBaton>(info.Env(), this));
}

}  // namespace

void InitRowStore(Napi::Env env, Napi::Object exports) { RowStoreWrap::Init(env, exports); }

}  // namespace spark
