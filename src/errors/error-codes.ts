// The error-code table. It imports nothing: errors.ts and src/native both build on it.
// Mirror of native/core/base/error_codes.h: code -> exit code. test/errors/error-codes.test.ts keeps them equal.
// Exit codes: 1 a check failed, 2 bad usage or input data, 3 environment / I/O.
export const ERROR_CODES = {
  E_USAGE: 2,
  E_INTERNAL: 3,
  E_IO: 3,
  E_NO_SPACE: 3,
  E_ADDON_LOAD: 3,
  E_CHECK_FAILED: 1,
  E_FILE_NOT_FOUND: 2,
  /** A directory, FIFO, device or socket where a regular file is expected. */
  E_NOT_A_FILE: 2,
  /** A small file (recipe, config, index) past its size cap. */
  E_FILE_TOO_LARGE: 2,
  E_SAFETENSORS_TRUNCATED: 2,
  E_SAFETENSORS_HEADER_SIZE: 2,
  E_SAFETENSORS_UTF8: 2,
  E_SAFETENSORS_JSON: 2,
  E_SAFETENSORS_NESTING: 2,
  E_SAFETENSORS_DTYPE: 2,
  E_SAFETENSORS_SHAPE: 2,
  E_SAFETENSORS_OFFSETS: 2,
  E_SAFETENSORS_OVERFLOW: 2,
  E_SAFETENSORS_LAYOUT: 2,
  E_SAFETENSORS_DATA_LENGTH: 2,
  E_SAFETENSORS_DUPLICATE: 2,
  E_SAFETENSORS_METADATA: 2,
  E_SAFETENSORS_ENTRY: 2,
  E_INDEX_JSON: 2,
  E_INDEX_PATH: 2,
  E_INDEX_TENSOR: 2,
  E_SHARD_MISSING: 2,
  E_SHARD_TRUNCATED: 2,
  E_SNAPSHOT: 2,
  E_CONFIG: 2,
  E_ENGRAM_NOT_FOUND: 2,
  E_ENGRAM_SHAPE: 2,
  E_ENGRAM_DTYPE: 2,
  E_ENGRAM_ROWS: 2,
  E_ROW_RANGE: 2,
  E_RECIPE: 2,
  E_CLUSTER: 2,
  E_ENV_FILE: 2,
  E_ROWS_SPEC: 2,
  E_SYSFS: 3,
  E_EXEC: 3,
  E_STORE_CLOSED: 2,
  /** A worker thread could not be started (pid limit, ulimit -u). */
  E_THREAD_START: 3,
  E_PACK_MANIFEST: 2,
  E_NODE_FAILED: 3,
  E_HEALTH_TIMEOUT: 3,
  E_SOURCE_CHANGED: 3,
  E_PACK_EXISTS: 2,
  E_PACK_BUSY: 3,
  E_PACK_INCOMPLETE: 1,
  E_PACK_MISMATCH: 1,
  E_UNSAFE_PATH: 3,
  E_NO_HOLES: 3,
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;
export type ExitCode = 0 | 1 | 2 | 3;

export function exitCodeOf(code: string): ExitCode {
  return (ERROR_CODES as Record<string, ExitCode>)[code] ?? 3;
}
