// What `spark pack` asks for and what a layout plans from it: the request, the summary it
// returns, and the plan each layout's room (packed/pack-packed.ts, overlay/pack-sparse.ts)
// hands the driver (pack-engram.ts), which owns what every layout shares: the directory, the
// lock, resume, space, the manifest.
import { SparkError, usageError } from '../errors/errors.js';
import { formatBytes } from '../terminal/format.js';
import { resolve } from 'node:path';
import { MAX_MANIFEST_BYTES, type RecordedSourceFile } from '../engram/manifest-fields.js';
import type {
  IoMode,
  NativeJob,
  PackDirectory,
  PackFileJob,
  PackLayerProgress,
  PackLayerResult,
} from '../addon/pack.js';
import type { LocalDir } from './local-dir.js';
import { INDEX_FILE } from '../engram/snapshot.js';
import type { SplitRule } from '../domain/split-rule.js';
import type { PackTable, SourceIdentity } from '../pack/pack-io.js';
import type { SpaceNeed } from '../pack/pack-space.js';

export interface PackRange {
  layer: number;
  start: number;
  end: number;
}

export interface PackRequest {
  snapshotDir: string;
  revision?: string;
  /** The snapshot's model.safetensors.index.json (absolute path); the sparse layout copies it. */
  index?: string;
  /** The Engram tables of the snapshot (at least those named by `ranges`). */
  tables: PackTable[];
  out: string;
  rank: number;
  world: number;
  split: SplitRule;
  /** This rank's rows per layer. */
  ranges: PackRange[];
  /** A layout's name (registry.ts). */
  layout: string;
  threads: number;
  /** Rows per checksum chunk; default ~16 MiB of rows. */
  chunkRows?: number;
  /** Refuse up front when the disk cannot hold the pack (default true). */
  checkSpace?: boolean;
  /** Replace a complete pack that differs from this request. */
  force?: boolean;
  /** Make progress durable (fdatasync + journal) after this many bytes (default 1 GiB) or 2 s. */
  syncBytes?: number;
  /** Read at most this many bytes per second from the snapshot (default: unlimited). */
  rateLimit?: number;
  /** Drop the snapshot's pages from the page cache behind the copy (default true). */
  dropSourceCache?: boolean;
  onProgress?: (p: PackProgressInfo) => void;
  /** Tests only. */
  testing?: {
    /** Make the hole probe allocate every byte, as a filesystem without holes does. */
    fillHoleProbe?: boolean;
    /** Writes after this many chunks (per file) fail with EIO. */
    faultAfterChunks?: number;
    /** Behave as a filesystem refusing O_DIRECT at open, or at the first write. */
    directRefusal?: 'open' | 'transfer';
  };
}

export interface PackProgressInfo {
  /** What is being written: "layer 14", "shard model-00048-of-00048.safetensors". */
  unit: string;
  unitIndex: number;
  unitCount: number;
  phase: PackLayerProgress['phase'];
  /** Over the whole pack. */
  bytesDone: number;
  bytesTotal: number;
  /** Bytes this run copied so far (kept chunks excluded): the rate's numerator. */
  bytesCopied: number;
  seconds: number;
}

/** The rows of one layer in the pack. */
export interface PackLayerSummary {
  layer: number;
  /** The file holding them. */
  file: string;
  start: number;
  end: number;
  /** Bytes of these rows (weight and scale). */
  bytes: number;
  chunks: number;
}

/** One data file and what this run did to it. */
export interface PackFileSummary {
  file: string;
  layers: number[];
  chunks: number;
  chunksKept: number;
  chunksRejected: number;
  chunksWritten: number;
  journalDiscarded: boolean;
  /** How this run read the snapshot and wrote the file: 'direct' (O_DIRECT), 'buffered', 'none' (nothing copied). */
  io: { read: IoMode; write: IoMode };
}

export interface PackSummary {
  out: string;
  manifest: string;
  rank: number;
  world: number;
  split: SplitRule;
  /** A layout's name (registry.ts). */
  layout: string;
  /** True when the directory already held this exact pack: nothing was done. */
  noop: boolean;
  /** True when an interrupted run's chunks were kept. */
  resumed: boolean;
  /** Bytes the pack holds: data files (dense, page); header, rows and index (sparse). */
  bytes: number;
  /** Sparse: the shards' apparent sizes (the source shards' sizes). */
  apparentBytes?: number;
  /** Data bytes written by this run. */
  bytesWritten: number;
  seconds: number;
  layers: PackLayerSummary[];
  files: PackFileSummary[];
  /** Over the files: 'buffered' if any moved bytes through the page cache, else 'direct' if any copied. */
  io: { read: IoMode; write: IoMode };
  /**
   * Files that were there before this run and are gone or replaced: a replaced pack's (once
   * this one's manifest landed), a wrong shard of spark's, and with --force another tool's
   * under the names this pack writes (pack-owner.ts).
   */
  removed: string[];
}

/**
 * same: the directory already holds this pack, complete. stale: it holds this pack, but not
 * whole (a file missing or cut, the first version's manifest name): written again without
 * asking. conflict: another pack (rank, world, split, layout, source): replaced only with --force.
 */
export type PackDifference = { kind: 'same' } | { kind: 'stale' | 'conflict'; why: string };

/**
 * What every native job of a pack shares. Each unit passes it into its job as it is, so it holds
 * only fields of the native job (and leaves out those not set).
 */
export type UnitCommon = Pick<
  PackFileJob,
  | 'dir'
  | 'threads'
  | 'rateLimit'
  | 'commitBytes'
  | 'dropSourceCache'
  | 'faultAfterChunks'
  | 'testDirectRefusal'
  | 'finishAsPartial'
>;

