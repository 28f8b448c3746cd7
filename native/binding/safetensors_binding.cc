// safetensors header reading for JS.
//
//   readHeaders(paths: string[], threads?: number, expected?: string[][]): Promise<Array<Header | string | Error>>
//     (a header arrives as its JSON text when every value is a safe integer; see HeaderToJson)
//     One Promise per call; the headers are read `threads` at a time on the environment's job
//     pool (the files usually live on NFS, where each read is a network round trip:
//     overlapping them is the whole point). A failing path yields its Error in place; the
//     call itself only rejects on bad arguments.
//   parseHeaderBytes(json: Uint8Array, dataLength: number | bigint, path?: string): Header
//     Synchronous validation of header bytes already in memory (tests, tools).
//
// u64 values are JS numbers when safe integers, BigInt otherwise (never rounded).
#include <napi.h>

#include <algorithm>

#include "binding/addon_env.h"
#include "binding/async.h"
#include "binding/errors.h"
#include "core/parallel.h"
#include "core/safetensors.h"
#include "core/shard_set.h"
#include "core/thread_pool.h"

namespace spark {
namespace {

constexpr size_t kHeaderThreads = 32;

Napi::Value HeaderToJs(Napi::Env env, const safetensors::Header& h) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("path", h.path);
  out.Set("headerLength", FromU64(env, h.header_length));
  out.Set("dataStart", FromU64(env, h.data_start));
  out.Set("dataLength", FromU64(env, h.data_length));
  out.Set("fileSize", FromU64(env, h.file_size));
  // Pairs, not an object: a key such as "__proto__" must stay data, never touch a prototype.
  Napi::Array metadata = Napi::Array::New(env, h.metadata.size());
  for (size_t i = 0; i < h.metadata.size(); ++i) {
    Napi::Array pair = Napi::Array::New(env, 2);
    pair.Set(uint32_t{0}, h.metadata[i].first);
    pair.Set(uint32_t{1}, h.metadata[i].second);
    metadata.Set(static_cast<uint32_t>(i), pair);
  }
  out.Set("metadata", metadata);
  Napi::Array tensors = Napi::Array::New(env, h.tensors.size());
  for (size_t i = 0; i < h.tensors.size(); ++i) {
    const safetensors::Tensor& t = h.tensors[i];
    Napi::Object o = Napi::Object::New(env);
    o.Set("name", t.name);
    o.Set("dtype", safetensors::DtypeName(t.dtype));
    Napi::Array shape = Napi::Array::New(env, t.shape.size());
    for (size_t d = 0; d < t.shape.size(); ++d) shape.Set(static_cast<uint32_t>(d), FromU64(env, t.shape[d]));
    o.Set("shape", shape);
    Napi::Array offsets = Napi::Array::New(env, 2);
    offsets.Set(uint32_t{0}, FromU64(env, t.begin));
    offsets.Set(uint32_t{1}, FromU64(env, t.end));
    o.Set("dataOffsets", offsets);
    o.Set("fileOffset", FromU64(env, t.file_offset));
    o.Set("bytes", FromU64(env, t.bytes));
    tensors.Set(static_cast<uint32_t>(i), o);
  }
  out.Set("tensors", tensors);
  return out;
}

constexpr uint64_t kMaxSafeInteger = (uint64_t{1} << 53) - 1;

void AppendJsonString(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      static const char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);  // validated UTF-8 passes through
    }
  }
  out += '"';
}

// The header as canonical JSON text with the same shape HeaderToJs builds, for JSON.parse on
// the JS thread: V8 builds thousands of tensor objects from text far faster than one napi
// call per property. False (and nothing usable in `out`) when a value is past 2^53, which
// JSON numbers cannot carry exactly; the caller then builds the objects one by one.
bool HeaderToJson(const safetensors::Header& h, std::string& out) {
  bool exact = true;
  auto num = [&](uint64_t v) {
    if (v > kMaxSafeInteger) exact = false;
    out += std::to_string(v);
  };
  out.reserve(64 + h.tensors.size() * 128);
  out += "{\"path\":";
  AppendJsonString(out, h.path);
  out += ",\"headerLength\":";
  num(h.header_length);
  out += ",\"dataStart\":";
  num(h.data_start);
  out += ",\"dataLength\":";
  num(h.data_length);
  out += ",\"fileSize\":";
  num(h.file_size);
  out += ",\"metadata\":[";
  for (size_t i = 0; i < h.metadata.size(); ++i) {
    if (i) out += ',';
    out += '[';
    AppendJsonString(out, h.metadata[i].first);
    out += ',';
    AppendJsonString(out, h.metadata[i].second);
    out += ']';
  }
  out += "],\"tensors\":[";
  for (size_t i = 0; i < h.tensors.size() && exact; ++i) {
    const safetensors::Tensor& t = h.tensors[i];
    if (i) out += ',';
    out += "{\"name\":";
    AppendJsonString(out, t.name);
    out += ",\"dtype\":\"";
    out += safetensors::DtypeName(t.dtype);
    out += "\",\"shape\":[";
    for (size_t d = 0; d < t.shape.size(); ++d) {
      if (d) out += ',';
      num(t.shape[d]);
    }
    out += "],\"dataOffsets\":[";
    num(t.begin);
    out += ',';
    num(t.end);
    out += "],\"fileOffset\":";
    num(t.file_offset);
    out += ",\"bytes\":";
    num(t.bytes);
    out += '}';
  }
  out += "]}";
  return exact;
}

