// `spark verify` on a sparse copy (the overlay's layout, stacks/overlay/sparse-manifest.ts), spark's or one
// made by the overlay's engram_local.py:
//   - the files first, before reading any: the index and the shards the tables live in are the
//     copy's own (no link out of the directory);
//   - the manifest against the copy's own index and shard headers: every layer has its table,
//     its range lies inside it, weight and scale share a shard (the overlay needs both in one);
//   - no hole inside the manifest's range (a hole reads as zeros: corruption, never data);
//   - spark's key, when present: rank/world/split against the ranges, its tables against the
//     headers, the index and header bytes against their CRC-32s, every chunk checksum;
//     without it (another tool made the copy) the report says there are no checksums;
//   - with a source snapshot: header bytes and index bytes compared, and the rows (all or a
//     sample) compared with the source's.
// Every problem is one line naming the file, the layer and the first bad row or chunk.
import { stat } from 'node:fs/promises';
import { readFilePrefix, readSmallBytes, readSmallText, SIZE_CAPS } from '../../files/small-file.js';
import { join } from 'node:path';
import { SparkError } from '../../errors/errors.js';
import { crc32 } from '../../addon/pack.js';
import { findHole } from '../../addon/holes.js';
import { linkOutside } from '../../pack/copy-files.js';
import { packRanges } from '../../pack/pack-ranges.js';
import { sparsePatterns } from '../row-source.js';
import { INDEX_FILE, openSnapshot, type EngramTable } from '../../engram/snapshot.js';
import type { SparseManifest, SparseRange } from './sparse-manifest.js';
import { scanTable, type ScanJob } from './sparse-scan.js';
import type { VerifyLayerReport, VerifyReport, VerifyRequest } from '../../pack/verify-report.js';

export interface SparseVerifyRequest extends VerifyRequest {
  manifest: SparseManifest;
}

/** What the whole-copy checks found that the per-layer reports mention. */
interface CopyFindings {
  report: VerifyReport;
  /** Shards whose header bytes fail their CRC-32 or differ from the source's. */
  badHeaders: Set<string>;
}

/** Chunk size for the data pass of a copy without checksums (rows). */
const PLAIN_CHUNK_ROWS = 65536;

const hex = (n: number) => (n >>> 0).toString(16).padStart(8, '0');

/** Offset of the first byte where a and b differ (their common length when one is a prefix). */
function firstDifference(a: Buffer, b: Buffer): number | undefined {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? undefined : n;
}

function readPrefix(path: string, bytes: number): Promise<Buffer> {
  return readFilePrefix(path, bytes, 'shard'); // a FIFO or directory is refused, never waited on
}

/** The safetensors header bytes of a shard as written: 8 + N. */
async function headerBytesOf(path: string): Promise<Buffer> {
  const len = await readPrefix(path, 8);
  const n = len.length === 8 ? len.readBigUInt64LE() : 0n;
  return readPrefix(path, n > 100_000_000n ? 8 : 8 + Number(n));
}

/** The shard names the manifest's tables live in, from the copy's index (undefined: a problem was recorded). */
async function tableShards(dir: string, m: SparseManifest, problems: string[]): Promise<string[] | undefined> {
  let index: unknown;
  try {
    index = JSON.parse(await readSmallText(join(dir, INDEX_FILE), { what: 'index', maxBytes: SIZE_CAPS.index }));
  } catch (err) {
    const why =
      (err as NodeJS.ErrnoException).code === 'ENOENT'
        ? 'is missing (the overlay reads it): copy it from the snapshot'
        : `cannot be read (${(err as Error).message})`;
    problems.push(`${INDEX_FILE}: ${why}`);
    return undefined;
  }
  const map = (index as { weight_map?: Record<string, unknown> } | null)?.weight_map ?? {};
  const names = new Set<string>();
  for (const { layer } of m.layers) {
    for (const part of ['weight', 'scale']) {
      const file = map[`layers.${layer}.engram.embed.${part}`] ?? map[`model.layers.${layer}.engram.embed.${part}`];
      if (typeof file === 'string') names.add(file);
    }
  }
  for (const s of m.spark?.shards ?? []) names.add(s.name);
  return [...names];
}

