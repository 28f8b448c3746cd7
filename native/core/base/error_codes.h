// The one table of error codes shared by the core, the binding and TypeScript.
// src/errors/error-codes.ts mirrors it; test/errors/error-codes.test.ts fails when the two disagree.
// X(name, exit code): exit 1 a check failed, 2 bad usage or input data, 3 environment / I/O.
#pragma once

#define SPARK_ERROR_CODES(X)      \
  X(E_USAGE, 2)                   \
  X(E_INTERNAL, 3)                \
  X(E_IO, 3)                      \
  X(E_NO_SPACE, 3)                \
  X(E_ADDON_LOAD, 3)              \
  X(E_CHECK_FAILED, 1)            \
  X(E_FILE_NOT_FOUND, 2)          \
  X(E_NOT_A_FILE, 2)              \
  X(E_FILE_TOO_LARGE, 2)          \
  X(E_SAFETENSORS_TRUNCATED, 2)   \
  X(E_SAFETENSORS_HEADER_SIZE, 2) \
  X(E_SAFETENSORS_UTF8, 2)        \
  X(E_SAFETENSORS_JSON, 2)        \
  X(E_SAFETENSORS_NESTING, 2)     \
  X(E_SAFETENSORS_DTYPE, 2)       \
  X(E_SAFETENSORS_SHAPE, 2)       \
  X(E_SAFETENSORS_OFFSETS, 2)     \
  X(E_SAFETENSORS_OVERFLOW, 2)    \
  X(E_SAFETENSORS_LAYOUT, 2)      \
  X(E_SAFETENSORS_DATA_LENGTH, 2) \
  X(E_SAFETENSORS_DUPLICATE, 2)   \
  X(E_SAFETENSORS_METADATA, 2)    \
  X(E_SAFETENSORS_ENTRY, 2)       \
  X(E_INDEX_JSON, 2)              \
  X(E_INDEX_PATH, 2)              \
  X(E_INDEX_TENSOR, 2)            \
  X(E_SHARD_MISSING, 2)           \
  X(E_SHARD_TRUNCATED, 2)         \
  X(E_SNAPSHOT, 2)                \
  X(E_CONFIG, 2)                  \
  X(E_ENGRAM_NOT_FOUND, 2)        \
  X(E_ENGRAM_SHAPE, 2)            \
  X(E_ENGRAM_DTYPE, 2)            \
  X(E_ENGRAM_ROWS, 2)             \
  X(E_ROW_RANGE, 2)               \
  X(E_RECIPE, 2)                  \
  X(E_CLUSTER, 2)                 \
  X(E_ENV_FILE, 2)                \
  X(E_ROWS_SPEC, 2)               \
  X(E_SYSFS, 3)                   \
  X(E_EXEC, 3)                    \
  X(E_STORE_CLOSED, 2)            \
  X(E_THREAD_START, 3)            \
  X(E_PACK_MANIFEST, 2)           \
  X(E_NODE_FAILED, 3)             \
  X(E_HEALTH_TIMEOUT, 3)          \
  X(E_SOURCE_CHANGED, 3)          \
  X(E_PACK_EXISTS, 2)             \
  X(E_PACK_BUSY, 3)               \
  X(E_PACK_INCOMPLETE, 1)         \
  X(E_PACK_MISMATCH, 1)           \
  X(E_UNSAFE_PATH, 3)             \
  X(E_NO_HOLES, 3)
