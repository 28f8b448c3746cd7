// The plan of the sparse layout: the serving overlay's sparse copy (docs/serving-stacks.md,
// stack A). For every shard holding an Engram layer's weight and scale, a file of the same
// name and apparent size with the header bytes copied verbatim and this rank's rows at their
// original offsets (holes elsewhere); the index copied verbatim; then engram-local.json, the
// overlay's manifest with spark's metadata under one key (stacks/overlay/sparse-manifest.ts).
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { SparkError } from '../../errors/errors.js';
import { crc32, packSparseShard } from '../../addon/pack.js';
import {
  checksumHex,
  fileInfo,
  recordedChange,
  sourceFileEntry,
  sourceKey,
  type SourceIdentity,
} from '../../pack/pack-io.js';
import {
  recordedOrigin,
  type LayoutPlan,
  type PackDifference,
  type PackRequest,
  type PackUnit,
  type PlannedRange,
} from '../pack-plan.js';
import { blockSpan } from '../../pack/pack-space.js';
import { INDEX_FILE } from '../../engram/snapshot.js';
import {
  SPARSE_CHECKSUM_ALGORITHM,
  SPARSE_FORMAT,
  SPARSE_MANIFEST_NAME,
  SPARSE_VERSION,
  sparseManifestText,
  type SparkSparseMeta,
} from './sparse-manifest.js';

/** Default rows per checksum chunk: 16 MiB of weight rows (65536 rows of 256 bytes). */
export function defaultSparseChunkRows(dim: number): number {
  return Math.max(1, Math.floor((16 << 20) / dim));
}

interface ShardPlan {
  name: string;
  file: string;
  tables: (PlannedRange & { chunkRows: number; chunks: number })[];
}

/** Engram tables grouped by the shard holding them, each table's weight and scale in one. */
function shardsOf(req: PackRequest, ranges: PlannedRange[]): ShardPlan[] {
  const shards = new Map<string, ShardPlan>();
  for (const p of ranges) {
    const { weight, scale, layer } = p.table;
    if (weight.fileName !== scale.fileName) {
      throw new SparkError(
        'E_SNAPSHOT',
        `layer ${layer}: its weight is in ${weight.fileName} and its scale in ${scale.fileName}; the overlay reads both ` +
          'from one shard, so the sparse layout cannot copy this snapshot: use --layout dense',
        { path: req.snapshotDir },
      );
    }
    if (/[\\/]/.test(weight.fileName)) {
      throw new SparkError(
        'E_SNAPSHOT',
        `layer ${layer}: its shard '${weight.fileName}' is in a subdirectory, which a sparse copy cannot mirror: use --layout dense`,
        {
          path: req.snapshotDir,
        },
      );
    }
    const chunkRows = req.chunkRows ?? defaultSparseChunkRows(p.table.dim);
    const chunks = Math.ceil((p.range.end - p.range.start) / chunkRows);
    const shard = shards.get(weight.fileName) ?? { name: weight.fileName, file: weight.file, tables: [] };
    shard.tables.push({ ...p, chunkRows, chunks });
    shards.set(shard.name, shard);
  }
  return [...shards.values()];
}

/** What every part of one sparse plan reads: the request, the ranges and the source files. */
interface SparseContext {
  req: PackRequest;
  ranges: PlannedRange[];
  shards: ShardPlan[];
  /** A source file's identity by name. */
  id: (name: string) => SourceIdentity;
  index: SourceIdentity;
}

const rowBytes = (t: PlannedRange): number => (t.range.end - t.range.start) * (t.table.dim + t.table.dim / 32);