export async function verifySparse(req: SparseVerifyRequest): Promise<VerifyReport> {
  const t0 = performance.now();
  const { dir, manifest: m } = req;
  const spark = m.spark;
  const report: VerifyReport = {
    dir,
    kind: 'sparse',
    ok: false,
    ...(spark ? { rank: spark.rank, world: spark.world, split: spark.split } : {}),
    madeBy: spark ? 'spark' : 'another tool',
    checked: ['engram-local.json'],
    layers: [],
    problems: [],
    bytesRead: 0,
    seconds: 0,
  };
  const done = (): VerifyReport => {
    report.ok = report.problems.length === 0;
    report.seconds = (performance.now() - t0) / 1000;
    return report;
  };
  const problems = report.problems;

  // The files, before reading any of them.
  const indexLink = await linkOutside(dir, INDEX_FILE);
  if (indexLink) problems.push(`${INDEX_FILE}: ${indexLink}`);
  const shards = indexLink ? undefined : await tableShards(dir, m, problems);
  if (!shards) return done();
  for (const name of shards) {
    const link = await linkOutside(dir, name);
    if (link) problems.push(`${name}: ${link}`);
  }
  if (problems.length > 0) return done();

  let tables: EngramTable[];
  try {
    tables = (await openSnapshot(dir, { engramOnly: true, ...sparsePatterns(m) })).engram;
  } catch (err) {
    if (!(err instanceof SparkError) || err.exitCode !== 2) throw err;
    problems.push(`the copy's index or a shard header is damaged: ${err.message}`);
    return done();
  }
  report.checked.push('index and shard headers', 'no holes inside the range');
  const found: CopyFindings = { report, badHeaders: new Set() };

  if (spark) {
    await checkSparkFiles(dir, m, tables, req, found);
    report.checked.push('index and header CRC-32s', 'chunk checksums');
  } else {
    const hint = req.source ? '' : '; give --source SNAPSHOT to compare its rows, header and index bytes';
    report.checked.push(`no checksums: the copy was made by another tool (engram-local.json has no spark key)${hint}`);
  }
  if (req.source) {
    await compareWithSource(dir, tables, req.source.snapshotDir, found);
    report.checked.push(
      'index and header bytes against the source',
      req.rows === 'full' ? 'every row against the source' : 'a sample of rows against the source',
    );
  }
  const passes = req.source && req.rows === 'full' ? 2 : 1;
  const total = m.layers.reduce((s, r) => {
    const t = tables.find((x) => x.layer === r.layer);
    return s + (t ? (r.end - r.start) * t.rowBytes * passes : 0);
  }, 0);
  let bytesDone = 0;
  for (const r of m.layers) {
    const t = tables.find((x) => x.layer === r.layer);
    if (!t) {
      problems.push(`layer ${r.layer}: engram-local.json names it but the copy's index has no Engram table for it`);
      continue;
    }
    const onBytes = (n: number): void => {
      bytesDone += n;
      req.onProgress?.({ bytesDone, bytesTotal: total, seconds: (performance.now() - t0) / 1000 });
    };
    report.layers.push(await verifyTable(req, r, t, onBytes, found));
  }
  return done();
}

async function verifyTable(
  req: SparseVerifyRequest,
  r: SparseRange,
  t: EngramTable,
  onBytes: (n: number) => void,
  found: CopyFindings,
): Promise<VerifyLayerReport> {
  const report = found.report;
  const problems: string[] = [];
  const where = `${t.weight.fileName}: layer ${r.layer}`;
  const size = (await stat(t.weight.file)).size;
  const layer: VerifyLayerReport = {
    layer: r.layer,
    file: t.weight.fileName,
    start: r.start,
    end: r.end,
    ok: false,
    bytes: { expected: size, actual: size },
    headerOk: !found.badHeaders.has(t.weight.fileName),
    chunks: { total: 0, checked: 0, bad: 0 },
  };
  const finish = (): VerifyLayerReport => {
    layer.ok = problems.length === 0;
    report.problems.push(...problems);
    return layer;
  };
  if (r.end > t.rows) {
    problems.push(
      `${where}: the range [${r.start}, ${r.end}) is not inside the table [0, ${t.rows}) the shard header describes`,
    );
    return finish();
  }
  if (t.weight.file !== t.scale.file)
    problems.push(
      `${where}: weight and scale are in different shards (${t.scale.fileName}); the overlay needs both in one`,
    );
  const hole = firstHole(r, t);
  if (hole) {
    layer.hole = hole;
    problems.push(
      `${where}: row ${hole.row} (${hole.column}, byte ${hole.offset}) is a hole inside the copy's range [${r.start}, ${r.end}): the copy is damaged or incomplete; make it again`,
    );
  }
  const table = req.manifest.spark?.tables.find((x) => x.layer === r.layer);
  const src = sourceTable(req, r, t, where);
  const compareAll = src !== undefined && req.rows === 'full';
  const sample = src !== undefined && req.rows === 'sample' ? sampleIds(r, req.sample ?? 1000) : undefined;
  if (!table && !src) return finish();
  const res = await scanTable(scanJob(req, r, t, { table, src, sample, onBytes }));
  report.bytesRead += res.bytesRead;
  if (res.readIo !== 'none' && report.io !== 'buffered') report.io = res.readIo;
  layer.chunks = { total: table?.checksum.values.length ?? 0, checked: res.chunksChecked, bad: res.badChunkCount };
  if (res.badChunkCount > 0 && table) problems.push(badChunkFinding(layer, res, table.checksum.chunkRows, r, t, where));
  if (src) {
    layer.rows = { mode: compareAll ? 'full' : 'sample', compared: res.rowsCompared, bad: res.badRowCount };
    if (res.badRowCount > 0) {
      layer.rows.first = res.badRows[0];
      const more =
        res.badRowCount > 1 ? ` (${res.badRowCount} differing rows${compareAll ? '' : ' in the sample'})` : '';
      problems.push(`${where}: row ${res.badRows[0]} differs from the source${more}`);
    }
  }
  return finish();
}

