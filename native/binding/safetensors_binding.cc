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
#include "binding/args.h"
#include "binding/async.h"
#include "binding/errors.h"
#include "core/format/json_writer.h"
#include "core/format/safetensors.h"
#include "core/format/shard_set.h"
#include "core/threads/parallel.h"
#include "core/threads/thread_pool.h"

namespace spark {
namespace {

constexpr size_t kHeaderThreads = 32;

// The one description of a header as JS sees it (RawHeader in src/addon/safetensors.ts).
// `out` is a json::Writer (text for JSON.parse) or a JsBuilder (JS values, one by one).
template <class Out>
void RenderHeader(const safetensors::Header& h, Out& out) {
  out.BeginObject();
  out.Key("path");
  out.String(h.path);
  out.Key("headerLength");
  out.U64(h.header_length);
  out.Key("dataStart");
  out.U64(h.data_start);
  out.Key("dataLength");
  out.U64(h.data_length);
  out.Key("fileSize");
  out.U64(h.file_size);
  // Pairs, not an object: a key such as "__proto__" must stay data, never touch a prototype.
  out.Key("metadata");
  out.BeginArray();
  for (const auto& [key, value] : h.metadata) {
    out.BeginArray();
    out.String(key);
    out.String(value);
    out.EndArray();
  }
  out.EndArray();
  out.Key("tensors");
  out.BeginArray();
  for (const safetensors::Tensor& t : h.tensors) {
    out.BeginObject();
    out.Key("name");
    out.String(t.name);
    out.Key("dtype");
    out.String(safetensors::DtypeName(t.dtype));
    out.Key("shape");
    out.BeginArray();
    for (uint64_t d : t.shape) out.U64(d);
    out.EndArray();
    out.Key("dataOffsets");
    out.BeginArray();
    out.U64(t.begin);
    out.U64(t.end);
    out.EndArray();
    out.Key("fileOffset");
    out.U64(t.file_offset);
    out.Key("bytes");
    out.U64(t.bytes);
    out.EndObject();
  }
  out.EndArray();
  out.EndObject();
}

// Builds JS values with the calls a json::Writer takes; u64 values past 2^53 become BigInts.
class JsBuilder {
 public:
  explicit JsBuilder(Napi::Env env) : env_(env) {}
  void BeginObject() { Open(Napi::Object::New(env_), false); }
  void EndObject() { stack_.pop_back(); }
  void BeginArray() { Open(Napi::Array::New(env_), true); }
  void EndArray() { stack_.pop_back(); }
  void Key(const char* key) { key_ = key; }
  void String(std::string_view s) { Put(Napi::String::New(env_, s.data(), s.size())); }
  void U64(uint64_t v) { Put(FromU64(env_, v)); }
  Napi::Value Result() const { return result_; }

 private:
  struct Frame {
    Napi::Object container;
    bool array;
    uint32_t next = 0;
  };
  void Open(Napi::Object container, bool array) {
    Put(container);
    stack_.push_back(Frame{container, array});
  }
  void Put(Napi::Value v) {
    if (stack_.empty()) {
      result_ = v;
      return;
    }
    Frame& f = stack_.back();
    if (f.array) {
      f.container.Set(f.next++, v);
    } else {
      f.container.Set(key_, v);
    }
  }

  Napi::Env env_;
  std::vector<Frame> stack_;
  const char* key_ = "";
  Napi::Value result_;
};

Napi::Value HeaderToJs(Napi::Env env, const safetensors::Header& h) {
  JsBuilder out(env);
  RenderHeader(h, out);
  return out.Result();
}

// The header as JSON text, for JSON.parse on the JS thread: V8 builds thousands of tensor
// objects from text far faster than one napi call per property. False (and nothing usable in
// `out`) when a value is past 2^53, which a JSON number cannot carry into JS exactly; the
// caller then builds the values with HeaderToJs.
bool HeaderToJson(const safetensors::Header& h, std::string& out) {
  out.reserve(64 + h.tensors.size() * 128);
  json::Writer writer(&out);
  RenderHeader(h, writer);
  return writer.exact_in_double();
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
      if (statuses_[i].ok() && HeaderToJson(headers_[i], json_[i]))
        headers_[i] = safetensors::Header{};
      else
        json_[i].clear();
    });
  }

  Napi::Value OnOk(Napi::Env env) override {
    Napi::Array out = Napi::Array::New(env, paths_.size());
    for (size_t i = 0; i < paths_.size(); ++i) {
      Napi::Value v;
      if (!statuses_[i].ok())
        v = StatusToError(env, statuses_[i]).Value();
      else if (!json_[i].empty())
        v = Napi::String::New(env, json_[i]);
      else
        v = HeaderToJs(env, headers_[i]);
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
        statuses_[i] =
            Status::Error(Code::E_INTERNAL, std::string("reading the header failed: ") + e.what(), paths_[i]);
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
  std::vector<std::string> paths = StringList(info[0], "readHeaders: paths");
  uint64_t threads = kHeaderThreads;
  if (info.Length() > 1 && !info[1].IsUndefined()) {
    if (!ToU64(info[1], &threads) || threads < 1 || threads > 1024) {
      ThrowRange(env, "readHeaders: threads must be an integer from 1 to 1024", Code::E_USAGE);
    }
  }
  // Optional: per path, the tensor names the index places in that file (checked with the
  // cross-shard rules in core/format/shard_set.h).
  std::vector<std::vector<std::string>> expected;
  if (info.Length() > 2 && !info[2].IsUndefined()) {
    if (!info[2].IsArray() || info[2].As<Napi::Array>().Length() != paths.size()) {
      ThrowType(env, "readHeaders: expected must be an array with one string array per path");
    }
    Napi::Array outer = info[2].As<Napi::Array>();
    for (uint32_t i = 0; i < outer.Length(); ++i) {
      expected.push_back(StringList(outer.Get(i), "readHeaders: expected[" + std::to_string(i) + "]"));
    }
  }
  auto baton =
      std::make_unique<ReadHeadersBaton>(env, std::move(paths), static_cast<size_t>(threads), std::move(expected));
  return ScheduleJob(env, std::move(baton));
}

Napi::Value ParseHeaderBytesJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsTypedArray() ||
      info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    ThrowType(env, "parseHeaderBytes: expected (json: Uint8Array, dataLength: number | bigint, path?: string)");
  }
  Napi::Uint8Array bytes = info[0].As<Napi::Uint8Array>();
  uint64_t data_length = 0;
  if (!ToU64(info[1], &data_length))
    ThrowRange(env, "parseHeaderBytes: dataLength must be a non-negative integer", Code::E_USAGE);
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
