// Sparse copies as the overlay reads them, written at test time: an index, one shard holding
// every Engram table (sparse file, real header, rows only at the range ends) and an
// engram-local.json with the overlay's `layers` object, with or without spark's key. Enough
// for everything that reads ranges; the packer's own tests check the row bytes.
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeSparseShard, type ShardTable } from './engram-files.js';

export const COPY_SHARD = 'model-00001-of-00001.safetensors';

export interface SparseCopySpec {
  tables: ShardTable[];
  /** The copy's ranges, in the order written to `layers` (the overlay's tool may write any order). */
  ranges: { layer: number; start: number; end: number }[];
  /** spark's key; absent: a copy made by the overlay's engram_local.py. */
  spark?: { rank: number; world: number; split: 'floor' | 'front' | 'heads' };
  /** JSON as written: spark's 1-space indent, or Python's json.dump on one line. */
  style?: 'pretty' | 'one-line';
  /** Extra top-level keys (they must be ignored). */
  extra?: Record<string, unknown>;
}

/** A snapshot directory (index + one shard) holding `tables`, rows written only at range ends. */
export function writeTablesDir(dir: string, tables: ShardTable[], ranges: SparseCopySpec['ranges'] = []) {
  const ids = new Map<number, number[]>();
  for (const r of ranges) if (r.end > r.start) ids.set(r.layer, [r.start, r.end - 1]);
  const shard = writeSparseShard(join(dir, COPY_SHARD), tables, ids);
  const weightMap: Record<string, string> = {};
  for (const t of tables) {
    weightMap[`layers.${t.layer}.engram.embed.weight`] = COPY_SHARD;
    weightMap[`layers.${t.layer}.engram.embed.scale`] = COPY_SHARD;
  }
  writeFileSync(join(dir, 'model.safetensors.index.json'), JSON.stringify({ metadata: { total_size: 0 }, weight_map: weightMap }));
  return shard;
}

/** The manifest text of a sparse copy. */
export function sparseManifest(spec: SparseCopySpec, shard?: ReturnType<typeof writeTablesDir>, shardBytes = 0): string {
  const layers: Record<string, [number, number]> = {};
  for (const r of spec.ranges) layers[String(r.layer)] = [r.start, r.end];
  const doc: Record<string, unknown> = {
    source: '/models/dsv41 "the NAS", rank: 9 of 9 {not: [a key]}',
    layers,
    quant: 'fp8',
    created: '2026-12-01T00:00:00Z',
    note: 'sparse copy: "layers": {"1": [0, 1]} \\ only these rows exist',
    ...spec.extra,
  };
  if (spec.spark) {
    const chunkRows = 64;
    doc.spark = {
      format: 'spark-engram-sparse',
      version: 1,
      ...spec.spark,
      source: { snapshot: '/models/dsv41', files: [{ name: COPY_SHARD, bytes: shardBytes, mtimeMs: 1 }] },
      index: { name: 'model.safetensors.index.json', bytes: 100, crc32: '00000000' },
      shards: [{ name: COPY_SHARD, bytes: shardBytes, headerBytes: shard?.dataStart ?? 8, headerCrc32: '00000000' }],
      tables: spec.ranges
        .map((r) => {
          const t = shard!.tables.find((x) => x.layer === r.layer)!;
          const values = Array.from({ length: Math.ceil((r.end - r.start) / chunkRows) }, () => '00000000');
          return { layer: r.layer, rows: t.rows, dim: t.dim, shard: COPY_SHARD, weightOffset: t.weightOffset, scaleOffset: t.scaleOffset, checksum: { algorithm: 'crc32', chunkRows, values } };
        })
        .sort((a, b) => a.layer - b.layer),
    };
  }
  return spec.style === 'one-line' ? JSON.stringify(doc).replace(/,"/g, ', "').replace(/":/g, '": ') : JSON.stringify(doc, null, 1) + '\n';
}

/** A sparse copy in `dir`: index, shard, then engram-local.json (written last). */
export function writeSparseCopy(dir: string, spec: SparseCopySpec): void {
  const shard = writeTablesDir(dir, spec.tables, spec.ranges);
  writeFileSync(join(dir, 'engram-local.json'), sparseManifest(spec, shard, statSync(shard.path).size));
}
