// tileRows(split, rows, world) and tileHeads(subTables, rows, world): the core tiling rules as
// JS. Each returns a flat array [start0, end0, start1, end1, ...] (numbers, or BigInts past
// 2^53) so a call costs one array, not one object per rank.
#include <napi.h>

#include <vector>

#include "binding/args.h"
#include "binding/errors.h"
#include "core/format/tiling.h"

namespace spark {
namespace {

Napi::Value RangesToJs(Napi::Env env, const Status& st, const std::vector<RowRange>& ranges) {
  if (!st.ok()) throw StatusToError(env, st);
  Napi::Array out = Napi::Array::New(env, ranges.size() * 2);
  for (size_t i = 0; i < ranges.size(); ++i) {
    out.Set(static_cast<uint32_t>(2 * i), FromU64(env, ranges[i].start));
    out.Set(static_cast<uint32_t>(2 * i + 1), FromU64(env, ranges[i].end));
  }
  return out;
}

Napi::Value TileRows(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() != 3 || !info[0].IsString()) ThrowType(env, "tileRows(split, rows, world)");
  Split split;
  Status st = ParseSplit(info[0].As<Napi::String>().Utf8Value(), &split);
  if (!st.ok()) throw StatusToError(env, st);
  if (split == Split::kHeads) ThrowType(env, "tileRows: the heads split needs tileHeads(subTables, rows, world)");
  uint64_t rows = U64Value(info[1], "rows");
  uint64_t world = U64Value(info[2], "world");
  std::vector<RowRange> ranges;
  st = split == Split::kFloor ? TileFloor(rows, world, &ranges) : TileFront(rows, world, &ranges);
  return RangesToJs(env, st, ranges);
}

Napi::Value TileHeadsJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() != 3 || !info[0].IsArray()) ThrowType(env, "tileHeads(subTables, rows, world)");
  Napi::Array js_sizes = info[0].As<Napi::Array>();
  std::vector<uint64_t> sizes(js_sizes.Length());
  for (uint32_t i = 0; i < js_sizes.Length(); ++i)
    sizes[i] = U64Value(js_sizes.Get(i), "subTables[" + std::to_string(i) + "]");
  uint64_t rows = U64Value(info[1], "rows");
  uint64_t world = U64Value(info[2], "world");
  std::vector<RowRange> ranges;
  Status st = TileHeads(sizes, rows, world, &ranges);
  return RangesToJs(env, st, ranges);
}

}  // namespace

void InitTiling(Napi::Env env, Napi::Object exports) {
  exports.Set("tileRows", Napi::Function::New(env, TileRows, "tileRows"));
  exports.Set("tileHeads", Napi::Function::New(env, TileHeadsJs, "tileHeads"));
}

}  // namespace spark
