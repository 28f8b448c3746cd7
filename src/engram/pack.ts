// `spark pack` without the CLI: copies one rank's Engram rows into a packed directory
// (format version 1), resumably, then writes the manifest last and atomically.
//
// Order of durability: each layer's data file is written as .partial with a journal (native
// packer), fsync'd and renamed; the source files' size and mtime are re-checked; then
// engram-local.json is written to a temporary file, fsync'd, renamed and the directory
// fsync'd; only then are the journals removed. A directory without the manifest is not a pack.
import { open, rename, rm, stat, statfs } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { SparkError, withPath } from '../errors.js';
import { makeWritableDir } from '../writable-dir.js';
import { lockDirectory, packLayer, type PackLayerProgress, type PackLayout } from '../native/pack.js';
import { parsePackedManifest, type PackSplit } from './packed-manifest.js';
import {
  CHECKSUM_ALGORITHM,
  checksumHex,
  packedFileName,
  defaultChunkRows,
  headerJson,
  PACK_HEADER_BYTES,
  layerGeometry,
  MANIFEST_NAME,
  manifestText,
  MANIFEST_FORMAT,
  MANIFEST_VERSION,
  type PackedLayer,
  type PackedManifest,
  type PackedSourceFile,
} from './pack-format.js';
import { fsyncDir, pollWhile, statSources, type PackTable } from './pack-io.js';
import { readTextIfExists } from '../read-optional.js';

export interface PackRange {
  layer: number;
  start: number;
  end: number;
}

export interface PackRequest {
  snapshotDir: string;
  revision?: string;
  /** The Engram tables of the snapshot (at least those named by `ranges`). */
  tables: PackTable[];
  out: string;
  rank: number;
  world: number;
  split: PackSplit;
  /** This rank's rows per layer. */
  ranges: PackRange[];
  layout: PackLayout;
  threads: number;
  /** Rows per checksum chunk; default ~16 MiB of rows (pack-format.ts). */
  chunkRows?: number;
  /** Refuse up front when the disk cannot hold the pack (default true). */
  checkSpace?: boolean;
  /** Replace a complete pack that differs from this request. */
  force?: boolean;
  /** Make progress durable (fdatasync + journal) after this many bytes (default 1 GiB) or 2 s. */
  syncBytes?: number;
  onProgress?: (p: PackProgressInfo) => void;
}

export interface PackProgressInfo {
  layer: number;
  layerIndex: number;
  layerCount: number;
  phase: PackLayerProgress['phase'];
  /** Over all layers of the pack. */
  bytesDone: number;
  bytesTotal: number;
  /** Bytes this run copied so far (kept chunks excluded): the rate's numerator. */
  bytesCopied: number;
  seconds: number;
}

export interface PackLayerSummary {
  layer: number;
  file: string;
  start: number;
  end: number;
  bytes: number;
  chunks: number;
  chunksKept: number;
  chunksRejected: number;
  chunksWritten: number;
  journalDiscarded: boolean;
}

export interface PackSummary {
  out: string;
  manifest: string;
  rank: number;
  world: number;
  split: PackSplit;
  layout: PackLayout;
  /** True when the directory already held this exact pack: nothing was done. */
  noop: boolean;
  /** True when an interrupted run's chunks were kept. */
  resumed: boolean;
  /** Size of the data files. */
  bytes: number;
  /** Data bytes written by this run. */
  bytesWritten: number;
  seconds: number;
  layers: PackLayerSummary[];
}

interface PlannedLayer {
  table: PackTable;
  entry: PackedLayer;
  fileBytes: number;
}

function plan(req: PackRequest): PlannedLayer[] {
  const byLayer = new Map(req.tables.map((t) => [t.layer, t]));
  return [...req.ranges]
    .sort((a, b) => a.layer - b.layer)
    .map((r) => {
      const table = byLayer.get(r.layer);
      if (!table) throw new SparkError('E_ENGRAM_NOT_FOUND', `layer ${r.layer} has no Engram table in ${req.snapshotDir}`);
      if (!(r.start >= 0 && r.start <= r.end && r.end <= table.rows)) {
        throw new SparkError('E_ROW_RANGE', `layer ${r.layer}: range [${r.start}, ${r.end}) is outside the table's ${table.rows} rows`);
      }
      const rowBytes = table.dim + table.dim / 32;
      const chunkRows = req.chunkRows ?? defaultChunkRows(req.layout, rowBytes);
      const entry: PackedLayer = {
        layer: r.layer,
        rows: table.rows,
        start: r.start,
        end: r.end,
        file: packedFileName(r.layer, req.rank, req.world),
        rowBytes,
        stride: rowBytes,
        dataOffset: PACK_HEADER_BYTES,
        weightDtype: table.weight.dtype,
        scaleDtype: table.scale.dtype,
        layout: req.layout,
        checksum: { algorithm: CHECKSUM_ALGORITHM, chunkRows, values: [] },
      };
      return { table, entry, fileBytes: layerGeometry(entry).fileBytes };
    });
}

