// A row source: a snapshot, a sparse copy or a packed directory opened into a RowStore, told
// apart by their manifests (local-dir.ts):
//   packed    spark's dense/page layouts, or the Mia stack's own shards without a manifest
//             (mia-dir.ts; read like a dense pack): one read per row from the rank's data files;
//   sparse    the overlay's sparse copy (spark's or engram_local.py's): read like a snapshot,
//             from the copy's own index and shard headers (global ids, two columns), only the
//             manifest's range per layer; a hole inside that range is corruption;
//   snapshot  no manifest: two reads per row (one with resident scales). Holes where a table's
//             rows should be mean a sparse copy that lost its manifest: refused, never read as
//             zeros (except `spark synth --sparse` snapshots, whose config.json says so).
import { join } from 'node:path';
import { SparkError } from '../errors/errors.js';
import type { TableSpec } from '../domain/table-spec.js';
import { RowStore, type RowStoreOptions } from '../addon/row-store.js';
import { dimOfRowBytes, type PackedManifest } from './packed/packed-manifest.js';
import { openSnapshot } from '../engram/snapshot.js';
import type { SparseManifest } from './overlay/sparse-manifest.js';

/** What the row source needs of a snapshot (a structural subset of snapshot.ts's Snapshot). */
export interface SnapshotTensorLike {
  file: string;
  fileOffset: number;
}
export interface SnapshotTableLike {
  layer: number;
  rows: number;
  dim: number;
  rowBytes: number;
  weight: SnapshotTensorLike;
  scale: SnapshotTensorLike;
}
export interface SnapshotLike {
  dir: string;
  engram: SnapshotTableLike[];
  /** config.json as read (only `raw.spark_synth` is consulted here). */
  config?: { raw: Record<string, unknown> };
}
export type SnapshotOpener = (
  path: string,
  options: { engramOnly: boolean; weightPattern?: RegExp; scalePattern?: RegExp },
) => Promise<SnapshotLike>;

export interface RowSourceOptions extends RowStoreOptions {
  /** Only these layers (default: every Engram layer of the source). */
  layers?: number[];
  /** Snapshot: hold the scale rows resident, of `ranges` where given, else of the whole table. */
  residentScales?: boolean;
  /** This rank's [start, end) per layer (SPARK_ENGRAM_ROWS): bounds resident scales. */
  ranges?: Map<number, [number, number]>;
  /** Packed: O_DIRECT reads (page layout is 4 KiB aligned); falls back when refused. */
  direct?: boolean;
  weightPattern?: RegExp;
  scalePattern?: RegExp;
  /** How snapshots are opened (default: openSnapshot from ./snapshot.js). */
  openSnapshot?: SnapshotOpener;
}

export interface RowSourceTable {
  layer: number;
  /** Rows of the whole table. */
  rows: number;
  dim: number;
  rowBytes: number;
  /** Ids this source can read: [start, end). */
  start: number;
  end: number;
}

export type RowSourceKind = 'snapshot' | 'sparse' | 'packed';

/** What messages call a source of each kind. */
export const SOURCE_NOUN: Record<RowSourceKind, string> = {
  snapshot: 'snapshot',
  sparse: 'sparse copy',
  packed: 'packed directory',
};

export interface RowSource {
  kind: RowSourceKind;
  path: string;
  store: RowStore;
  tables: RowSourceTable[];
  /** kind 'packed': its manifest (for the Mia stack's own shards, one made from their headers, without checksums). */
  manifest?: PackedManifest;
  /** kind 'sparse': its engram-local.json. */
  sparse?: SparseManifest;
  /** The table descriptions the store was opened with. */
  specs: TableSpec[];
  /** Files the store reads, with their table (for benchmarks: fio, cache eviction). */
  files: { layer: number; path: string; role: 'weight' | 'scale' | 'packed' }[];
  close(): Promise<void>;
}

async function defaultOpenSnapshot(
  path: string,
  options: { engramOnly: boolean; weightPattern?: RegExp; scalePattern?: RegExp },
): Promise<SnapshotLike> {
  const { weightPattern, scalePattern, engramOnly } = options;
  return openSnapshot(path, {
    engramOnly,
    ...(weightPattern ? { weightPattern } : {}),
    ...(scalePattern ? { scalePattern } : {}),
  });
}

function pickLayers<T extends { layer: number }>(all: T[], wanted: number[] | undefined, where: string): T[] {
  if (!wanted) return all;
  return wanted.map((l) => {
    const t = all.find((x) => x.layer === l);
    if (!t) {
      throw new SparkError(
        'E_ENGRAM_NOT_FOUND',
        `${where} has no Engram table for layer ${l} (it has ${all.map((x) => x.layer).join(', ') || 'none'})`,
      );
    }
    return t;
  });
}

