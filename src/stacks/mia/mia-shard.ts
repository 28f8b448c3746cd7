// The Mia stack's packed shard (docs/packed-format.md, "The Mia stack's packed shard"): the
// file its serving reader attaches for one layer and rank, and what spark's `dense` layout
// writes byte for byte. One place for the name, the 4096-byte binary header and the size, so
// the packer, the readers, verify and preflight cannot drift apart.
//
//   engram-l{L}-r{R}of{TP}.bin
//   [0, 48)      six little-endian uint64: magic, layer, lo, hi, N (rows of the whole table), rowBytes
//   [48, 4096)   zeros
//   [4096, ...)  rows lo .. hi-1, each weight[D] ‖ scale[D/32], back to back, no padding
//   size         exactly 4096 + (hi - lo) * rowBytes
//
// The reader aborts the serving process on a file under this name whose magic, layer, lo, hi,
// N or row bytes differ from what it expects, or that is shorter than its rows: nothing but a
// complete, correct shard may ever stand under the name.

/** "DSV41EN1" read as a little-endian uint64: bytes 44 53 56 31 45 4E 34 31. */
export const MIA_MAGIC = 0x31344e4531565344n;
export const MIA_HEADER_BYTES = 4096;
/** Bytes of the header that carry fields; the rest of the 4096 are zero. */
export const MIA_HEADER_FIELDS_BYTES = 48;
/** The row size the stack's reader accepts: 256 weight bytes and 8 scale bytes. */
export const MIA_ROW_BYTES = 264;

const NAME = /^engram-l(\d+)-r(\d+)of(\d+)\.bin$/;

export function miaShardName(layer: number, rank: number, world: number): string {
  return `engram-l${layer}-r${rank}of${world}.bin`;
}

/** The (layer, rank, world) a file name says, or undefined when the stack would not open it. */
export function parseMiaShardName(name: string): { layer: number; rank: number; world: number } | undefined {
  const m = NAME.exec(name);
  if (!m) return undefined;
  // The stack formats the name from integers: a leading zero is a name it never opens.
  if (m.slice(1).some((d) => d.length > 1 && d.startsWith('0'))) return undefined;
  return { layer: Number(m[1]), rank: Number(m[2]), world: Number(m[3]) };
}

export interface MiaHeader {
  magic: bigint;
  layer: number;
  lo: number;
  hi: number;
  /** Rows of the whole table (all ranks). */
  rows: number;
  rowBytes: number;
}

/** The 4096-byte header block of a shard holding rows [lo, hi) of a table of `rows` rows. */
export function encodeMiaHeader(h: Omit<MiaHeader, 'magic'>): Buffer {
  const b = Buffer.alloc(MIA_HEADER_BYTES);
  const fields = [MIA_MAGIC, BigInt(h.layer), BigInt(h.lo), BigInt(h.hi), BigInt(h.rows), BigInt(h.rowBytes)];
  fields.forEach((v, i) => b.writeBigUInt64LE(v, i * 8));
  return b;
}

/**
 * The six fields of a header block (at least 48 bytes), and whether bytes 48..4095 are zero
 * (false when fewer than 4096 bytes are given). A field too large for a JavaScript safe
 * integer is named in `unsafe` (its number is then inexact): no real table comes near 2^53.
 */
export function decodeMiaHeader(block: Buffer): MiaHeader & { zeroTail: boolean; unsafe: string[] } {
  if (block.length < MIA_HEADER_FIELDS_BYTES)
    throw new RangeError(`a header needs ${MIA_HEADER_FIELDS_BYTES} bytes, got ${block.length}`);
  const u = (i: number): bigint => block.readBigUInt64LE(i * 8);
  const names = ['layer', 'lo', 'hi', 'rows', 'rowBytes'] as const;
  const unsafe: string[] = [];
  const num = (v: bigint, name: string): number => {
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) unsafe.push(name);
    return Number(v);
  };
  const [layer, lo, hi, rows, rowBytes] = names.map((n, i) => num(u(i + 1), n));
  let zeroTail = block.length >= MIA_HEADER_BYTES;
  for (let i = MIA_HEADER_FIELDS_BYTES; zeroTail && i < MIA_HEADER_BYTES; i++) if (block[i] !== 0) zeroTail = false;
  return { magic: u(0), layer, lo, hi, rows, rowBytes, zeroTail, unsafe };
}

/** The exact size of a complete shard of rows [lo, hi). */
export function miaShardBytes(lo: number, hi: number, rowBytes = MIA_ROW_BYTES): number {
  return MIA_HEADER_BYTES + (hi - lo) * rowBytes;
}

/** Byte offset of global row `id` in a shard whose rows start at `lo`. */
export function miaRowOffset(lo: number, id: number, rowBytes = MIA_ROW_BYTES): number {
  return MIA_HEADER_BYTES + (id - lo) * rowBytes;
}

/**
 * What the stack's reader would do with a file holding `header` and `size` bytes, when it
 * expects rows [lo, hi) of a table of `rows` rows of `layer`: undefined when it attaches, else
 * the reason it aborts (the first difference, in the order the reader checks them).
 */
export function miaMismatch(
  header: MiaHeader,
  size: number,
  want: { layer: number; lo: number; hi: number; rows: number; rowBytes?: number },
): string | undefined {
  const rowBytes = want.rowBytes ?? MIA_ROW_BYTES;
  if (header.magic !== MIA_MAGIC)
    return `magic is 0x${header.magic.toString(16)}, not 0x${MIA_MAGIC.toString(16)} ("DSV41EN1")`;
  if (header.layer !== want.layer) return `layer is ${header.layer}, expected ${want.layer}`;
  if (header.lo !== want.lo || header.hi !== want.hi)
    return `rows [${header.lo}, ${header.hi}), expected [${want.lo}, ${want.hi})`;
  if (header.rows !== want.rows) return `table rows N = ${header.rows}, expected ${want.rows}`;
  if (header.rowBytes !== rowBytes) return `row bytes ${header.rowBytes}, expected ${rowBytes}`;
  const need = miaShardBytes(want.lo, want.hi, rowBytes);
  if (size < need) return `${size} bytes, shorter than the ${need} its rows need`;
  return undefined;
}
