// A small writer of sparse node-local copies for tests, independent of spark's packer, in two
// flavours:
//   overlay  laid out the way the serving overlay's engram_local.py lays one out (domain.md,
//            "The consumer"): the index copied verbatim, only the shards holding the copied
//            Engram tables, each with the source's name and apparent size (ftruncate), its
//            header bytes verbatim, the rank's weight and scale rows at their original offsets,
//            holes elsewhere; engram-local.json {source, layers, quant, created, note}.
//   spark    the same plus the `spark` key of src/engram/sparse-manifest.ts, with checksums
//            computed here (CRC-32 of a chunk's weight rows followed by its scale rows).
// The source's headers are parsed here too, with JSON.parse, not with spark's reader.
import { closeSync, fstatSync, ftruncateSync, openSync, readFileSync, readSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { SparseTable } from '../../src/engram/sparse-manifest.js';

export const INDEX = 'model.safetensors.index.json';

export interface CopyRange {
  layer: number;
  start: number;
  end: number;
}

export interface SparseCopyOptions {
  flavour: 'overlay' | 'spark';
  ranges: CopyRange[];
  /** spark flavour: who the rows are for (default rank 0 of 1, floor). */
  rank?: number;
  world?: number;
  split?: 'floor' | 'front' | 'heads';
  chunkRows?: number;
  /** Leave these rows of a layer's weight column unwritten: a hole inside the range. */
  skipWeightRows?: { layer: number; from: number; to: number };
}

/** A table as copied: what spark's manifest records of it, less the checksum. */
export type CopiedTable = Omit<SparseTable, 'checksum'>;

export interface SparseCopy {
  dir: string;
  manifest: Record<string, unknown>;
  tables: CopiedTable[];
  shards: string[];
}

// CRC-32 (IEEE, reflected, as zlib computes it), table-driven.
const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

export function crc32(data: Uint8Array, crc = 0): number {
  let c = ~crc >>> 0;
  for (let i = 0; i < data.length; i++) c = CRC_TABLE[(c ^ data[i]) & 0xff] ^ (c >>> 8);
  return ~c >>> 0;
}

const hex = (n: number) => n.toString(16).padStart(8, '0');

function readAt(fd: number, offset: number, length: number): Buffer {
  const b = Buffer.alloc(length);
  let done = 0;
  while (done < length) {
    const n = readSync(fd, b, done, length - done, offset + done);
    if (n === 0) throw new Error(`short read at ${offset + done}`);
    done += n;
  }
  return b;
}

function writeAt(fd: number, data: Buffer, offset: number): void {
  let done = 0;
  while (done < data.length) done += writeSync(fd, data, done, data.length - done, offset + done);
}

interface Header {
  bytes: number;
  tensors: Record<string, { shape: number[]; data_offsets: [number, number] }>;
}

function readHeader(path: string): Header {
  const fd = openSync(path, 'r');
  try {
    const n = Number(readAt(fd, 0, 8).readBigUInt64LE());
    return { bytes: 8 + n, tensors: JSON.parse(readAt(fd, 8, n).toString('utf8')) };
  } finally {
    closeSync(fd);
  }
}

/** Copies bytes [offset, offset + length) of src to the same offset of dst, in 4 MiB pieces. */
function copyRange(src: number, dst: number, offset: number, length: number): void {
  for (let at = offset; at < offset + length; at += 4 << 20) {
    const n = Math.min(4 << 20, offset + length - at);
    writeAt(dst, readAt(src, at, n), at);
  }
}

export function writeSparseCopy(srcDir: string, dstDir: string, o: SparseCopyOptions): SparseCopy {
  const indexText = readFileSync(join(srcDir, INDEX));
  const weightMap = (JSON.parse(indexText.toString('utf8')) as { weight_map: Record<string, string> }).weight_map;
  const tables: CopiedTable[] = [];
  const shardBytes = new Map<string, { bytes: number; headerBytes: number }>();
  const fds = new Map<string, { src: number; dst: number }>();
  for (const r of o.ranges) {
    const name = `layers.${r.layer}.engram.embed`;
    const shard = weightMap[`${name}.weight`];
    if (weightMap[`${name}.scale`] !== shard) throw new Error(`layer ${r.layer}: weight and scale in different shards`);
    const h = readHeader(join(srcDir, shard));
    const [rows, dim] = h.tensors[`${name}.weight`].shape;
    const table = {
      layer: r.layer,
      rows,
      dim,
      shard,
      weightOffset: h.bytes + h.tensors[`${name}.weight`].data_offsets[0],
      scaleOffset: h.bytes + h.tensors[`${name}.scale`].data_offsets[0],
    };
    tables.push(table);
    if (!fds.has(shard)) {
      const src = openSync(join(srcDir, shard), 'r');
      const dst = openSync(join(dstDir, shard), 'wx');
      const bytes = fstatSync(src).size;
      ftruncateSync(dst, bytes);
      copyRange(src, dst, 0, h.bytes);
      fds.set(shard, { src, dst });
      shardBytes.set(shard, { bytes, headerBytes: h.bytes });
    }
    const { src, dst } = fds.get(shard)!;
    const skip = o.skipWeightRows?.layer === r.layer ? o.skipWeightRows : undefined;
    const pieces: [number, number][] = skip ? [[r.start, skip.from], [skip.to, r.end]] : [[r.start, r.end]];
    for (const [a, b] of pieces) copyRange(src, dst, table.weightOffset + a * dim, (b - a) * dim);
    copyRange(src, dst, table.scaleOffset + r.start * (dim / 32), (r.end - r.start) * (dim / 32));
  }
  for (const { src, dst } of fds.values()) {
    closeSync(src);
    closeSync(dst);
  }
  writeFileSync(join(dstDir, INDEX), indexText, { flag: 'wx' });

  const layers: Record<string, [number, number]> = {};
  for (const r of o.ranges) layers[String(r.layer)] = [r.start, r.end];
  const manifest: Record<string, unknown> = {
    source: srcDir,
    layers,
    quant: 'fp8',
    created: '2026-01-01T00:00:00Z',
    note: 'sparse copy: only these rows exist; tools/engram_local.py',
  };
  if (o.flavour === 'spark') manifest.spark = sparkKey(srcDir, dstDir, o, tables, shardBytes, indexText);
  writeFileSync(join(dstDir, 'engram-local.json'), JSON.stringify(manifest, null, 1), { flag: 'wx' });
  return { dir: dstDir, manifest, tables, shards: [...fds.keys()] };
}

function sparkKey(
  srcDir: string,
  dstDir: string,
  o: SparseCopyOptions,
  tables: CopiedTable[],
  shardBytes: Map<string, { bytes: number; headerBytes: number }>,
  indexText: Buffer,
): Record<string, unknown> {
  const chunkRows = o.chunkRows ?? 1000;
  const shards = [...shardBytes].map(([name, s]) => {
    const fd = openSync(join(dstDir, name), 'r');
    try {
      return { name, bytes: s.bytes, headerBytes: s.headerBytes, headerCrc32: hex(crc32(readAt(fd, 0, s.headerBytes))) };
    } finally {
      closeSync(fd);
    }
  });
  const checksummed = tables.map((t, i) => {
    const r = o.ranges[i];
    const fd = openSync(join(dstDir, t.shard), 'r');
    const values: string[] = [];
    try {
      for (let a = r.start; a < r.end; a += chunkRows) {
        const n = Math.min(chunkRows, r.end - a);
        const w = crc32(readAt(fd, t.weightOffset + a * t.dim, n * t.dim));
        values.push(hex(crc32(readAt(fd, t.scaleOffset + a * (t.dim / 32), n * (t.dim / 32)), w)));
      }
    } finally {
      closeSync(fd);
    }
    return { ...t, checksum: { algorithm: 'crc32', chunkRows, values } };
  });
  return {
    format: 'spark-engram-sparse',
    version: 1,
    rank: o.rank ?? 0,
    world: o.world ?? 1,
    split: o.split ?? 'floor',
    source: {
      snapshot: srcDir,
      files: shards.map((s) => ({ name: s.name, bytes: s.bytes, mtimeMs: statSync(join(srcDir, s.name)).mtimeMs })),
    },
    index: { name: INDEX, bytes: indexText.length, crc32: hex(crc32(indexText)) },
    shards,
    tables: checksummed,
  };
}

/** Rank r of W's floor range of a table of n rows (SGLang's rule). */
export function floorRange(layer: number, rows: number, rank: number, world: number): CopyRange {
  return { layer, start: Math.floor((rows * rank) / world), end: Math.floor((rows * (rank + 1)) / world) };
}