/** One data file of the plan and how to write it. */
export interface PackUnit {
  file: string;
  label: string;
  layers: number[];
  /** Data bytes it copies. */
  bytes: number;
  start(common: UnitCommon): NativeJob<PackLayerResult, PackLayerProgress>;
}

export interface LayoutPlan {
  manifestName: string;
  /** Every file of the finished pack (the manifest excluded). */
  files: string[];
  layers: PackLayerSummary[];
  bytes: number;
  apparentBytes?: number;
  /** Page layout: rows per page (chunks hold whole pages). */
  pageRows?: number;
  /** The sparse layout needs a filesystem that keeps holes. */
  needsHoles: boolean;
  units: PackUnit[];
  /**
   * The files this pack writes under the Mia stack's shard names, with their header blocks:
   * any other file under such a name (spark's, or replaced with --force) is removed before the
   * work begins (removeStrayShards).
   */
  shardHeaders: ReadonlyMap<string, Buffer>;
  /**
   * The small files written whole after the data files (the sparse copy's index), with the
   * size and CRC-32 of what is written: a file there holding exactly those bytes may be
   * written again (pack-owner.ts); any other is someone else's.
   */
  wholeFiles: readonly { name: string; bytes: number; crc: number }[];
  /** How an existing pack relates to this one. */
  difference(existing: Exclude<LocalDir, { kind: 'none' }>): Promise<PackDifference>;
  /** Allocated bytes of the finished files, and what else is written (manifest, journals, index). */
  space(block: number): { files: SpaceNeed[]; extra: number };
  /** After the data files: writes what else belongs to the pack and returns the manifest text. */
  finish(dir: PackDirectory, results: PackLayerResult[]): string;
  /** The manifest text for these per-unit chunk checksums (no side effect: its size is checked before copying). */
  manifestText(checksums: number[][]): string;
}

/** A layout's planner: the request, its checked ranges and the identities of the sources. */
export type Planner = (req: PackRequest, ranges: PlannedRange[], sources: SourceIdentity[]) => LayoutPlan;

export interface PlannedRange {
  range: PackRange;
  table: PackTable;
}

/** The snapshot files a pack of these ranges reads (and the index, for the sparse layout). */
export function sourceFiles(ranges: PlannedRange[], index?: string): { name: string; file: string }[] {
  const files = ranges
    .flatMap(({ table }) => [table.weight, table.scale])
    .map((t) => ({ name: t.fileName, file: t.file }));
  if (index !== undefined) files.push({ name: INDEX_FILE, file: index });
  return files;
}

/** The request's ranges in layer order, each checked against its table. */
export function plannedRanges(req: PackRequest): PlannedRange[] {
  const byLayer = new Map(req.tables.map((t) => [t.layer, t]));
  return [...req.ranges]
    .sort((a, b) => a.layer - b.layer)
    .map((range) => {
      const table = byLayer.get(range.layer);
      if (!table)
        throw new SparkError('E_ENGRAM_NOT_FOUND', `layer ${range.layer} has no Engram table in ${req.snapshotDir}`);
      if (!(range.start >= 0 && range.start <= range.end && range.end <= table.rows)) {
        throw new SparkError(
          'E_ROW_RANGE',
          `layer ${range.layer}: range [${range.start}, ${range.end}) is outside the table's ${table.rows} rows`,
        );
      }
      return { range, table };
    });
}

/** Chunks per unit of the plan, in unit order (a unit's layers' chunks, one after another). */
export function unitChunks(plan: Pick<LayoutPlan, 'units' | 'layers'>): number[] {
  return plan.units.map((u) => plan.layers.filter((l) => l.file === u.file).reduce((s, l) => s + l.chunks, 0));
}

/**
 * Refuses (exit 2), before anything is copied, a chunk size whose checksums would make the
 * manifest larger than every reader accepts (MAX_MANIFEST_BYTES): written after hours of
 * copying, such a copy would be refused by verify, the wrapper and a re-run alike.
 */
export function checkManifestSize(plan: LayoutPlan): void {
  const perUnit = unitChunks(plan);
  const chunks = perUnit.reduce((a, b) => a + b, 0);
  // A checksum takes at least 10 bytes ("xxxxxxxx" and a separator): past that the text is not built.
  const atLeast = chunks * 10 > MAX_MANIFEST_BYTES;
  const bytes = atLeast
    ? chunks * 10
    : Buffer.byteLength(plan.manifestText(perUnit.map((n) => new Array<number>(n).fill(0))));
  if (bytes <= MAX_MANIFEST_BYTES) return;
  const rows = plan.layers.reduce((s, l) => s + (l.end - l.start), 0);
  // Chunks shrink as chunkRows grows: aim at half the cap, in whole pages for the page layout.
  let suggest = Math.ceil(((rows / chunks) * bytes) / (MAX_MANIFEST_BYTES / 2));
  const perPage = plan.pageRows ?? 1;
  suggest = Math.ceil(suggest / perPage) * perPage;
  throw usageError(
    `--chunk-rows: ${chunks} checksum chunks for ${rows} rows would make the manifest ${atLeast ? 'at least ' : ''}${formatBytes(bytes)}, ` +
      `more than the ${formatBytes(MAX_MANIFEST_BYTES)} every reader of it accepts; use --chunk-rows ${suggest} or more, or leave it out (about 16 MiB of rows a chunk)`,
  );
}

/** What every manifest records of where its rows came from: the rank, the split, the source and its files. */
export function recordedOrigin(req: PackRequest, files: RecordedSourceFile[]) {
  const source = { snapshot: resolve(req.snapshotDir), ...(req.revision ? { revision: req.revision } : {}), files };
  return { rank: req.rank, world: req.world, split: req.split, source };
}
