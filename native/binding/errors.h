// Status -> JS Error with a stable string `code` (see core/base/error_codes.h).
#pragma once

#include <napi.h>

#include "core/base/status.h"

namespace spark {

Napi::Error StatusToError(Napi::Env env, const Status& status);

// Argument checks: throw a JS TypeError / RangeError carrying `code`.
[[noreturn]] void ThrowType(Napi::Env env, const std::string& message);
[[noreturn]] void ThrowRange(Napi::Env env, const std::string& message, Code code = Code::E_ROW_RANGE);

// Exact unsigned 64-bit value from a JS number (a non-negative safe integer) or BigInt.
bool ToU64(Napi::Value v, uint64_t* out);
// A uint64 as a JS number when it is a safe integer, otherwise a BigInt (never rounded).
Napi::Value FromU64(Napi::Env env, uint64_t v);

}  // namespace spark
