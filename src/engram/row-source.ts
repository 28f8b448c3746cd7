// A row source: a snapshot or a packed directory opened into a RowStore. A directory holding
// engram-local.json is a pack (one read per row); anything else is a snapshot (two reads per
// row, or one with resident scales).
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { SparkError } from '../errors.js';
import { RowStore, type RowStoreOptions, type TableSpec } from '../native/row-store.js';
import { readLocalDir } from './local-dir.js';
import { dimOfRowBytes, type PackedManifest } from './packed-manifest.js';
import { openSnapshot } from './snapshot.js';

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

export interface RowSource {
  kind: 'snapshot' | 'packed';
  path: string;
  store: RowStore;
  tables: RowSourceTable[];
  manifest?: PackedManifest;
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
  return openSnapshot(path, { engramOnly, ...(weightPattern ? { weightPattern } : {}), ...(scalePattern ? { scalePattern } : {}) });
}

function pickLayers<T extends { layer: number }>(all: T[], wanted: number[] | undefined, where: string): T[] {
  if (!wanted) return all;
  return wanted.map((l) => {
    const t = all.find((x) => x.layer === l);
    if (!t) {
      throw new SparkError('E_ENGRAM_NOT_FOUND', `${where} has no Engram table for layer ${l} (it has ${all.map((x) => x.layer).join(', ') || 'none'})`);
    }
    return t;
  });
}

export async function openRowSource(path: string, options: RowSourceOptions = {}): Promise<RowSource> {
  const { layers, residentScales, ranges, direct, weightPattern, scalePattern, openSnapshot, ...storeOptions } = options;
  let isDir = false;
  try {
    isDir = statSync(path).isDirectory();
  } catch {
    throw new SparkError('E_FILE_NOT_FOUND', `${path} does not exist (give a snapshot or a packed directory)`, { path });
  }
  const local = isDir ? await readLocalDir(path) : undefined;
  if (local?.kind === 'sparse') {
    throw new SparkError('E_PACK_MANIFEST', `${path} is a sparse copy (engram-local.json): this spark reads snapshots and dense or page packs`, { path });
  }
  if (local?.kind === 'packed') {
    const manifest = local.manifest;
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
      tables: entries.map((e) => ({ layer: e.layer, rows: e.rows, dim: dimOfRowBytes(e.rowBytes), rowBytes: e.rowBytes, start: e.start, end: e.end })),
      files: entries.map((e) => ({ layer: e.layer, path: join(path, e.file), role: 'packed' as const })),
      close: () => store.close(),
    };
  }
  const opener = openSnapshot ?? defaultOpenSnapshot;
  const snapshot = await opener(path, { engramOnly: true, weightPattern, scalePattern });
  const tables = pickLayers(snapshot.engram, layers, path);
  if (tables.length === 0) throw new SparkError('E_ENGRAM_NOT_FOUND', `${path} holds no Engram tables`, { path });
  const specs: TableSpec[] = tables.map((t) => {
    const spec: TableSpec = {
      kind: 'snapshot',
      layer: t.layer,
      rows: t.rows,
      dim: t.dim,
      weight: { path: t.weight.file, offset: t.weight.fileOffset },
      scale: { path: t.scale.file, offset: t.scale.fileOffset },
    };
    if (residentScales) spec.residentScales = ranges?.get(t.layer) ?? [0, t.rows];
    return spec;
  });
  const store = await RowStore.open(specs, storeOptions);
  return {
    kind: 'snapshot',
    path,
    store,
    specs,
    tables: tables.map((t) => ({ layer: t.layer, rows: t.rows, dim: t.dim, rowBytes: t.rowBytes, start: 0, end: t.rows })),
    files: tables.flatMap((t) => [
      { layer: t.layer, path: t.weight.file, role: 'weight' as const },
      { layer: t.layer, path: t.scale.file, role: 'scale' as const },
    ]),
    close: () => store.close(),
  };
}