/** Why an existing manifest is not this request ('' when it is). */
function difference(m: PackedManifest, req: PackRequest, layers: PlannedLayer[], files: PackedSourceFile[]): string {
  if (m.rank !== req.rank || m.world !== req.world) return `it is rank ${m.rank} of ${m.world}`;
  if (m.split !== req.split) return `it uses the ${m.split} split`;
  if (m.layers.length !== layers.length) return `it holds ${m.layers.length} layers`;
  for (const [i, l] of layers.entries()) {
    const e = m.layers[i];
    if (e.layer !== l.entry.layer || e.start !== l.entry.start || e.end !== l.entry.end) {
      return `its layer ${e.layer} range is [${e.start}, ${e.end})`;
    }
    if (e.layout !== req.layout) return `it uses the ${e.layout} layout`;
    if (req.chunkRows !== undefined && e.checksum.chunkRows !== req.chunkRows) return `it uses ${e.checksum.chunkRows} rows per chunk`;
  }
  const before = new Map(m.source.files.map((f) => [f.name, f]));
  for (const f of files) {
    const old = before.get(f.name);
    if (!old || old.bytes !== f.bytes || old.mtimeMs !== f.mtimeMs) return `the snapshot file ${f.name} changed since it was packed`;
  }
  return '';
}

async function readExisting(path: string): Promise<PackedManifest | undefined> {
  const text = await readTextIfExists(path);
  if (text === undefined) return undefined;
  try {
    return parsePackedManifest(text, path);
  } catch (err) {
    const why = err instanceof SparkError ? err.message : String(err);
    throw new SparkError('E_PACK_EXISTS', `${why}; it is not a manifest this spark can replace safely: remove it or use another --out`, { path });
  }
}

async function checkSpace(out: string, layers: PlannedLayer[]): Promise<void> {
  let need = 0;
  for (const l of layers) {
    need += 65536 + 16 * layerGeometry(l.entry).chunkCount; // manifest share and journal
    let have = 0;
    for (const name of [l.entry.file, `${l.entry.file}.partial`]) {
      const st = await stat(join(out, name)).catch(() => undefined);
      if (st) have = Math.max(have, Math.min(st.blocks * 512, l.fileBytes));
    }
    need += l.fileBytes - have;
  }
  const fs = await statfs(out);
  const free = fs.bavail * fs.bsize;
  if (need > free) {
    const gib = (n: number): string => (n >= 2 ** 30 ? `${(n / 2 ** 30).toFixed(2)} GiB` : `${(n / 2 ** 20).toFixed(1)} MiB`);
    const total = layers.reduce((s, l) => s + l.fileBytes, 0);
    throw new SparkError(
      'E_NO_SPACE',
      `not enough free space in ${out}: the pack needs ${gib(need)} more (its ${layers.length} files take ${gib(total)}), ` +
        `${gib(free)} (${free} bytes) are free; free space or use another --out (--no-space-check skips this check)`,
      { path: out, needBytes: need, freeBytes: free },
    );
  }
}

async function writeManifest(out: string, doc: PackedManifest): Promise<string> {
  const path = join(out, MANIFEST_NAME);
  const tmp = `${path}.tmp`;
  try {
    const fh = await open(tmp, 'w');
    try {
      await fh.writeFile(manifestText(doc));
      await fh.sync();
    } finally {
      await fh.close();
    }
  } catch (err) {
    throw withPath(err, tmp); // Node names no path for a failed write or fsync
  }
  await rename(tmp, path);
  await fsyncDir(out);
  return path;
}

export async function packEngram(req: PackRequest): Promise<PackSummary> {
  const t0 = performance.now();
  const out = resolve(req.out);
  await makeWritableDir(out);
  const unlock = lockDirectory(out);
  try {
    return await packLocked(req, out, t0);
  } finally {
    unlock();
  }
}

