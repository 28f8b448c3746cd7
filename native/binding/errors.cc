#include "binding/errors.h"

#include <cmath>

namespace spark {

namespace {
constexpr uint64_t kMaxSafeInteger = (uint64_t{1} << 53) - 1;
}

Napi::Error StatusToError(Napi::Env env, const Status& status) {
  Napi::Error err = Napi::Error::New(env, status.ToString());
  Napi::Object obj = err.Value();
  obj.Set("code", CodeName(status.code));
  obj.Set("exitCode", CodeExit(status.code));
  obj.Set("detail", status.message);
  if (!status.path.empty()) obj.Set("path", status.path);
  if (!status.tensor.empty()) obj.Set("tensor", status.tensor);
  if (status.has_offset) obj.Set("offset", FromU64(env, status.offset));
  return err;
}

void ThrowType(Napi::Env env, const std::string& message) {
  Napi::TypeError err = Napi::TypeError::New(env, message);
  err.Value().Set("code", CodeName(Code::E_USAGE));
  throw err;
}

void ThrowRange(Napi::Env env, const std::string& message, Code code) {
  Napi::RangeError err = Napi::RangeError::New(env, message);
  err.Value().Set("code", CodeName(code));
  throw err;
}

bool ToU64(Napi::Value v, uint64_t* out) {
  if (v.IsBigInt()) {
    bool lossless = false;
    uint64_t x = v.As<Napi::BigInt>().Uint64Value(&lossless);
    if (!lossless) return false;
    *out = x;
    return true;
  }
  if (!v.IsNumber()) return false;
  double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= 0) || d > static_cast<double>(kMaxSafeInteger) || std::floor(d) != d) return false;
  *out = static_cast<uint64_t>(d);
  return true;
}

Napi::Value FromU64(Napi::Env env, uint64_t v) {
  if (v <= kMaxSafeInteger) return Napi::Number::New(env, static_cast<double>(v));
  return Napi::BigInt::New(env, v);
}

}  // namespace spark