export function planSparse(req: PackRequest, ranges: PlannedRange[], sources: SourceIdentity[]): LayoutPlan {
  if (req.index === undefined) {
    throw new SparkError(
      'E_SNAPSHOT',
      `${req.snapshotDir} has no ${INDEX_FILE}: the sparse layout copies it (the overlay reads it); use --layout dense`,
      { path: req.snapshotDir },
    );
  }
  const shards = shardsOf(req, ranges);
  const id = (name: string): SourceIdentity => sources.find((s) => s.name === name)!;
  const index = id(INDEX_FILE);
  const ctx: SparseContext = { req, ranges, shards, id, index };
  const units = sparseUnits(ctx);
  const headers = shards.reduce((s, sh) => s + id(sh.name).headerBytes, 0);
  const rows = units.reduce((s, u) => s + u.bytes, 0);
  return {
    manifestName: SPARSE_MANIFEST_NAME,
    files: [...shards.map((s) => s.name), INDEX_FILE],
    layers: sparseLayers(shards),
    bytes: headers + rows + index.bytes,
    apparentBytes: shards.reduce((s, sh) => s + id(sh.name).bytes, 0),
    needsHoles: true,
    shardHeaders: new Map(),
    wholeFiles: [{ name: INDEX_FILE, bytes: index.bytes, crc: index.crc }],
    units,
    difference: (existing) => sparseDifference(ctx, existing),
    space: (block) => sparseSpace(ctx, block),
    finish(dir, results) {
      // The index, verbatim, checked against the checksum taken when the pack began.
      const bytes = readFileSync(index.file);
      if (crc32(bytes) !== index.crc) {
        throw new SparkError(
          'E_SOURCE_CHANGED',
          `${index.file} changed while it was being packed; no manifest was written; re-run spark pack`,
          { path: index.file },
        );
      }
      dir.writeFile(INDEX_FILE, bytes);
      return this.manifestText(results.map((r) => r.checksums));
    },
    manifestText: (checksums) => sparseManifest(ctx, checksums),
  };
}

/** One unit per shard: its header and this rank's rows of each table in it, copied natively. */
function sparseUnits({ shards, id }: SparseContext): PackUnit[] {
  return shards.map((shard) => {
    const src = id(shard.name);
    const tables = shard.tables.map((t) => ({
      weightOffset: t.table.weight.fileOffset,
      scaleOffset: t.table.scale.fileOffset,
      dim: t.table.dim,
      start: t.range.start,
      end: t.range.end,
      chunkRows: t.chunkRows,
    }));
    return {
      file: shard.name,
      label: `shard ${shard.name}`,
      layers: shard.tables.map((t) => t.range.layer),
      bytes: shard.tables.reduce((s, t) => s + rowBytes(t), 0),
      start: (c) =>
        packSparseShard({
          ...c, // dir, threads and the tuning pack.ts chose, passed through as they are
          name: shard.name,
          key: JSON.stringify({ format: SPARSE_FORMAT, version: SPARSE_VERSION, source: sourceKey(src), tables }),
          sourcePath: shard.file,
          sourceBytes: src.bytes,
          headerBytes: src.headerBytes,
          headerCrc: src.crc,
          tables,
        }),
    };
  });
}

function sparseLayers(shards: ShardPlan[]): LayoutPlan['layers'] {
  return shards
    .flatMap((s) =>
      s.tables.map((t) => ({
        layer: t.range.layer,
        file: s.name,
        start: t.range.start,
        end: t.range.end,
        bytes: rowBytes(t),
        chunks: t.chunks,
      })),
    )
    .sort((a, b) => a.layer - b.layer);
}

/** spark's metadata in the overlay's manifest, checksums still empty. */
function sparseMeta({ req, shards, id, index }: SparseContext): SparkSparseMeta {
  return {
    format: SPARSE_FORMAT,
    version: SPARSE_VERSION,
    ...recordedOrigin(
      req,
      shards.map((s) => sourceFileEntry(id(s.name))),
    ),
    index: { name: INDEX_FILE, bytes: index.bytes, crc32: checksumHex(index.crc) },
    shards: shards.map((s) => ({
      name: s.name,
      bytes: id(s.name).bytes,
      headerBytes: id(s.name).headerBytes,
      headerCrc32: checksumHex(id(s.name).crc),
    })),
    tables: shards
      .flatMap((s) =>
        s.tables.map((t) => ({
          layer: t.range.layer,
          rows: t.table.rows,
          dim: t.table.dim,
          shard: s.name,
          weightOffset: t.table.weight.fileOffset,
          scaleOffset: t.table.scale.fileOffset,
          checksum: { algorithm: SPARSE_CHECKSUM_ALGORITHM, chunkRows: t.chunkRows, values: [] as string[] },
        })),
      )
      .sort((a, b) => a.layer - b.layer),
  };
}

