// Writes safetensors files for tests: exact header text (so malformed headers can be
// crafted byte by byte) and a data section that is a hole, so multi-GiB files cost nothing.
import { closeSync, ftruncateSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs';

export type Int = number | bigint;

/** One tensor entry as JSON text; `shape` is raw JSON when a string. */
export function entry(dtype: string, shape: string | Int[], begin: Int | string, end: Int | string): string {
  const dims = typeof shape === 'string' ? shape : `[${shape.join(',')}]`;
  return `{"dtype":"${dtype}","shape":${dims},"data_offsets":[${begin},${end}]}`;
}

/** A header object from name -> entry text, in the given order. */
export function header(entries: Record<string, string>, metadata?: string): string {
  const members = Object.entries(entries).map(([name, e]) => `${JSON.stringify(name)}:${e}`);
  if (metadata !== undefined) members.unshift(`"__metadata__":${metadata}`);
  return `{${members.join(',')}}`;
}

export interface WriteOptions {
  /** The 8-byte length field; defaults to the header's byte length. */
  lengthField?: bigint;
  /** Data bytes to write (a prefix of the data section); the rest stays a hole. */
  data?: Buffer;
}

/** Writes [u64 length][header][dataLength bytes] to path. */
export function writeSafetensors(
  path: string,
  headerText: string | Buffer,
  dataLength: Int,
  options: WriteOptions = {},
): void {
  const json = typeof headerText === 'string' ? Buffer.from(headerText, 'utf8') : headerText;
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(options.lengthField ?? BigInt(json.length));
  const fd = openSync(path, 'w');
  try {
    writeSync(fd, prefix);
    writeSync(fd, json);
    if (options.data) writeSync(fd, options.data);
    ftruncateSync(fd, 8 + json.length + Number(dataLength));
  } finally {
    closeSync(fd);
  }
}

/** Bytes this process has read through read(2)/pread(2) so far (Linux /proc/self/io). */
export function bytesReadByProcess(): number {
  const m = /^rchar: (\d+)$/m.exec(readFileSync('/proc/self/io', 'utf8'));
  if (!m) throw new Error('/proc/self/io has no rchar line');
  return Number(m[1]);
}

const WIDTH: Record<string, number> = { F8_E4M3: 1, F8_E8M0: 1, BF16: 2, F16: 2, F32: 4, U8: 1 };

export interface TensorSpec {
  name: string;
  dtype: string;
  shape: number[];
}

/** A well-formed file holding these tensors in order, with patterned data bytes. */
export function writeTensors(path: string, tensors: TensorSpec[]): void {
  const entries: Record<string, string> = {};
  let offset = 0;
  for (const t of tensors) {
    const bytes = t.shape.reduce((a, b) => a * b, 1) * WIDTH[t.dtype];
    entries[t.name] = entry(t.dtype, t.shape, offset, offset + bytes);
    offset += bytes;
  }
  const data = Buffer.alloc(offset);
  for (let i = 0; i < offset; i++) data[i] = i & 0x7e;
  writeSafetensors(path, header(entries), offset, { data });
}

export function engramPair(layer: number, rows: number, dim = 64): TensorSpec[] {
  return [
    { name: `layers.${layer}.engram.embed.weight`, dtype: 'F8_E4M3', shape: [rows, dim] },
    { name: `layers.${layer}.engram.embed.scale`, dtype: 'F8_E8M0', shape: [rows, dim / 32] },
  ];
}

/** A safetensors file at `path` listing `n` one-byte U8 tensors t0..t(n-1), with their data. */
export function writeManyTensors(path: string, n: number): string {
  const parts: string[] = [];
  for (let i = 0; i < n; i++) parts.push(`"t${i}":{"dtype":"U8","shape":[1],"data_offsets":[${i},${i + 1}]}`);
  const json = Buffer.from(`{${parts.join(',')}}`);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  writeFileSync(path, Buffer.concat([len, json, Buffer.alloc(n)]));
  return path;
}
