#include "binding/args.h"

#include "binding/errors.h"

namespace spark {

uint64_t U64Value(Napi::Value v, const std::string& what) {
  uint64_t out = 0;
  if (!ToU64(v, &out)) ThrowType(v.Env(), what + " must be a non-negative integer");
  return out;
}

std::string StringValue(Napi::Value v, const std::string& what) {
  if (!v.IsString()) ThrowType(v.Env(), what + " must be a string");
  return v.As<Napi::String>().Utf8Value();
}

std::vector<std::string> StringList(Napi::Value v, const std::string& what) {
  if (!v.IsArray()) ThrowType(v.Env(), what + " must be an array of strings");
  Napi::Array arr = v.As<Napi::Array>();
  std::vector<std::string> out;
  out.reserve(arr.Length());
  for (uint32_t i = 0; i < arr.Length(); ++i) {
    Napi::Value item = arr.Get(i);
    if (!item.IsString()) ThrowType(v.Env(), what + " must be an array of strings");
    out.push_back(item.As<Napi::String>().Utf8Value());
  }
  return out;
}

Fields::Fields(Napi::Value v, std::string where) : where_(std::move(where)) {
  if (!v.IsObject()) ThrowType(v.Env(), where_ + " must be an object");
  object_ = v.As<Napi::Object>();
}

std::string Fields::String(const char* key) const { return StringValue(object_.Get(key), Name(key)); }

std::string Fields::Bytes(const char* key) const {
  Napi::Value v = object_.Get(key);
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    ThrowType(Env(), Name(key) + " must be a Uint8Array (a Buffer)");
  }
  Napi::Uint8Array a = v.As<Napi::Uint8Array>();
  return std::string(reinterpret_cast<const char*>(a.Data()), a.ByteLength());
}

uint64_t Fields::U64(const char* key) const { return U64Value(object_.Get(key), Name(key)); }

uint64_t Fields::U64Or(const char* key, uint64_t fallback) const { return Has(key) ? U64(key) : fallback; }

uint32_t Fields::U32(const char* key) const {
  uint64_t v = U64(key);
  if (v > UINT32_MAX) ThrowType(Env(), Name(key) + " is too large");
  return static_cast<uint32_t>(v);
}

bool Fields::U64PairOr(const char* key, const char* first, const char* second, uint64_t* a, uint64_t* b) const {
  if (!Has(key)) return false;
  Napi::Value v = object_.Get(key);
  if (!v.IsArray() || v.As<Napi::Array>().Length() != 2 || !ToU64(v.As<Napi::Array>().Get(0u), a) ||
      !ToU64(v.As<Napi::Array>().Get(1u), b)) {
    ThrowType(Env(), Name(key) + " must be [" + first + ", " + second + "] (two non-negative integers)");
  }
  return true;
}

bool Fields::BoolOr(const char* key, bool fallback) const {
  Napi::Value v = object_.Get(key);
  if (v.IsUndefined()) return fallback;
  if (!v.IsBoolean()) ThrowType(Env(), Name(key) + " must be a boolean");
  return v.As<Napi::Boolean>().Value();
}

std::vector<uint64_t> Fields::U64ListOr(const char* key) const {
  Napi::Value v = object_.Get(key);
  if (v.IsUndefined()) return {};
  if (!v.IsArray()) ThrowType(Env(), Name(key) + " must be an array of non-negative integers");
  Napi::Array arr = v.As<Napi::Array>();
  std::vector<uint64_t> out(arr.Length());
  for (uint32_t i = 0; i < arr.Length(); ++i) out[i] = U64Value(arr.Get(i), Name(key) + "[" + std::to_string(i) + "]");
  return out;
}

Napi::Object U64Object(Napi::Env env, std::initializer_list<std::pair<const char*, uint64_t>> fields) {
  Napi::Object o = Napi::Object::New(env);
  for (const auto& [key, value] : fields) o.Set(key, FromU64(env, value));
  return o;
}

Fields Fields::Object(const char* key) const { return Fields(object_.Get(key), Name(key)); }

}  // namespace spark