/** What an existing copy in the target directory is to this plan: the same, stale, or another copy. */
async function sparseDifference(
  { req, ranges, shards, id, index }: SparseContext,
  existing: Parameters<LayoutPlan['difference']>[0],
): Promise<PackDifference> {
  const conflict = (why: string) => ({ kind: 'conflict' as const, why });
  // Shards without a manifest (local-dir.ts): an interrupted pack's, or the Mia stack's own.
  if (!('manifest' in existing)) return { kind: 'stale', why: 'it holds shards without spark-pack.json' };
  if (existing.kind !== 'sparse') return conflict(`it is a ${existing.manifest.layers[0]?.layout ?? 'dense'} pack`);
  const m = existing.manifest;
  const s = m.spark;
  if (!s) return conflict('it is a sparse copy made by another tool (no spark metadata to check it against)');
  if (s.rank !== req.rank || s.world !== req.world) return conflict(`it is rank ${s.rank} of ${s.world}`);
  if (s.split !== req.split) return conflict(`it uses the ${s.split} split`);
  const want = ranges.map((r) => `${r.range.layer}:${r.range.start}:${r.range.end}`).join(',');
  const have = m.layers.map((l) => `${l.layer}:${l.start}:${l.end}`).join(',');
  if (want !== have) return conflict(`it holds rows ${have}, not ${want}`);
  for (const t of s.tables) {
    if (req.chunkRows !== undefined && t.checksum.chunkRows !== req.chunkRows)
      return conflict(`it uses ${t.checksum.chunkRows} rows per chunk`);
  }
  for (const sh of shards) {
    const src = id(sh.name);
    const old = s.shards.find((x) => x.name === sh.name);
    const file = s.source.files.find((f) => f.name === sh.name);
    const why =
      !old || !file
        ? 'not among the files it was copied from'
        : old.headerCrc32 !== checksumHex(src.crc)
          ? 'its header bytes changed'
          : recordedChange(file, src);
    if (why !== '') return conflict(`the snapshot file ${sh.name} changed since it was packed: ${why}`);
  }
  if (s.index.crc32 !== checksumHex(index.crc))
    return conflict(`the snapshot's ${INDEX_FILE} changed since it was packed`);
  for (const sh of s.shards) {
    const st = await fileInfo(join(existing.dir, sh.name));
    if (!st || st.size !== sh.bytes)
      return { kind: 'stale', why: `its shard ${sh.name} is missing or has another size` };
  }
  const ix = await fileInfo(join(existing.dir, INDEX_FILE));
  if (!ix || ix.size !== s.index.bytes)
    return { kind: 'stale', why: `its ${INDEX_FILE} is missing or has another size` };
  return { kind: 'same' };
}

/** Allocated bytes per shard (its header and each table's rows, block-rounded) and the rest written. */
function sparseSpace({ shards, id, index }: SparseContext, block: number): ReturnType<LayoutPlan['space']> {
  const need = shards.map((sh) => ({
    file: sh.name,
    bytes:
      blockSpan(0, id(sh.name).headerBytes, block) +
      sh.tables.reduce((s, t) => {
        const sb = t.table.dim / 32;
        return (
          s +
          blockSpan(
            t.table.weight.fileOffset + t.range.start * t.table.dim,
            (t.range.end - t.range.start) * t.table.dim,
            block,
          ) +
          blockSpan(t.table.scale.fileOffset + t.range.start * sb, (t.range.end - t.range.start) * sb, block)
        );
      }, 0),
  }));
  const chunks = shards.reduce((s, sh) => s + sh.tables.reduce((a, t) => a + t.chunks, 0), 0);
  return { files: need, extra: blockSpan(0, index.bytes, block) + 65536 + 16 * chunks + 4096 * shards.length };
}

/** The overlay's manifest with spark's metadata, each shard's checksums back into per-table lists. */
function sparseManifest(ctx: SparseContext, checksums: number[][]): string {
  const { req, ranges, shards } = ctx;
  const values = shards.map((sh, si) => {
    let at = 0;
    return sh.tables.map((t) => {
      const v = checksums[si].slice(at, at + t.chunks).map(checksumHex);
      at += t.chunks;
      return v;
    });
  });
  const spark = sparseMeta(ctx);
  for (const t of spark.tables) {
    const si = shards.findIndex((s) => s.name === t.shard);
    const ti = shards[si].tables.findIndex((x) => x.range.layer === t.layer);
    t.checksum.values = values[si][ti];
  }
  return sparseManifestText({
    layers: ranges.map((r) => ({ layer: r.range.layer, start: r.range.start, end: r.range.end })),
    source: resolve(req.snapshotDir),
    quant: 'fp8',
    note: `sparse copy: only these rows exist; spark pack rank ${req.rank} of ${req.world} (${req.split} split)`,
    spark,
  });
}
