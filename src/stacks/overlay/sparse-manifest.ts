// `engram-local.json` of a sparse copy: the serving overlay's manifest (docs/serving-stacks.md,
// stack A), plus spark's own metadata under ONE extra key, `spark`.
//
// What the overlay reads: `layers`, an object of "L": [lo, hi] (half-open global rows), which
// must be non-empty; `source`, `quant`, `created` and `note` are informational and any other
// key is ignored. A copy made by the overlay's own tools has no `spark` key: it is read as a
// sparse copy without checksums.
//
// spark's key (format "spark-engram-sparse", version 1):
//   rank, world, split        which rank's rows these are
//   source                    the snapshot copied from: path, revision?, files [{name, bytes, mtimeMs,
//                             ino, ctimeMs, headerBytes, headerCrc32}] (manifest-fields.ts)
//   index                     {name, bytes, crc32} of the index copied verbatim
//   shards                    [{name, bytes, headerBytes, headerCrc32}]: every shard file of the
//                             copy, its apparent size and its copied header (8 + N bytes)
//   tables                    [{layer, rows, dim, shard, weightOffset, scaleOffset, checksum}]
//                             weightOffset/scaleOffset are absolute file offsets of row 0;
//                             checksum {algorithm: "crc32", chunkRows, values}: values[k] is the
//                             CRC-32 of the weight bytes of rows [lo + k*chunkRows, min(lo +
//                             (k+1)*chunkRows, hi)) followed by the scale bytes of the same rows.
import {
  arr,
  bad,
  formatAndVersion,
  hex8,
  int,
  manifestObject,
  obj,
  plainName,
  rankWorldSplit,
  sourceFiles,
  str,
  type RecordedSourceFile,
} from '../../engram/manifest-fields.js';
import type { SplitRule } from '../../domain/split-rule.js';

export const SPARSE_MANIFEST_NAME = 'engram-local.json';
export const SPARSE_FORMAT = 'spark-engram-sparse';
export const SPARSE_VERSION = 1;
export const SPARSE_CHECKSUM_ALGORITHM = 'crc32';

export interface SparseRange {
  layer: number;
  /** Global ids [start, end) present in the copy. */
  start: number;
  end: number;
}

export interface SparseShard {
  name: string;
  /** Apparent size: the source shard's size. */
  bytes: number;
  /** 8 + the safetensors header length: the bytes copied verbatim at offset 0. */
  headerBytes: number;
  headerCrc32: string;
}

export interface SparseTable {
  layer: number;
  /** The whole table's row count N. */
  rows: number;
  /** Weight bytes per row (D); scale bytes per row are D / 32. */
  dim: number;
  shard: string;
  weightOffset: number;
  scaleOffset: number;
  checksum: { algorithm: string; chunkRows: number; values: string[] };
}

export interface SparkSparseMeta {
  format: typeof SPARSE_FORMAT;
  version: typeof SPARSE_VERSION;
  rank: number;
  world: number;
  split: SplitRule;
  source: { snapshot: string; revision?: string; files: RecordedSourceFile[] };
  index: { name: string; bytes: number; crc32: string };
  shards: SparseShard[];
  tables: SparseTable[];
}

export interface SparseManifest {
  /** Ascending by layer, unique. */
  layers: SparseRange[];
  source?: string;
  quant?: string;
  created?: string;
  note?: string;
  /** Absent when the copy was made by another tool (the overlay's engram_local.py). */
  spark?: SparkSparseMeta;
}

/** True when a parsed engram-local.json has the overlay's `layers` object (a sparse copy). */
export function hasSparseLayers(doc: unknown): boolean {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return false;
  const layers = (doc as Record<string, unknown>).layers;
  return typeof layers === 'object' && layers !== null && !Array.isArray(layers);
}

/** The manifest as written: the overlay's keys first, spark's key last. */
export function sparseManifestText(m: SparseManifest): string {
  const layers: Record<string, [number, number]> = {};
  for (const r of m.layers) layers[String(r.layer)] = [r.start, r.end];
  const doc: Record<string, unknown> = {
    source: m.source ?? '',
    layers,
    quant: m.quant ?? 'fp8',
    created: m.created ?? new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
    note: m.note ?? 'sparse copy: only these rows exist; spark pack',
  };
  if (m.spark) doc.spark = m.spark;
  return JSON.stringify(doc, null, 1) + '\n';
}

/** Parses a sparse copy's manifest: the overlay's rules for `layers`, strict rules for `spark`. */
export function parseSparseManifest(text: string, path = SPARSE_MANIFEST_NAME): SparseManifest {
  const m = manifestObject(path, text);
  const layersObj = obj(path, 'layers', m.layers);
  const layers: SparseRange[] = [];
  for (const [key, span] of Object.entries(layersObj)) {
    if (!/^(0|[1-9]\d{0,8})$/.test(key))
      throw bad(path, `layers.${key}`, 'must be keyed by a layer number ("1", "14")');
    if (!Array.isArray(span) || span.length !== 2) throw bad(path, `layers.${key}`, 'must be [lo, hi]');
    const start = int(path, `layers.${key}[0]`, span[0], 0);
    const end = int(path, `layers.${key}[1]`, span[1], 0);
    if (start > end) throw bad(path, `layers.${key}`, `[${start}, ${end}) has lo > hi`);
    layers.push({ layer: Number(key), start, end });
  }
  if (layers.length === 0) throw bad(path, 'layers', 'is empty: the overlay needs at least one "L": [lo, hi]');
  layers.sort((a, b) => a.layer - b.layer);
  const out: SparseManifest = { layers };
  for (const k of ['source', 'quant', 'created', 'note'] as const) {
    if (typeof m[k] === 'string') out[k] = m[k];
  }
  if (m.spark !== undefined) out.spark = parseSparkMeta(path, m.spark, layers);
  return out;
}