async function packLocked(req: PackRequest, out: string, t0: number): Promise<PackSummary> {
  const layers = plan(req);
  const used = layers.flatMap((l) => [l.table.weight, l.table.scale]);
  const files = await statSources(used);
  const summary = (noop: boolean, results: PackLayerSummary[], bytesWritten: number): PackSummary => ({
    out,
    manifest: join(out, MANIFEST_NAME),
    rank: req.rank,
    world: req.world,
    split: req.split,
    layout: req.layout,
    noop,
    resumed: results.some((r) => r.chunksKept > 0),
    bytes: layers.reduce((s, l) => s + l.fileBytes, 0),
    bytesWritten,
    seconds: (performance.now() - t0) / 1000,
    layers: results,
  });

  const existing = await readExisting(join(out, MANIFEST_NAME));
  if (existing) {
    const why = difference(existing, req, layers, files);
    if (why === '' && (await dataFilesPresent(out, layers))) {
      await removeJournals(out, layers);
      return summary(true, layers.map((l) => layerSummary(l, existing.layers.find((e) => e.layer === l.entry.layer)!)), 0);
    }
    if (why !== '' && !req.force) {
      throw new SparkError(
        'E_PACK_EXISTS',
        `${out} already holds a complete pack that differs from this one (${why}); use another --out, or --force to replace it`,
        { path: out },
      );
    }
    await rm(join(out, MANIFEST_NAME));
    await fsyncDir(out);
  }
  if (req.checkSpace !== false) await checkSpace(out, layers);

  const totalBytes = layers.reduce((s, l) => s + l.fileBytes - PACK_HEADER_BYTES, 0);
  let doneBefore = 0;
  let copied = 0;
  let bytesWritten = 0;
  const results: PackLayerSummary[] = [];
  for (const [i, l] of layers.entries()) {
    const { entry, table } = l;
    const g = layerGeometry(entry);
    const header = headerJson(req, entry);
    const source = (t: PackTable['weight']): object => {
      const f = files.find((x) => x.name === t.fileName)!;
      return { name: t.fileName, offset: t.fileOffset, bytes: f.bytes, mtimeMs: f.mtimeMs };
    };
    const key = JSON.stringify({ format: MANIFEST_FORMAT, version: MANIFEST_VERSION, header, weight: source(table.weight), scale: source(table.scale) });
    const job = packLayer({
      weight: { path: table.weight.file, offset: table.weight.fileOffset },
      scale: { path: table.scale.file, offset: table.scale.fileOffset },
      start: entry.start,
      rows: g.count,
      dim: g.dim,
      layout: entry.layout,
      chunkRows: entry.checksum.chunkRows,
      outPath: join(out, entry.file),
      header,
      key,
      threads: req.threads,
      ...(req.syncBytes !== undefined ? { commitBytes: req.syncBytes } : {}),
    });
    let kept = 0;
    const report = (): void => {
      const p = job.progress();
      if (p.phase === 'checking') kept = p.bytesDone;
      req.onProgress?.({
        layer: entry.layer,
        layerIndex: i,
        layerCount: layers.length,
        phase: p.phase,
        bytesDone: doneBefore + p.bytesDone,
        bytesTotal: totalBytes,
        bytesCopied: copied + Math.max(0, p.bytesDone - kept),
        seconds: (performance.now() - t0) / 1000,
      });
    };
    const r = await pollWhile(job.promise, report, req.onProgress ? 250 : 0);
    entry.checksum.values = r.checksums.map(checksumHex);
    doneBefore += g.dataBytes;
    copied += r.bytesWritten;
    bytesWritten += r.bytesWritten;
    results.push({ ...layerSummary(l, entry), chunksKept: r.chunksKept, chunksRejected: r.chunksRejected, chunksWritten: r.chunksWritten, journalDiscarded: r.journalDiscarded });
  }

  // A snapshot that changed underneath is an error, not a pack.
  const after = await statSources(used);
  for (const [i, f] of files.entries()) {
    if (after[i].bytes !== f.bytes || after[i].mtimeMs !== f.mtimeMs) {
      throw new SparkError(
        'E_SOURCE_CHANGED',
        `${f.name} changed while it was being packed (size ${f.bytes} -> ${after[i].bytes}, mtime ${f.mtimeMs} -> ${after[i].mtimeMs}); ` +
          'no manifest was written; re-run spark pack once the snapshot is stable',
        { path: join(req.snapshotDir, f.name) },
      );
    }
  }
  const doc: PackedManifest = {
    format: MANIFEST_FORMAT,
    version: MANIFEST_VERSION,
    rank: req.rank,
    world: req.world,
    split: req.split,
    source: { snapshot: resolve(req.snapshotDir), ...(req.revision ? { revision: req.revision } : {}), files },
    layers: layers.map((l) => l.entry),
  };
  await writeManifest(out, doc);
  await removeJournals(out, layers);
  return summary(false, results, bytesWritten);
}

function layerSummary(l: PlannedLayer, e: PackedLayer): PackLayerSummary {
  return {
    layer: e.layer,
    file: e.file,
    start: e.start,
    end: e.end,
    bytes: l.fileBytes,
    chunks: e.checksum.values.length,
    chunksKept: 0,
    chunksRejected: 0,
    chunksWritten: 0,
    journalDiscarded: false,
  };
}

async function dataFilesPresent(out: string, layers: PlannedLayer[]): Promise<boolean> {
  for (const l of layers) {
    const st = await stat(join(out, l.entry.file)).catch(() => undefined);
    if (!st || st.size !== l.fileBytes) return false;
  }
  return true;
}

async function removeJournals(out: string, layers: PlannedLayer[]): Promise<void> {
  for (const l of layers) await rm(join(out, `${l.entry.file}.journal`), { force: true });
  await fsyncDir(out);
}
