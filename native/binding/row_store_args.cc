#include "binding/row_store_args.h"

#include <algorithm>

#include "binding/errors.h"

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

}  // namespace

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

StoreOptions ParseOptions(Napi::Object o, PoolOptions* pool) {
  StoreOptions opts;
  uint64_t t = U64Field(o, "threads", "options");
  if (t < 1 || t > 1024) ThrowRange(o.Env(), "options.threads must be between 1 and 1024", Code::E_USAGE);
  pool->threads = static_cast<size_t>(t);
  opts.dedup = BoolField(o, "dedup", true);
  opts.merge = BoolField(o, "merge", true);
  opts.fadvise_random = BoolField(o, "fadviseRandom", true);
  if (!o.Get("maxMergeBytes").IsUndefined()) opts.max_merge_bytes = U64Field(o, "maxMergeBytes", "options");
  Napi::Value engine = o.Get("ioEngine");
  if (!engine.IsUndefined()) {
    std::string e = engine.IsString() ? engine.As<Napi::String>().Utf8Value() : "";
    if (e != "auto" && e != "pread" && e != "uring") ThrowType(o.Env(), "options.ioEngine must be 'auto', 'pread' or 'uring'");
    opts.io_engine = e == "uring" ? IoEngine::kUring : e == "pread" ? IoEngine::kPread : IoEngine::kAuto;
  }
  if (!o.Get("ioDepth").IsUndefined()) {
    uint64_t d = U64Field(o, "ioDepth", "options");
    if (d < 1 || d > 4096) ThrowRange(o.Env(), "options.ioDepth must be between 1 and 4096", Code::E_USAGE);
    opts.io_depth = static_cast<unsigned>(d);
  }
  Napi::Value r = o.Get("retry");
  if (!r.IsUndefined()) {
    if (!r.IsObject()) ThrowType(o.Env(), "options.retry must be an object");
    Napi::Object ro = r.As<Napi::Object>();
    if (!ro.Get("retries").IsUndefined()) {
      uint64_t n = U64Field(ro, "retries", "options.retry");
      if (n > 100) ThrowRange(o.Env(), "options.retry.retries must be at most 100", Code::E_USAGE);
      opts.retry.retries = static_cast<uint32_t>(n);
    }
    if (!ro.Get("delayMs").IsUndefined()) {
      uint64_t ms = U64Field(ro, "delayMs", "options.retry");
      if (ms > 60000) ThrowRange(o.Env(), "options.retry.delayMs must be at most 60000", Code::E_USAGE);
      opts.retry.first_delay_us = ms * 1000;
      opts.retry.max_delay_us = std::max<uint64_t>(opts.retry.max_delay_us, ms * 1000);
    }
  }
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
    opts.faults.short_unaligned_every = every("shortUnalignedEvery");
    opts.faults.eintr_every = every("eintrEvery");
    opts.faults.eio_every = every("eioEvery");
    opts.faults.etimedout_every = every("etimedoutEvery");
    opts.faults.estale_at = every("estaleAt");
    opts.faults.throw_at = every("throwAt");
    pool->fail_start_at = every("threadStartFailAt");
    if (!fo.Get("delayUs").IsUndefined()) opts.faults.delay_us = U64Field(fo, "delayUs", "options.faults");
    opts.uring_refuse_errno = static_cast<int>(std::min<uint32_t>(every("uringSetupErrno"), 4095));
  }
  return opts;
}

}  // namespace spark