/** The first hole inside the copy's range, weight column first, as the layer report names it. */
function firstHole(r: SparseRange, t: EngramTable): VerifyLayerReport['hole'] {
  for (const [column, offset, pitch] of [
    ['weight', t.weight.fileOffset, t.dim],
    ['scale', t.scale.fileOffset, t.dim / 32],
  ] as const) {
    const at = findHole(
      column === 'weight' ? t.weight.file : t.scale.file,
      offset + r.start * pitch,
      offset + r.end * pitch,
    );
    if (at === undefined) continue;
    return { column, row: Math.floor((at - offset) / pitch), offset: at };
  }
  return undefined;
}

/** The source snapshot's table of this layer, when a source is given: it must exist and have the copy's shape. */
function sourceTable(req: SparseVerifyRequest, r: SparseRange, t: EngramTable, where: string): SourceTable | undefined {
  const src = req.source?.tables.find((x) => x.layer === r.layer);
  if (req.source && !src)
    throw new SparkError('E_ENGRAM_NOT_FOUND', `layer ${r.layer} has no Engram table in ${req.source.snapshotDir}`);
  if (src && (src.rows !== t.rows || src.dim !== t.dim)) {
    throw new SparkError(
      'E_PACK_MISMATCH',
      `${where}: the source table is ${src.rows} x ${src.dim}, the copy's header says ${t.rows} x ${t.dim}: not the snapshot this was copied from`,
    );
  }
  return src;
}

type SparkTable = NonNullable<SparseManifest['spark']>['tables'][number];
type SourceTable = NonNullable<SparseVerifyRequest['source']>['tables'][number];

/** The native scan of one table: checksums where spark made the copy, rows against the source where given. */
function scanJob(
  req: SparseVerifyRequest,
  r: SparseRange,
  t: EngramTable,
  o: {
    table: SparkTable | undefined;
    src: SourceTable | undefined;
    sample: number[] | undefined;
    onBytes: (n: number) => void;
  },
): ScanJob {
  const { table, src, sample } = o;
  return {
    copy: {
      weightPath: t.weight.file,
      weightOffset: t.weight.fileOffset,
      scalePath: t.scale.file,
      scaleOffset: t.scale.fileOffset,
    },
    dim: t.dim,
    start: r.start,
    end: r.end,
    chunkRows: table?.checksum.chunkRows ?? PLAIN_CHUNK_ROWS,
    threads: req.threads,
    onBytes: o.onBytes,
    ...(table ? { checksums: table.checksum.values } : {}),
    ...(src
      ? {
          source: {
            weightPath: src.weight.file,
            weightOffset: src.weight.fileOffset,
            scalePath: src.scale.file,
            scaleOffset: src.scale.fileOffset,
          },
        }
      : {}),
    ...(sample ? { sample } : {}),
  };
}

/** The first bad chunk into the layer report, and the problem that names it. */
function badChunkFinding(
  layer: VerifyLayerReport,
  res: Awaited<ReturnType<typeof scanTable>>,
  chunkRows: number,
  r: SparseRange,
  t: EngramTable,
  where: string,
): string {
  const k = res.badChunks[0];
  const first = r.start + k * chunkRows;
  const last = Math.min(first + chunkRows, r.end) - 1;
  layer.chunks.first = {
    index: k,
    offset: t.weight.fileOffset + first * t.dim,
    bytes: (last - first + 1) * (t.dim + t.dim / 32),
    firstRow: first,
    lastRow: last,
  };
  const more = res.badChunkCount > 1 ? ` (${res.badChunkCount} bad chunks in all)` : '';
  return `${where}: chunk ${k} (rows ${first}-${last}) fails its checksum${more}`;
}

