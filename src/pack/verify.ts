// `spark verify` without the CLI. Which checks run depends on what the directory holds
// (engram/local-dir.ts): a sparse copy is checked by verify-sparse.ts, the Mia stack's own
// shards without a manifest by verify-mia.ts; a dense/page pack here: the
// manifest's sanity (format, ranges inside their tables and matching the split it claims,
// entries consistent with the layout), every data file's size and header block, every chunk
// checksum (native, parallel), and with a source snapshot the rows themselves, all of them or
// a sample. A data file that is a link out of the directory fails the check and is not read.
import { readdir, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { SparkError } from '../errors.js';
import { verifyLayer, type IoMode, type VerifyLayerProgress } from '../native/pack.js';
import { linkOutside } from './copy-files.js';
import { LEGACY_PACK_MANIFEST_NAME, PACK_MANIFEST_NAME, readLocalDir } from '../engram/local-dir.js';
import { chunkSpan, headerBlock, layerGeometry, type PackedLayer } from './pack-format.js';
import { NO_CHECKSUMS } from '../engram/mia-dir.js';
import { miaAbortsOnV1 } from './pack-verdict.js';
import type { PackedManifest } from '../engram/packed-manifest.js';
import { checkManifest } from './pack-manifest-check.js';
import { pollWhile } from './pack-io.js';
import type { ModelConfig } from '../engram/config.js';
import type { VerifyLayerReport, VerifyReport, VerifyRequest } from './verify-report.js';
import { verifySparse } from './verify-sparse.js';
import { checkSourceIdentity } from './verify-source.js';

/** The directory's manifest, strictly parsed; any problem with it fails the check (exit 1). */
async function readManifests(dir: string) {
  try {
    return await readLocalDir(dir);
  } catch (err) {
    if (err instanceof SparkError && err.code === 'E_PACK_MANIFEST')
      throw new SparkError('E_PACK_MISMATCH', err.message, err.details);
    throw err;
  }
}

/** A directory without a manifest: missing, an interrupted pack, or not a pack at all. */
async function notACopy(dir: string): Promise<SparkError> {
  const names = await readdir(dir).catch(() => undefined);
  if (names === undefined) return new SparkError('E_FILE_NOT_FOUND', `${dir} does not exist`, { path: dir });
  const interrupted = names.some((n) => n.endsWith('.partial') || n.endsWith('.journal'));
  return new SparkError(
    'E_PACK_INCOMPLETE',
    `${dir} is not a pack or sparse copy: it has neither ${LEGACY_PACK_MANIFEST_NAME} nor ${PACK_MANIFEST_NAME}` +
      (interrupted ? ' (an interrupted pack: re-run the same spark pack command to resume it)' : ''),
    { path: dir },
  );
}

function checkedManifest(m: PackedManifest, path: string, config: ModelConfig | undefined): PackedManifest {
  const problems = checkManifest(m, config);
  if (problems.length > 0) {
    const more = problems.length > 1 ? ` (and ${problems.length - 1} more problems)` : '';
    throw new SparkError('E_PACK_MISMATCH', `${path}: ${problems[0]}${more}`, { path, problems });
  }
  return m;
}

/** Sample rows (local indices): the first, the last and `n` spread at random. */
function sampleRows(count: number, n: number): number[] {
  if (count === 0) return [];
  const ids = new Set<number>([0, count - 1]);
  for (let i = 0; i < n && ids.size < count; i++) ids.add(Math.floor(Math.random() * count));
  return [...ids].sort((a, b) => a - b);
}

export async function verifyPack(req: VerifyRequest): Promise<VerifyReport> {
  const dir = resolve(req.dir);
  const local = await readManifests(dir);
  if (local.kind === 'none') throw await notACopy(dir);
  if (local.kind === 'mia') {
    const { verifyMia } = await import('./verify-mia.js');
    return verifyMia(req, dir, local.shards);
  }
  const report =
    local.kind === 'sparse'
      ? await verifySparse({ ...req, dir, manifest: local.manifest })
      : await verifyPacked(
          req,
          dir,
          checkedManifest(local.manifest, local.manifestPath, req.source?.config),
          local.manifestPath,
        );
  const recorded = local.kind === 'sparse' ? local.manifest.spark?.source : local.manifest.source;
  await checkSourceIdentity(report, recorded, req);
  report.ok = report.problems.length === 0;
  return report;
}

async function verifyPacked(
  req: VerifyRequest,
  dir: string,
  m: PackedManifest,
  manifestPath: string,
): Promise<VerifyReport> {
  const t0 = performance.now();
  const report: VerifyReport = {
    dir,
    kind: 'packed',
    ok: true,
    rank: m.rank,
    world: m.world,
    split: m.split,
    checked: [
      `${manifestPath.endsWith(PACK_MANIFEST_NAME) ? PACK_MANIFEST_NAME : `${LEGACY_PACK_MANIFEST_NAME} (as first shipped)`}, format version ${m.version}`,
      'data file sizes and header blocks',
      'chunk checksums',
    ],
    layers: [],
    // Version 1: every check below may pass, and still the Mia stack cannot use the pack.
    problems: m.version === 1 ? [miaAbortsOnV1(dir, m)] : [],
    bytesRead: 0,
    seconds: 0,
  };
  if (req.source)
    report.checked.push(req.rows === 'full' ? 'every row against the source' : 'a sample of rows against the source');
  await checkLayers(req, dir, m, report, t0);
  return report;
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
  let source: Parameters<typeof verifyLayer>[0]['source'];
  if (req.source && req.rows !== 'none') {
    const t = req.source.tables.find((x) => x.layer === e.layer);
    if (!t)
      throw new SparkError('E_ENGRAM_NOT_FOUND', `layer ${e.layer} has no Engram table in ${req.source.snapshotDir}`);
    if (t.rows !== e.rows || t.dim !== g.dim) {
      throw new SparkError(
        'E_PACK_MISMATCH',
        `${where}: the source table is ${t.rows} x ${t.dim}, the pack says ${e.rows} x ${g.dim}: not the snapshot this was packed from`,
      );
    }
    source = {
      weight: { path: t.weight.file, offset: t.weight.fileOffset },
      scale: { path: t.scale.file, offset: t.scale.fileOffset },
      start: e.start,
      allRows: req.rows === 'full',
      sampleRows: req.rows === 'sample' ? sampleRows(g.count, req.sample ?? 4096) : [],
    };
  }
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
  if (r.badChunkCount > 0) {
    const k = r.badChunks[0];
    const s = chunkSpan(e, k);
    layer.chunks.first = { index: k, offset: s.offset, bytes: s.bytes, firstRow: s.firstRow, lastRow: s.lastRow };
    const more = r.badChunkCount > 1 ? ` (${r.badChunkCount} bad chunks in all)` : '';
    problems.push(
      `${where}: chunk ${k} (bytes ${s.offset}-${s.offset + s.bytes - 1}, rows ${s.firstRow}-${s.lastRow}) fails its checksum${more}`,
    );
  }
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
