// Sparse node-local copies for tests, written independently of spark's packer, laid out the
// way the serving overlay's engram_local.py lays one out (docs/serving-stacks.md, stack A): the
// index, only the shards holding the copied Engram tables, each with its full apparent size
// (ftruncate) and its header bytes, the rank's weight and scale rows at their original
// offsets, holes elsewhere; engram-local.json {source, layers, quant, created, note}. The
// spark flavour adds the `spark` key of src/stacks/overlay/sparse-manifest.ts, with checksums
// computed here (CRC-32 of a chunk's weight rows followed by its scale rows). Two ways in:
//   writeSparseCopy(src, dst, o)    rows copied from a snapshot directory
//   writeSyntheticCopy(dir, spec)   the tables written from scratch (writeTablesDir), rows only
//                                   at the range ends: enough for everything that reads ranges
// Headers are parsed here with JSON.parse, not with spark's reader.
import {
  closeSync,
  fstatSync,
  ftruncateSync,
  openSync,
  readFileSync,
  readSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import type { SparseTable } from '../../src/stacks/overlay/sparse-manifest.js';
import { writeSparseShard, type ShardTable } from './engram-files.js';

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
    const pieces: [number, number][] = skip
      ? [
          [r.start, skip.from],
          [skip.to, r.end],
        ]
      : [[r.start, r.end]];
    for (const [a, b] of pieces) copyRange(src, dst, table.weightOffset + a * dim, (b - a) * dim);
    copyRange(src, dst, table.scaleOffset + r.start * (dim / 32), (r.end - r.start) * (dim / 32));
  }
  for (const { src, dst } of fds.values()) {
    closeSync(src);
    closeSync(dst);
  }
  writeFileSync(join(dstDir, INDEX), indexText, { flag: 'wx' });
  const manifest = writeManifest({ srcDir, dstDir, tables, shardBytes, indexText }, o, { source: srcDir });
  return { dir: dstDir, manifest, tables, shards: [...fds.keys()] };
}

/** What was copied where: the tables, each shard's size and header bytes, the index text. */
interface Copied {
  srcDir: string;
  dstDir: string;
  tables: CopiedTable[];
  shardBytes: Map<string, { bytes: number; headerBytes: number }>;
  indexText: Buffer;
}

/** The overlay's top-level fields as a test wants them written. */
interface ManifestStyle {
  source: string;
  /** Extra top-level keys (they must be ignored). */
  extra?: Record<string, unknown>;
  /** JSON as written: spark's 1-space indent, or Python's json.dump on one line. */
  style?: 'pretty' | 'one-line';
}

/** engram-local.json of the copy in dstDir (written last, as the overlay's tool does). */
function writeManifest(c: Copied, o: SparseCopyOptions, m: ManifestStyle): Record<string, unknown> {
  const layers: Record<string, [number, number]> = {};
  for (const r of o.ranges) layers[String(r.layer)] = [r.start, r.end];
  const manifest: Record<string, unknown> = {
    source: m.source,
    layers,
    quant: 'fp8',
    created: '2026-01-01T00:00:00Z',
    note: 'sparse copy: "layers": {"1": [0, 1]} \\ only these rows exist; tools/engram_local.py',
    ...m.extra,
  };
  if (o.flavour === 'spark') manifest.spark = sparkKey(c, o);
  const text =
    m.style === 'one-line'
      ? JSON.stringify(manifest).replace(/,"/g, ', "').replace(/":/g, '": ')
      : JSON.stringify(manifest, null, 1) + '\n';
  writeFileSync(join(c.dstDir, 'engram-local.json'), text, { flag: 'wx' });
  return manifest;
}

function sparkKey(
  { srcDir, dstDir, tables, shardBytes, indexText }: Copied,
  o: SparseCopyOptions,
): Record<string, unknown> {
  const chunkRows = o.chunkRows ?? 1000;
  const shards = [...shardBytes].map(([name, s]) => {
    const fd = openSync(join(dstDir, name), 'r');
    try {
      return {
        name,
        bytes: s.bytes,
        headerBytes: s.headerBytes,
        headerCrc32: hex(crc32(readAt(fd, 0, s.headerBytes))),
      };
    } finally {
      closeSync(fd);
    }
  });
  const checksummed = tables.map((t) => {
    const r = o.ranges.find((x) => x.layer === t.layer)!;
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
    tables: checksummed.sort((a, b) => a.layer - b.layer),
  };
}

/** Rank r of W's floor range of a table of n rows (SGLang's rule). */
export function floorRange(layer: number, rows: number, rank: number, world: number): CopyRange {
  return { layer, start: Math.floor((rows * rank) / world), end: Math.floor((rows * (rank + 1)) / world) };
}

export const COPY_SHARD = 'model-00001-of-00001.safetensors';

export interface SyntheticCopySpec {
  tables: ShardTable[];
  /** The copy's ranges, in the order written to `layers` (the overlay's tool may write any order). */
  ranges: CopyRange[];
  /** spark's key; absent: a copy made by the overlay's engram_local.py. */
  spark?: { rank: number; world: number; split: 'floor' | 'front' | 'heads' };
  style?: ManifestStyle['style'];
  extra?: ManifestStyle['extra'];
}

/** A snapshot directory (index + one shard) holding `tables`, rows written only at range ends. */
export function writeTablesDir(dir: string, tables: ShardTable[], ranges: CopyRange[] = []) {
  const ids = new Map<number, number[]>();
  for (const r of ranges) if (r.end > r.start) ids.set(r.layer, [r.start, r.end - 1]);
  const shard = writeSparseShard(join(dir, COPY_SHARD), tables, ids);
  const weightMap: Record<string, string> = {};
  for (const t of tables) {
    weightMap[`layers.${t.layer}.engram.embed.weight`] = COPY_SHARD;
    weightMap[`layers.${t.layer}.engram.embed.scale`] = COPY_SHARD;
  }
  writeFileSync(join(dir, INDEX), JSON.stringify({ metadata: { total_size: 0 }, weight_map: weightMap }));
  return shard;
}

/** A copy written in place in `dir`: index, shard, then engram-local.json. */
export function writeSyntheticCopy(dir: string, spec: SyntheticCopySpec): void {
  const shard = writeTablesDir(dir, spec.tables, spec.ranges);
  const tables = shard.tables
    .filter((t) => spec.ranges.some((r) => r.layer === t.layer))
    .map((t) => ({ ...t, shard: COPY_SHARD }));
  const o: SparseCopyOptions = {
    flavour: spec.spark ? 'spark' : 'overlay',
    ranges: spec.ranges,
    chunkRows: 64,
    ...spec.spark,
  };
  const shards = new Map([[COPY_SHARD, { bytes: statSync(shard.path).size, headerBytes: shard.dataStart }]]);
  const source = '/models/dsv41 "the NAS", rank: 9 of 9 {not: [a key]}';
  const copied = { srcDir: dir, dstDir: dir, tables, shardBytes: shards, indexText: readFileSync(join(dir, INDEX)) };
  writeManifest(copied, o, { source, extra: spec.extra, style: spec.style });
}