/** The first and last row of the range and `n` more at random (global ids, ascending). */
function sampleIds(r: SparseRange, n: number): number[] {
  const count = r.end - r.start;
  if (count === 0) return [];
  const ids = new Set<number>([r.start, r.end - 1]);
  for (let i = 0; i < n && ids.size < count; i++) ids.add(r.start + Math.floor(Math.random() * count));
  return [...ids].sort((a, b) => a - b);
}

/** spark's key: rank/world/split, its tables, the index and every header against their CRC-32s. */
async function checkSparkFiles(
  dir: string,
  m: SparseManifest,
  tables: EngramTable[],
  req: SparseVerifyRequest,
  found: CopyFindings,
): Promise<void> {
  const s = m.spark!;
  const report = found.report;
  const problems = report.problems;
  const present = m.layers
    .map((r) => tables.find((t) => t.layer === r.layer))
    .filter((t): t is EngramTable => t !== undefined);
  if (present.length === m.layers.length && (s.split !== 'heads' || req.source?.config)) {
    const wanted = packRanges(present, req.source?.config, s.rank, s.world, s.split, 'the source snapshot');
    m.layers.forEach((r, i) => {
      const w = wanted[i];
      if (w.start !== r.start || w.end !== r.end) {
        problems.push(
          `engram-local.json: layers.${r.layer} [${r.start}, ${r.end}) is not rank ${s.rank} of ${s.world} under the ${s.split} split ([${w.start}, ${w.end}))`,
        );
      }
    });
  }
  s.tables.forEach((st, i) => {
    const t = tables.find((x) => x.layer === st.layer);
    if (!t) return;
    const got = {
      rows: t.rows,
      dim: t.dim,
      shard: t.weight.fileName,
      weightOffset: t.weight.fileOffset,
      scaleOffset: t.scale.fileOffset,
    };
    for (const k of Object.keys(got) as (keyof typeof got)[]) {
      if (st[k] !== got[k])
        problems.push(
          `engram-local.json: spark.tables[${i}].${k} is ${st[k]} but the copy's shard header says ${got[k]}`,
        );
    }
  });
  const index = await readSmallBytes(join(dir, s.index.name), { what: 'index', maxBytes: SIZE_CAPS.index }).catch(
    () => undefined,
  );
  if (!index) problems.push(`${s.index.name}: is missing`);
  else if (index.length !== s.index.bytes || hex(crc32(index)) !== s.index.crc32) {
    problems.push(
      `${s.index.name}: ${index.length} bytes with CRC-32 ${hex(crc32(index))}, the manifest says ${s.index.bytes} bytes with ${s.index.crc32}: the index was changed`,
    );
  }
  for (const sh of s.shards) {
    const path = join(dir, sh.name);
    const st = await stat(path).catch(() => undefined);
    if (!st) {
      problems.push(`${sh.name}: is missing`);
      continue;
    }
    if (st.size !== sh.bytes)
      problems.push(
        `${sh.name}: apparent size ${st.size} bytes, the manifest says ${sh.bytes} (the source shard's size)`,
      );
    const header = await headerBytesOf(path);
    if (header.length !== sh.headerBytes || hex(crc32(header)) !== sh.headerCrc32) {
      found.badHeaders.add(sh.name);
      problems.push(
        `${sh.name}: header bytes (0-${sh.headerBytes - 1}) fail their checksum: the safetensors header was changed`,
      );
    }
    report.bytesRead += header.length;
  }
}

/** The index and the header bytes of every shard holding a table, byte for byte against the source's. */
async function compareWithSource(
  dir: string,
  tables: EngramTable[],
  sourceDir: string,
  found: CopyFindings,
): Promise<void> {
  const report = found.report;
  const readIndex = (d: string) => readSmallBytes(join(d, INDEX_FILE), { what: 'index', maxBytes: SIZE_CAPS.index });
  const [mine, theirs] = await Promise.all([readIndex(dir), readIndex(sourceDir).catch(() => undefined)]);
  if (theirs === undefined) {
    report.problems.push(`${INDEX_FILE}: the source ${sourceDir} has none to compare with`);
  } else {
    const at = firstDifference(mine, theirs);
    if (at !== undefined) report.problems.push(`${INDEX_FILE}: differs from the source's at byte ${at}`);
  }
  for (const name of new Set(tables.map((t) => t.weight.fileName))) {
    const [a, b] = await Promise.all([
      headerBytesOf(join(dir, name)),
      headerBytesOf(join(sourceDir, name)).catch(() => undefined),
    ]);
    report.bytesRead += a.length + (b?.length ?? 0);
    if (b === undefined) {
      report.problems.push(`${name}: the source has no shard of this name`);
      continue;
    }
    const at = firstDifference(a, b);
    if (at === undefined) continue;
    found.badHeaders.add(name);
    report.problems.push(`${name}: header bytes differ from the source's at byte ${at}`);
  }
}
