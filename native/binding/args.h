// Reading JS arguments into plain C++ values, the one way every binding file does it. A value
// of the wrong type throws a TypeError (code E_USAGE) that names the field as the caller
// wrote it: "tables[2].weight.path must be a string".
#pragma once

#include <napi.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace spark {

// `what` names the value in messages.
uint64_t U64Value(Napi::Value v, const std::string& what);
std::string StringValue(Napi::Value v, const std::string& what);
// Every element a string ("what must be an array of strings" otherwise).
std::vector<std::string> StringList(Napi::Value v, const std::string& what);

// The fields of one JS object, each named "<where>.<key>" in messages.
class Fields {
 public:
  // Throws "<where> must be an object" when `v` is not one.
  Fields(Napi::Value v, std::string where);

  Napi::Env Env() const { return object_.Env(); }
  std::string Name(const char* key) const { return where_ + "." + key; }
  bool Has(const char* key) const { return !object_.Get(key).IsUndefined(); }
  Napi::Value Get(const char* key) const { return object_.Get(key); }

  std::string String(const char* key) const;
  // The bytes of a Uint8Array (a Node Buffer), copied.
  std::string Bytes(const char* key) const;
  uint64_t U64(const char* key) const;
  uint64_t U64Or(const char* key, uint64_t fallback) const;
  // A u64 that must also fit 32 bits (a layer number).
  uint32_t U32(const char* key) const;
  // An optional pair [first, second] of u64s: false when absent.
  bool U64PairOr(const char* key, const char* first, const char* second, uint64_t* a, uint64_t* b) const;
  bool BoolOr(const char* key, bool fallback) const;
  // Absent: empty.
  std::vector<uint64_t> U64ListOr(const char* key) const;
  // A nested object, named "<where>.<key>".
  Fields Object(const char* key) const;

 private:
  Napi::Object object_;
  std::string where_;
};

// The other way: a result object whose fields are u64 counters (numbers, BigInts past 2^53).
Napi::Object U64Object(Napi::Env env, std::initializer_list<std::pair<const char*, uint64_t>> fields);

}  // namespace spark
