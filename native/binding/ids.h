// Row ids from JavaScript: a Uint32Array or a BigUint64Array, copied on the JS thread into
// memory the batch owns (the JS array may change or go away while the batch runs).
#pragma once

#include <napi.h>

#include <cstdint>
#include <vector>

#include "binding/errors.h"

namespace spark {

inline std::vector<uint64_t> CopyIds(Napi::Value v) {
  if (!v.IsTypedArray()) ThrowType(v.Env(), "ids must be a Uint32Array or BigUint64Array");
  Napi::TypedArray ids = v.As<Napi::TypedArray>();
  std::vector<uint64_t> copy(ids.ElementLength());
  if (ids.TypedArrayType() == napi_uint32_array) {
    const uint32_t* p = ids.As<Napi::Uint32Array>().Data();
    for (size_t i = 0; i < copy.size(); ++i) copy[i] = p[i];
  } else if (ids.TypedArrayType() == napi_biguint64_array) {
    const uint64_t* p = ids.As<Napi::TypedArrayOf<uint64_t>>().Data();
    for (size_t i = 0; i < copy.size(); ++i) copy[i] = p[i];
  } else {
    ThrowType(v.Env(), "ids must be a Uint32Array or BigUint64Array");
  }
  return copy;
}

}  // namespace spark