export async function openPacked(
  path: string,
  manifest: PackedManifest,
  options: RowSourceOptions,
): Promise<RowSource> {
  const { layers, direct, storeOptions } = splitOptions(options);
  const entries = pickLayers(manifest.layers, layers, path);
  const specs: TableSpec[] = entries.map((e) => ({
    kind: 'packed',
    layer: e.layer,
    path: join(path, e.file),
    start: e.start,
    end: e.end,
    dataOffset: e.dataOffset,
    stride: e.stride,
    rowBytes: e.rowBytes,
    layout: e.layout,
    direct: Boolean(direct),
  }));
  const store = await RowStore.open(specs, storeOptions);
  return {
    kind: 'packed',
    path,
    store,
    manifest,
    specs,
    tables: entries.map((e) => ({
      layer: e.layer,
      rows: e.rows,
      dim: dimOfRowBytes(e.rowBytes),
      rowBytes: e.rowBytes,
      start: e.start,
      end: e.end,
    })),
    files: entries.map((e) => ({ layer: e.layer, path: join(path, e.file), role: 'packed' as const })),
    close: () => store.close(),
  };
}

/** Only the manifest's layers, in the overlay's naming (its copy holds the shards of those alone). */
export function sparsePatterns(m: SparseManifest): { weightPattern: RegExp; scalePattern: RegExp } {
  const layers = m.layers.map((l) => l.layer).join('|');
  return {
    weightPattern: new RegExp(`^(?:model\\.)?layers\\.(${layers})\\.engram\\.embed\\.weight$`),
    scalePattern: new RegExp(`^(?:model\\.)?layers\\.(${layers})\\.engram\\.embed\\.scale$`),
  };
}

/** A snapshot or a sparse copy: global ids, weight and scale read from their own tensors. */
export async function openTwoColumn(
  path: string,
  sparse: SparseManifest | undefined,
  options: RowSourceOptions,
): Promise<RowSource> {
  const { layers, residentScales, ranges, storeOptions } = splitOptions(options);
  const opener = options.openSnapshot ?? defaultOpenSnapshot;
  const patterns = sparse
    ? sparsePatterns(sparse)
    : { weightPattern: options.weightPattern, scalePattern: options.scalePattern };
  const snapshot = await opener(path, { engramOnly: true, ...patterns });
  const where = sparse ? `${path} (a sparse copy: engram-local.json)` : path;
  const tables = pickLayers(snapshot.engram, layers ?? sparse?.layers.map((l) => l.layer), where);
  if (tables.length === 0) throw new SparkError('E_ENGRAM_NOT_FOUND', `${path} holds no Engram tables`, { path });
  // spark synth --sparse writes full-size tables with data only in probe windows, on purpose.
  const synthSparse = (snapshot.config?.raw.spark_synth as { sparse?: unknown } | undefined)?.sparse === true;
  const readable = tables.map((t): [number, number] => {
    const r = sparse?.layers.find((l) => l.layer === t.layer);
    if (!r) return [0, t.rows];
    if (r.end > t.rows) {
      throw new SparkError(
        'E_PACK_MANIFEST',
        `${path}/engram-local.json: layers.${t.layer} [${r.start}, ${r.end}) is not inside the table [0, ${t.rows}) its shard header describes; the manifest belongs to another checkpoint`,
        { path, key: `layers.${t.layer}` },
      );
    }
    return [r.start, r.end];
  });
  const specs: TableSpec[] = tables.map((t, i) => {
    const spec: TableSpec = {
      kind: 'snapshot',
      layer: t.layer,
      rows: t.rows,
      dim: t.dim,
      weight: { path: t.weight.file, offset: t.weight.fileOffset },
      scale: { path: t.scale.file, offset: t.scale.fileOffset },
      holes: sparse ? 'corrupt' : synthSparse ? 'allow' : 'refuse',
    };
    if (sparse) spec.range = readable[i];
    if (residentScales) spec.residentScales = sparse ? readable[i] : (ranges?.get(t.layer) ?? [0, t.rows]);
    return spec;
  });
  const store = await RowStore.open(specs, storeOptions);
  return {
    kind: sparse ? 'sparse' : 'snapshot',
    path,
    store,
    specs,
    ...(sparse ? { sparse } : {}),
    tables: tables.map((t, i) => ({
      layer: t.layer,
      rows: t.rows,
      dim: t.dim,
      rowBytes: t.rowBytes,
      start: readable[i][0],
      end: readable[i][1],
    })),
    files: tables.flatMap((t) => [
      { layer: t.layer, path: t.weight.file, role: 'weight' as const },
      { layer: t.layer, path: t.scale.file, role: 'scale' as const },
    ]),
    close: () => store.close(),
  };
}

/** The row source's own options apart from those it hands to the row store. */
function splitOptions(options: RowSourceOptions) {
  const storeOptions: RowSourceOptions = { ...options };
  for (const k of [
    'layers',
    'residentScales',
    'ranges',
    'direct',
    'weightPattern',
    'scalePattern',
    'openSnapshot',
  ] as const)
    delete storeOptions[k];
  const { layers, residentScales, ranges, direct } = options;
  return { layers, residentScales, ranges, direct, storeOptions: storeOptions as RowStoreOptions };
}
