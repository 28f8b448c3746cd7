// Typed access to the native safetensors header reader (native/core/format/safetensors.h).
// Every u64 arrives exact: a number when it is a safe integer, a bigint otherwise.
import { SparkError, toSparkError, usageError } from '../errors/errors.js';
import { addon } from './index.js';

export type U64 = number | bigint;

/** Bits per element of every safetensors dtype. */
export const SAFETENSORS_DTYPE_BITS = {
  BOOL: 8,
  F4: 4,
  F6_E2M3: 6,
  F6_E3M2: 6,
  U8: 8,
  I8: 8,
  F8_E5M2: 8,
  F8_E4M3: 8,
  F8_E8M0: 8,
  F8_E4M3FNUZ: 8,
  F8_E5M2FNUZ: 8,
  I16: 16,
  U16: 16,
  F16: 16,
  BF16: 16,
  I32: 32,
  U32: 32,
  F32: 32,
  C64: 64,
  F64: 64,
  I64: 64,
  U64: 64,
} as const;

export type SafetensorsDtype = keyof typeof SAFETENSORS_DTYPE_BITS;

export interface SafetensorsTensor {
  name: string;
  dtype: SafetensorsDtype;
  shape: U64[];
  /** [begin, end) relative to the data start, as written in the header. */
  dataOffsets: [U64, U64];
  /** Absolute offset of the tensor's first byte in its file: 8 + headerLength + begin. */
  fileOffset: U64;
  bytes: U64;
}

export interface SafetensorsHeader {
  path: string;
  /** N, the JSON header's length in bytes (at most 100,000,000). */
  headerLength: number;
  /** 8 + N: where the data section starts. */
  dataStart: number;
  dataLength: U64;
  fileSize: U64;
  /** `__metadata__` (a null-prototype object: any key is plain data). */
  metadata: Record<string, string>;
  /** Sorted by data offset; contiguous from 0 to dataLength. */
  tensors: SafetensorsTensor[];
}

export interface ReadHeadersOptions {
  /** Headers read at once (default 32, the pool's size). */
  threads?: number;
  /**
   * Per path, the tensor names an index places in that file. With it the reader also checks,
   * natively, that each is there (E_INDEX_TENSOR) and that no name is in two files
   * (E_SAFETENSORS_DUPLICATE); the failing file gets the error.
   */
  expected?: readonly (readonly string[])[];
}

type RawHeader = Omit<SafetensorsHeader, 'metadata'> & { metadata: [string, string][] };

interface SafetensorsNative {
  /** A header arrives as JSON text (same shape) when all its values are safe integers. */
  readHeaders(
    paths: string[],
    threads?: number,
    expected?: readonly (readonly string[])[],
  ): Promise<Array<RawHeader | string | Error>>;
  parseHeaderBytes(json: Uint8Array, dataLength: U64, path?: string): RawHeader;
}

function native(): SafetensorsNative {
  return addon() as unknown as SafetensorsNative;
}

function fromRaw(raw: RawHeader): SafetensorsHeader {
  const metadata = Object.create(null) as Record<string, string>;
  for (const [key, value] of raw.metadata) metadata[key] = value;
  return { ...raw, metadata };
}

function checkArgs(paths: readonly string[], options: ReadHeadersOptions): void {
  if (!Array.isArray(paths) || paths.some((p) => typeof p !== 'string')) {
    throw usageError('readHeaders: paths must be an array of strings');
  }
  const t = options.threads;
  if (t !== undefined && (!Number.isInteger(t) || t < 1 || t > 1024)) {
    throw usageError(`readHeaders: threads must be an integer from 1 to 1024, got ${String(t)}`);
  }
}

/** Reads every header in parallel; per path, its header or the SparkError that path failed with. */
export async function readHeadersSettled(
  paths: readonly string[],
  options: ReadHeadersOptions = {},
): Promise<Array<SafetensorsHeader | SparkError>> {
  checkArgs(paths, options);
  if (paths.length === 0) return [];
  if (options.expected !== undefined && options.expected.length !== paths.length) {
    throw usageError('readHeaders: expected must have one name list per path');
  }
  const results = await native().readHeaders([...paths], options.threads, options.expected);
  return results.map((r) =>
    r instanceof Error ? toSparkError(r) : fromRaw(typeof r === 'string' ? (JSON.parse(r) as RawHeader) : r),
  );
}

/** Reads every header in parallel; rejects with the SparkError of the first failing path, in path order. */
export async function readHeaders(
  paths: readonly string[],
  options: ReadHeadersOptions = {},
): Promise<SafetensorsHeader[]> {
  const settled = await readHeadersSettled(paths, options);
  const failed = settled.find((r): r is SparkError => r instanceof SparkError);
  if (failed) throw failed;
  return settled as SafetensorsHeader[];
}

/** Validates header bytes already in memory, for a file whose data section is dataLength bytes. */
export function parseHeaderBytes(json: Uint8Array, dataLength: U64, path = '<buffer>'): SafetensorsHeader {
  try {
    return fromRaw(native().parseHeaderBytes(json, dataLength, path));
  } catch (err) {
    throw toSparkError(err);
  }
}