class ReadHeadersBaton : public JobBaton {
 public:
  ReadHeadersBaton(Napi::Env env, std::vector<std::string> paths, size_t threads,
                   std::vector<std::vector<std::string>> expected)
      : JobBaton(env, std::max<size_t>(1, std::min(threads, paths.size()))),
        paths_(std::move(paths)),
        threads_(threads),
        expected_(std::move(expected)),
        headers_(paths_.size()),
        json_(paths_.size()),
        statuses_(paths_.size()) {}

  void Execute() override {
    Guarded([this](size_t i) { statuses_[i] = safetensors::ReadHeader(paths_[i], &headers_[i]); });
    safetensors::CheckShardSet(headers_, expected_, statuses_);
    Guarded([this](size_t i) {
      if (statuses_[i].ok() && HeaderToJson(headers_[i], json_[i])) headers_[i] = safetensors::Header{};
      else json_[i].clear();
    });
  }

  Napi::Value OnOk(Napi::Env env) override {
    Napi::Array out = Napi::Array::New(env, paths_.size());
    for (size_t i = 0; i < paths_.size(); ++i) {
      Napi::Value v;
      if (!statuses_[i].ok()) v = StatusToError(env, statuses_[i]).Value();
      else if (!json_[i].empty()) v = Napi::String::New(env, json_[i]);
      else v = HeaderToJs(env, headers_[i]);
      out.Set(static_cast<uint32_t>(i), v);
    }
    return out;
  }

 private:
  // fn(i) for every path in parallel; an allocation failure is reported, never unwound into the pool.
  template <class Fn>
  void Guarded(Fn fn) {
    RunParallel(pool(), paths_.size(), threads_, [&](size_t i) {
      try {
        fn(i);
      } catch (const std::exception& e) {
        statuses_[i] = Status::Error(Code::E_INTERNAL, std::string("reading the header failed: ") + e.what(), paths_[i]);
      }
    });
  }

  std::vector<std::string> paths_;
  size_t threads_;
  std::vector<std::vector<std::string>> expected_;  // per path: names the index places there
  std::vector<safetensors::Header> headers_;
  std::vector<std::string> json_;  // per path: the header as JSON text, or empty
  std::vector<Status> statuses_;
};

Napi::Value ReadHeaders(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsArray()) ThrowType(env, "readHeaders: paths must be an array of strings");
  Napi::Array list = info[0].As<Napi::Array>();
  std::vector<std::string> paths;
  paths.reserve(list.Length());
  for (uint32_t i = 0; i < list.Length(); ++i) {
    Napi::Value v = list.Get(i);
    if (!v.IsString()) ThrowType(env, "readHeaders: paths[" + std::to_string(i) + "] is not a string");
    paths.push_back(v.As<Napi::String>().Utf8Value());
  }
  uint64_t threads = kHeaderThreads;
  if (info.Length() > 1 && !info[1].IsUndefined()) {
    if (!ToU64(info[1], &threads) || threads < 1 || threads > 1024) {
      ThrowRange(env, "readHeaders: threads must be an integer from 1 to 1024", Code::E_USAGE);
    }
  }
  // Optional: per path, the tensor names the index places in that file (checked with the
  // cross-shard rules in core/shard_set.h).
  std::vector<std::vector<std::string>> expected;
  if (info.Length() > 2 && !info[2].IsUndefined()) {
    if (!info[2].IsArray() || info[2].As<Napi::Array>().Length() != paths.size()) {
      ThrowType(env, "readHeaders: expected must be an array with one string array per path");
    }
    Napi::Array outer = info[2].As<Napi::Array>();
    expected.resize(paths.size());
    for (uint32_t i = 0; i < outer.Length(); ++i) {
      Napi::Value v = outer.Get(i);
      if (!v.IsArray()) ThrowType(env, "readHeaders: expected[" + std::to_string(i) + "] is not an array");
      Napi::Array names = v.As<Napi::Array>();
      expected[i].reserve(names.Length());
      for (uint32_t j = 0; j < names.Length(); ++j) {
        Napi::Value n = names.Get(j);
        if (!n.IsString()) ThrowType(env, "readHeaders: expected names must be strings");
        expected[i].push_back(n.As<Napi::String>().Utf8Value());
      }
    }
  }
  auto baton = std::make_unique<ReadHeadersBaton>(env, std::move(paths), static_cast<size_t>(threads), std::move(expected));
  return ScheduleJob(env, std::move(baton));
}

Napi::Value ParseHeaderBytesJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    ThrowType(env, "parseHeaderBytes: expected (json: Uint8Array, dataLength: number | bigint, path?: string)");
  }
  Napi::Uint8Array bytes = info[0].As<Napi::Uint8Array>();
  uint64_t data_length = 0;
  if (!ToU64(info[1], &data_length)) ThrowRange(env, "parseHeaderBytes: dataLength must be a non-negative integer", Code::E_USAGE);
  std::string path = "<buffer>";
  if (info.Length() > 2 && info[2].IsString()) path = info[2].As<Napi::String>().Utf8Value();
  safetensors::Header header;
  Status status = safetensors::ParseHeaderBytes(bytes.Data(), bytes.ByteLength(), data_length, path, &header);
  if (!status.ok()) throw StatusToError(env, status);
  return HeaderToJs(env, header);
}

}  // namespace

void InitSafetensors(Napi::Env env, Napi::Object exports) {
  exports.Set("readHeaders", Napi::Function::New(env, ReadHeaders, "readHeaders"));
  exports.Set("parseHeaderBytes", Napi::Function::New(env, ParseHeaderBytesJs, "parseHeaderBytes"));
}

}  // namespace spark
