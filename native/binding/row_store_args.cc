#include "binding/row_store_args.h"

#include <algorithm>
#include <optional>

#include "binding/args.h"
#include "binding/errors.h"
#include "binding/snapshot_table_args.h"

namespace spark {

namespace {

// An optional [a, b] pair of non-negative integers as an id range (`first`/`second` name its
// two halves in the message a bad value gets).
std::optional<IdRange> IdRangeOr(const Fields& o, const char* key, const char* first, const char* second) {
  IdRange r;
  if (!o.U64PairOr(key, first, second, &r.start, &r.end)) return std::nullopt;
  return r;
}

SnapshotTable ParseSnapshot(const Fields& o) {
  SnapshotTable t;
  ReadSnapshotColumns(o, &t);
  t.resident_scales = IdRangeOr(o, "residentScales", "start", "end");
  t.range = IdRangeOr(o, "range", "lo", "hi");
  if (o.Has("holes")) {
    Napi::Value holes = o.Get("holes");
    std::string rule = holes.IsString() ? holes.As<Napi::String>().Utf8Value() : "";
    if (rule != "allow" && rule != "refuse" && rule != "corrupt")
      ThrowType(o.Env(), o.Name("holes") + " must be 'allow', 'refuse' or 'corrupt'");
    t.holes = rule == "refuse" ? HoleRule::kRefuse : rule == "corrupt" ? HoleRule::kCorrupt : HoleRule::kAllow;
  }
  return t;
}

PackedTable ParsePacked(const Fields& o) {
  PackedTable t;
  t.layer = o.U32("layer");
  t.path = o.String("path");
  t.ids = {o.U64("start"), o.U64("end")};
  t.data_offset = o.U64("dataOffset");
  t.stride = o.U64("stride");
  t.row_bytes = o.U64("rowBytes");
  std::string layout = o.String("layout");
  if (layout != "dense" && layout != "page") ThrowType(o.Env(), o.Name("layout") + " must be 'dense' or 'page'");
  t.layout = layout == "page" ? PackedLayout::kPage : PackedLayout::kDense;
  t.direct = o.BoolOr("direct", false);
  return t;
}

}  // namespace

// The TypeScript union (src/domain/table-spec.ts) by its `kind`, one C++ struct per variant.
TableSpec ParseTable(Napi::Value value, size_t index) {
  Fields o(value, "tables[" + std::to_string(index) + "]");
  std::string kind = o.String("kind");
  if (kind == "snapshot") return ParseSnapshot(o);
  if (kind != "packed") ThrowType(o.Env(), o.Name("kind") + " must be 'snapshot' or 'packed'");
  return ParsePacked(o);
}

StoreOptions ParseOptions(Napi::Object options, PoolOptions* pool) {
  Fields o(options, "options");
  StoreOptions opts;
  uint64_t t = o.U64("threads");
  if (t < 1 || t > 1024) ThrowRange(o.Env(), "options.threads must be between 1 and 1024", Code::E_USAGE);
  pool->threads = static_cast<size_t>(t);
  opts.dedup = o.BoolOr("dedup", true);
  opts.merge = o.BoolOr("merge", true);
  opts.fadvise_random = o.BoolOr("fadviseRandom", true);
  opts.map_cached = o.BoolOr("mapCached", true);
  opts.max_merge_bytes = o.U64Or("maxMergeBytes", opts.max_merge_bytes);
  if (o.Has("ioEngine")) {
    Napi::Value engine = o.Get("ioEngine");
    std::string e = engine.IsString() ? engine.As<Napi::String>().Utf8Value() : "";
    if (e != "auto" && e != "pread" && e != "uring")
      ThrowType(o.Env(), "options.ioEngine must be 'auto', 'pread' or 'uring'");
    opts.io_engine = e == "uring" ? IoEngine::kUring : e == "pread" ? IoEngine::kPread : IoEngine::kAuto;
  }
  if (o.Has("ioDepth")) {
    uint64_t d = o.U64("ioDepth");
    if (d < 1 || d > 4096) ThrowRange(o.Env(), "options.ioDepth must be between 1 and 4096", Code::E_USAGE);
    opts.io_depth = static_cast<unsigned>(d);
  }
  if (o.Has("retry")) {
    Fields r = o.Object("retry");
    if (r.Has("retries")) {
      uint64_t n = r.U64("retries");
      if (n > 100) ThrowRange(o.Env(), "options.retry.retries must be at most 100", Code::E_USAGE);
      opts.retry.retries = static_cast<uint32_t>(n);
    }
    if (r.Has("delayMs")) {
      uint64_t ms = r.U64("delayMs");
      if (ms > 60000) ThrowRange(o.Env(), "options.retry.delayMs must be at most 60000", Code::E_USAGE);
      opts.retry.first_delay_us = ms * 1000;
      opts.retry.max_delay_us = std::max<uint64_t>(opts.retry.max_delay_us, ms * 1000);
    }
  }
  if (o.Has("faults")) {
    Fields f = o.Object("faults");
    auto every = [&](const char* key) -> uint32_t {
      uint64_t v = f.U64Or(key, 0);
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
    opts.faults.delay_us = f.U64Or("delayUs", opts.faults.delay_us);
    opts.uring_refuse_errno = static_cast<int>(std::min<uint32_t>(every("uringSetupErrno"), 4095));
  }
  return opts;
}

}  // namespace spark
