// The per-layer checks of a dense or page pack (and of the Mia shards spark reads): each data
// file's size and header block, the chunk checksums, and with a source the rows (verify.ts).
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { SparkError } from '../../errors/errors.js';
import { verifyLayer, type IoMode, type VerifyLayerProgress } from '../../addon/pack.js';
import { linkOutside } from '../../pack/copy-files.js';
import { chunkSpan, headerBlock, layerGeometry, type PackedLayer } from './pack-format.js';
import { NO_CHECKSUMS } from '../mia/mia-dir.js';
import type { PackedManifest } from './packed-manifest.js';
import { pollWhile } from '../../pack/pack-io.js';
import type { VerifyLayerReport, VerifyReport, VerifyRequest } from '../../pack/verify-report.js';

/** Sample rows (local indices): the first, the last and `n` spread at random. */
function sampleRows(count: number, n: number): number[] {
  if (count === 0) return [];
  const ids = new Set<number>([0, count - 1]);
  for (let i = 0; i < n && ids.size < count; i++) ids.add(Math.floor(Math.random() * count));
  return [...ids].sort((a, b) => a - b);
}

/** Verifies each layer's data file into `report` (ok, problems, bytes, io, seconds). */
export async function checkLayers(
  req: VerifyRequest,
  dir: string,
  m: PackedManifest,
  report: VerifyReport,
  t0: number,
): Promise<void> {
  const totalBytes = m.layers.reduce((s, e) => s + layerGeometry(e).dataBytes, 0);
  let doneBefore = 0;
  for (const e of m.layers) {
    const r = await verifyOne(req, dir, m, e, (p) =>
      req.onProgress?.({
        bytesDone: doneBefore + p.bytesDone,
        bytesTotal: totalBytes,
        seconds: (performance.now() - t0) / 1000,
      }),
    );
    doneBefore += layerGeometry(e).dataBytes;
    report.layers.push(r.layer);
    report.problems.push(...r.problems);
    report.bytesRead += r.bytesRead;
    if (r.readIo !== 'none' && report.io !== 'buffered') report.io = r.readIo;
  }
  report.ok = report.problems.length === 0;
  report.seconds = (performance.now() - t0) / 1000;
}

async function verifyOne(
  req: VerifyRequest,
  dir: string,
  m: PackedManifest,
  e: PackedLayer,
  onProgress: (p: VerifyLayerProgress) => void,
): Promise<{ layer: VerifyLayerReport; problems: string[]; bytesRead: number; readIo: IoMode }> {
  const g = layerGeometry(e);
  const path = join(dir, e.file);
  const where = `${e.file}: layer ${e.layer}`;
  const problems: string[] = [];
  const link = await linkOutside(dir, e.file);
  const st = link ? undefined : await stat(path).catch(() => undefined);
  const layer: VerifyLayerReport = {
    layer: e.layer,
    file: e.file,
    start: e.start,
    end: e.end,
    ok: false,
    bytes: { expected: g.fileBytes, actual: st?.size ?? 0 },
    headerOk: false,
    chunks: { total: e.checksum.algorithm === NO_CHECKSUMS ? 0 : g.chunkCount, checked: 0, bad: 0 },
  };
  if (!st) {
    problems.push(link ? `${where}: ${link}` : `${where}: the data file is missing`);
    return { layer, problems, bytesRead: 0, readIo: 'none' };
  }
  const source = layerSource(req, e, g.dim, g.count, where);
  const job = verifyLayer({
    path,
    rows: g.count,
    dim: g.dim,
    layout: e.layout,
    chunkRows: e.checksum.chunkRows,
    header: headerBlock(m, e),
    checksums: e.checksum.values.map((h) => parseInt(h, 16)),
    checkChunks: e.checksum.algorithm !== NO_CHECKSUMS,
    threads: req.threads,
    ...(source ? { source } : {}),
  });
  const r = await pollWhile(job.promise, () => onProgress(job.progress()), req.onProgress ? 250 : 0);
  layer.headerOk = r.headerOk;
  layer.chunks.checked = r.chunksChecked;
  layer.chunks.bad = r.badChunkCount;
  if (!r.sizeOk) {
    const how = r.fileBytes < g.fileBytes ? 'truncated' : 'has extra bytes';
    problems.push(`${where}: the file is ${r.fileBytes} bytes, its layout implies ${g.fileBytes} (${how})`);
  }
  if (!r.headerOk)
    problems.push(
      `${where}: the header block (bytes 0-4095) is not the one ${m.version === 1 || e.layout === 'page' ? 'the manifest implies' : "the Mia stack's reader expects for this range"}`,
    );
  if (r.badChunkCount > 0) problems.push(badChunkFinding(layer, e, r, where));
  if (source) {
    layer.rows = { mode: req.rows === 'full' ? 'full' : 'sample', compared: r.rowsCompared, bad: r.badRowCount };
    if (r.badRowCount > 0) {
      const id = e.start + r.badRows[0];
      layer.rows.first = id;
      const more =
        r.badRowCount > 1 ? ` (${r.badRowCount} differing rows${req.rows === 'sample' ? ' in the sample' : ''})` : '';
      problems.push(`${where}: row ${id} differs from the source${more}`);
    }
  }
  layer.ok = problems.length === 0;
  return { layer, problems, bytesRead: r.bytesRead, readIo: r.readIo };
}

type LayerSource = Parameters<typeof verifyLayer>[0]['source'];

/** The source snapshot's rows to compare with (all, or a sample), when a source is given: it must have the pack's shape. */
function layerSource(
  req: VerifyRequest,
  e: PackedLayer,
  dim: number,
  count: number,
  where: string,
): LayerSource | undefined {
  if (!req.source || req.rows === 'none') return undefined;
  const t = req.source.tables.find((x) => x.layer === e.layer);
  if (!t)
    throw new SparkError('E_ENGRAM_NOT_FOUND', `layer ${e.layer} has no Engram table in ${req.source.snapshotDir}`);
  if (t.rows !== e.rows || t.dim !== dim) {
    throw new SparkError(
      'E_PACK_MISMATCH',
      `${where}: the source table is ${t.rows} x ${t.dim}, the pack says ${e.rows} x ${dim}: not the snapshot this was packed from`,
    );
  }
  return {
    weight: { path: t.weight.file, offset: t.weight.fileOffset },
    scale: { path: t.scale.file, offset: t.scale.fileOffset },
    start: e.start,
    allRows: req.rows === 'full',
    sampleRows: req.rows === 'sample' ? sampleRows(count, req.sample ?? 4096) : [],
  };
}

/** The first bad chunk into the layer report, and the problem that names it. */
function badChunkFinding(
  layer: VerifyLayerReport,
  e: PackedLayer,
  r: { badChunks: number[]; badChunkCount: number },
  where: string,
): string {
  const k = r.badChunks[0];
  const s = chunkSpan(e, k);
  layer.chunks.first = { index: k, offset: s.offset, bytes: s.bytes, firstRow: s.firstRow, lastRow: s.lastRow };
  const more = r.badChunkCount > 1 ? ` (${r.badChunkCount} bad chunks in all)` : '';
  return `${where}: chunk ${k} (bytes ${s.offset}-${s.offset + s.bytes - 1}, rows ${s.firstRow}-${s.lastRow}) fails its checksum${more}`;
}