function parseSparkMeta(path: string, value: unknown, layers: SparseRange[]): SparkSparseMeta {
  const s = obj(path, 'spark', value);
  formatAndVersion(path, 'spark.', s, SPARSE_FORMAT, SPARSE_VERSION);
  const { rank, world, split } = rankWorldSplit(path, 'spark.', s);
  const src = obj(path, 'spark.source', s.source);
  const files = sourceFiles(path, 'spark.source.files', src.files);
  const source: SparkSparseMeta['source'] = { snapshot: str(path, 'spark.source.snapshot', src.snapshot), files };
  if (src.revision !== undefined) source.revision = str(path, 'spark.source.revision', src.revision);
  const ix = obj(path, 'spark.index', s.index);
  const index = {
    name: plainName(path, 'spark.index.name', ix.name),
    bytes: int(path, 'spark.index.bytes', ix.bytes, 0),
    crc32: hex8(path, 'spark.index.crc32', ix.crc32),
  };
  const shards = arr(path, 'spark.shards', s.shards).map((v, i) => {
    const key = `spark.shards[${i}]`;
    const o = obj(path, key, v);
    const bytes = int(path, `${key}.bytes`, o.bytes, 8);
    const headerBytes = int(path, `${key}.headerBytes`, o.headerBytes, 8);
    if (headerBytes > bytes) throw bad(path, `${key}.headerBytes`, `${headerBytes} is past the shard's ${bytes} bytes`);
    return {
      name: plainName(path, `${key}.name`, o.name),
      bytes,
      headerBytes,
      headerCrc32: hex8(path, `${key}.headerCrc32`, o.headerCrc32),
    };
  });
  const tables = arr(path, 'spark.tables', s.tables).map((v, i) => parseTable(path, `spark.tables[${i}]`, v, shards));
  const covered = tables.map((t) => t.layer).join(',');
  if (covered !== layers.map((l) => l.layer).join(',')) {
    throw bad(
      path,
      'spark.tables',
      `describe layers [${covered}] but layers names [${layers.map((l) => l.layer).join(',')}] (ascending, one each)`,
    );
  }
  tables.forEach((t, i) => {
    const r = layers[i];
    if (r.end > t.rows)
      throw bad(path, `layers.${r.layer}`, `[${r.start}, ${r.end}) is not inside the table [0, ${t.rows})`);
    const chunks = Math.ceil((r.end - r.start) / t.checksum.chunkRows);
    if (t.checksum.values.length !== chunks) {
      throw bad(
        path,
        `spark.tables[${i}].checksum.values`,
        `has ${t.checksum.values.length} entries; ${r.end - r.start} rows in chunks of ${t.checksum.chunkRows} need ${chunks}`,
      );
    }
  });
  return { format: SPARSE_FORMAT, version: SPARSE_VERSION, rank, world, split, source, index, shards, tables };
}

function parseTable(path: string, key: string, value: unknown, shards: SparseShard[]): SparseTable {
  const o = obj(path, key, value);
  const layer = int(path, `${key}.layer`, o.layer, 0);
  const rows = int(path, `${key}.rows`, o.rows, 1);
  const dim = int(path, `${key}.dim`, o.dim, 32);
  if (dim % 32 !== 0) throw bad(path, `${key}.dim`, `${dim} is not a multiple of 32`);
  const shard = plainName(path, `${key}.shard`, o.shard);
  const file = shards.find((s) => s.name === shard);
  if (!file) throw bad(path, `${key}.shard`, `'${shard}' is not among spark.shards`);
  const weightOffset = int(path, `${key}.weightOffset`, o.weightOffset, 8);
  const scaleOffset = int(path, `${key}.scaleOffset`, o.scaleOffset, 8);
  if (weightOffset + rows * dim > file.bytes || scaleOffset + rows * (dim / 32) > file.bytes) {
    throw bad(path, key, `the table's ${rows} rows do not fit in ${shard} (${file.bytes} bytes)`);
  }
  const c = obj(path, `${key}.checksum`, o.checksum);
  const algorithm = str(path, `${key}.checksum.algorithm`, c.algorithm);
  if (algorithm !== SPARSE_CHECKSUM_ALGORITHM)
    throw bad(path, `${key}.checksum.algorithm`, `must be "${SPARSE_CHECKSUM_ALGORITHM}"`);
  const chunkRows = int(path, `${key}.checksum.chunkRows`, c.chunkRows, 1);
  const values = arr(path, `${key}.checksum.values`, c.values).map((v, i) =>
    hex8(path, `${key}.checksum.values[${i}]`, v),
  );
  return { layer, rows, dim, shard, weightOffset, scaleOffset, checksum: { algorithm, chunkRows, values } };
}
