// The row store's constructor arguments, read from JS objects into core structs (tables
// and options as described in src/addon/row-store.ts). Bad values throw a JS TypeError or
// RangeError naming the field.
#pragma once

#include <napi.h>

#include <cstddef>

#include "core/row_store/row_store.h"

namespace spark {

// What the store itself does not keep: its pool's size and the pool's test switch.
struct PoolOptions {
  size_t threads = 0;
  size_t fail_start_at = 0;  // faults.threadStartFailAt (tests)
};

TableSpec ParseTable(Napi::Value value, size_t index);
StoreOptions ParseOptions(Napi::Object options, PoolOptions* pool);

}  // namespace spark
