// A Node addon of its own for a benchmark baseline: the serving overlay's read path as `spark
// bench gather --variants overlay` measures it (bench/baselines/overlay-mmap/mmap_gather.h).
// Not part of spark and not linked into spark's addon: binding.gyp builds it as
// build/Release/overlay_mmap_baseline.so, which the bench loads by path when the overlay
// variant runs (src/gather-bench/overlay-baseline.ts). It shares native/binding's argument, error
// and async helpers (compiled in again here, with their own per-environment state).
//
//   new MmapGather(tables, {threads, willneed})
//     .gather(layer, ids)           Promise<void>: the rows land in memory this object owns, so
//                                   no JavaScript buffer is written off the JS thread
//     .rows()                       a copy of the last batch's rows (Buffer)
//     .stats() / .close()           close() once nothing is in flight (the TS wrapper waits)
#include <napi.h>

#include <memory>
#include <string>
#include <vector>

#include "bench/baselines/overlay-mmap/mmap_gather.h"
#include "binding/addon_env.h"
#include "binding/args.h"
#include "binding/async.h"
#include "binding/errors.h"
#include "binding/ids.h"
#include "binding/snapshot_table_args.h"

namespace spark {
namespace {

MmapTable ParseMmapTable(Napi::Value v, size_t i) {
  Fields o(v, "tables[" + std::to_string(i) + "]");
  MmapTable t;
  ReadSnapshotColumns(o, &t);
  // The owned ids are required here: the overlay always knows its rank's range.
  if (!o.U64PairOr("range", "lo", "hi", &t.owned.start, &t.owned.end))
    ThrowType(o.Env(), o.Name("range") + " is required: [lo, hi)");
  return t;
}

class MmapGatherWrap : public Napi::ObjectWrap<MmapGatherWrap> {
 public:
  static void Init(Napi::Env env, Napi::Object exports) {
    exports.Set("MmapGather", DefineClass(env, "MmapGather",
                                          {InstanceMethod("gather", &MmapGatherWrap::Gather),
                                           InstanceMethod("rows", &MmapGatherWrap::Rows),
                                           InstanceMethod("stats", &MmapGatherWrap::Stats),
                                           InstanceMethod("close", &MmapGatherWrap::Close)}));
  }

  explicit MmapGatherWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<MmapGatherWrap>(info) {
    Napi::Env env = info.Env();
    if (!info[0].IsArray()) ThrowType(env, "tables must be an array");
    Napi::Array arr = info[0].As<Napi::Array>();
    std::vector<MmapTable> tables;
    for (uint32_t i = 0; i < arr.Length(); ++i) tables.push_back(ParseMmapTable(arr.Get(i), i));
    Fields o(info[1], "options");
    uint64_t threads = o.U64("threads");
    if (threads < 1 || threads > 1024) ThrowRange(env, "options.threads must be between 1 and 1024", Code::E_USAGE);
    MmapGatherOptions opts;
    opts.willneed = o.BoolOr("willneed", opts.willneed);
    workers_ = static_cast<size_t>(threads);
    // The environment's pool for this reader: stopped with the environment, like a row store's.
    Status st = AddonEnv::Of(env).NewStorePool(workers_, 0, &pool_);
    if (st.ok()) st = MmapGather::Open(tables, opts, &gather_);
    if (!st.ok()) {
      pool_.reset();
      throw StatusToError(env, st);
    }
  }

  std::shared_ptr<MmapGather> gather_;
  std::shared_ptr<ThreadPool> pool_;
  // The last batch's rows; written only while a batch is in flight. Shared with the batch, which
  // may outlive this object when the environment shuts down under it.
  std::shared_ptr<std::vector<uint8_t>> out_ = std::make_shared<std::vector<uint8_t>>();
  size_t last_bytes_ = 0;  // how many of them the last batch filled
  size_t workers_ = 1;
  bool inflight_ = false;

 private:
  Napi::Value Gather(const Napi::CallbackInfo& info);

  Napi::Value Rows(const Napi::CallbackInfo& info) {
    if (inflight_) ThrowType(info.Env(), "rows() while a batch is in flight: await gather() first");
    return Napi::Buffer<uint8_t>::Copy(info.Env(), out_->data(), last_bytes_);
  }

  Napi::Value Stats(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    return U64Object(env, {{"batches", gather_ ? gather_->batches() : 0},
                           {"rows", gather_ ? gather_->rows() : 0},
                           {"zeroRows", gather_ ? gather_->zero_rows() : 0},
                           {"threads", workers_}});
  }

  Napi::Value Close(const Napi::CallbackInfo& info) {
    if (inflight_) ThrowType(info.Env(), "close() while a batch is in flight: await gather() first");
    pool_.reset();
    gather_.reset();
    out_ = std::make_shared<std::vector<uint8_t>>();
    last_bytes_ = 0;
    return info.Env().Undefined();
  }
};

class MmapBaton : public Baton {
 public:
  MmapBaton(Napi::Env env, MmapGatherWrap* wrap, uint32_t layer, std::vector<uint64_t> ids)
      : Baton(env),
        wrap_(wrap),
        gather_(wrap->gather_),
        pool_(wrap->pool_),
        out_(wrap->out_),
        workers_(wrap->workers_),
        layer_(layer),
        ids_(std::move(ids)) {
    Keep(wrap->Value());
    wrap->inflight_ = true;
  }
  void Execute() override {
    status_ = gather_->Gather(*pool_, workers_, layer_, ids_.data(), ids_.size(), out_->data(), out_->size());
  }

 protected:
  void ReleaseJs() override { wrap_->inflight_ = false; }

 private:
  MmapGatherWrap* wrap_;  // JS thread only
  std::shared_ptr<MmapGather> gather_;
  std::shared_ptr<ThreadPool> pool_;
  std::shared_ptr<std::vector<uint8_t>> out_;
  size_t workers_;
  uint32_t layer_;
  std::vector<uint64_t> ids_;
};

Napi::Value MmapGatherWrap::Gather(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!gather_) throw StatusToError(env, Status::Error(Code::E_STORE_CLOSED, "the mmap gather is closed"));
  if (inflight_) ThrowType(env, "one batch at a time: await the previous gather()");
  uint64_t layer = U64Value(info[0], "layer");
  uint64_t rb = layer <= UINT32_MAX ? gather_->RowBytes(static_cast<uint32_t>(layer)) : 0;
  if (rb == 0) ThrowRange(env, "layer " + std::to_string(layer) + " is not in this gather");
  std::vector<uint64_t> copy = CopyIds(info[1]);
  uint64_t need = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(copy.size()), rb, &need) || need > SIZE_MAX / 2) {
    ThrowRange(env, "the batch is too large", Code::E_USAGE);
  }
  // Resized here, on the JS thread, so its pages are reused batch after batch (no first-touch
  // faults inside the timed copies once the largest batch has run).
  if (out_->size() < need) out_->resize(static_cast<size_t>(need));
  last_bytes_ = static_cast<size_t>(need);
  auto baton = std::make_unique<MmapBaton>(env, this, static_cast<uint32_t>(layer), std::move(copy));
  return Schedule(env, *pool_, std::move(baton));
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  AddonEnv::Init(env);  // this module's own per-environment pools and baton queue
  MmapGatherWrap::Init(env, exports);
  return exports;
}

}  // namespace
}  // namespace spark

static Napi::Object InitModule(Napi::Env env, Napi::Object exports) { return spark::Init(env, exports); }

NODE_API_MODULE(NODE_GYP_MODULE_NAME, InitModule)
