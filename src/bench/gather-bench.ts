// `spark bench gather`: random-id gathers per (variant, threads, batch), measured against the
// device and against baselines in the same run on the same bytes:
//   ceiling   fio, 4 KiB random reads, O_DIRECT, io_uring (libaio fallback), 2 jobs x QD 128,
//             before the first case and after the last: every case is a fraction of it
//   psync     fio with one blocking reader per thread (the case's thread count)
//   naive     a TypeScript fs.read loop
// Variants:
//   snapshot, snapshot+scales   the row store's pread pool over a snapshot or sparse copy
//                               (two reads per row, or one with the scale rows resident)
//   overlay                     the serving overlay's path over the same files: one mmap with
//                               MADV_RANDOM, a WILLNEED pass, memcpy workers (a baseline:
//                               bench/baselines/overlay-mmap/mmap_gather.h)
//   packed                      the row store over spark's dense/page pack (one read per row)
//   mia                         the Mia stack's reader over the same dense pack (mia-case.ts):
//                               when packed runs too, each case runs both on the same batches,
//                               interleaved batch by batch (the first engine of --engines)
// Every result says what was read: `source` (docs/row-store.md), `layout` (dense, page, or sparse for
// a sparse copy), `variant` and `reader`. The recommended SPARK_ENGRAM_THREADS comes from the
// overlay's path when it ran: that is the engine's setting.
import { existsSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { readModelConfig } from '../engram/config.js';
import { drawBatch, idModel, rng } from './bench-ids.js';
import { coldVerdict, pageCacheLimit, type ColdVerdict, type PageCacheLimit } from './cold.js';
import { closeCeiling, fioVersion, measureCeiling, runFio, type Ceiling, type FioResult } from './fio.js';
import {
  ceilingFractions,
  ceilingShortfall,
  pairMergeGains,
  recommendThreads,
  storeNumbers,
  timedNumbers,
  type BenchEngine,
  type BenchVariant,
  type GatherBenchResult,
} from './gather-result.js';
import { NaiveGather } from './naive-gather.js';
import { cachedBytes, evictFromCache, warmCache } from './page-cache.js';
import { overlayTable, readRegions, regionBytes } from './read-range.js';
import { inProcess, timeInterleaved, timeLoop, type Timed } from './time-loop.js';
import { MIA_CACHE_DEFAULT, miaTarget, openMiaCase, type MiaCacheOptions } from './mia-case.js';
import { miaDriverPath } from './mia-reader.js';
import { engramSubTableSizes } from '../engram/primes.js';
import { openRowSource, type RowSource, type RowSourceKind, type SnapshotOpener } from '../engram/row-source.js';
import { usageError } from '../errors.js';
import { loadOverlayBaseline, MmapGather } from '../native/overlay-baseline.js';

export { recommendThreads, type BenchEngine, type BenchVariant, type GatherBenchResult } from './gather-result.js';

/** The variants a source can be measured with: each reads the source the way its name says. */
export const VARIANTS_OF: Record<RowSourceKind, BenchVariant[]> = {
  snapshot: ['snapshot', 'snapshot+scales', 'overlay'],
  sparse: ['snapshot', 'snapshot+scales', 'overlay'],
  packed: ['packed', 'mia'],
};

export interface GatherBenchOptions {
  source: string;
  layer?: number;
  threads: number[];
  batches: number[];
  seconds: number;
  cold: boolean;
  /** Variants to run; default: snapshot and snapshot+scales for a snapshot, packed for a pack. */
  variants?: BenchVariant[];
  direct?: boolean;
  delayUs?: number;
  /** fio runs: the device ceiling and the psync baseline (default true where fio is installed). */
  fio?: boolean;
  naive?: boolean;
  seed?: number;
  openSnapshot?: SnapshotOpener;
  /** Row store engines to run the row store variants on (default pread). */
  engines?: BenchEngine[];
  /** Row store I/O choices, to measure what each one pays. */
  store?: { dedup?: boolean; merge?: boolean; fadviseRandom?: boolean; mapCached?: boolean };
  /** Pread pool: run every case again with merging off and report rows/s merged over unmerged. */
  mergeGain?: boolean;
  /** Cold: evict the source before every batch (untimed), not only before every case. */
  evictEveryBatch?: boolean;
  /** Root for /proc and /sys when sizing the page cache (tests). */
  sysRoot?: string;
  /** Overlay variant: the WILLNEED pass before the copies (default true, as the overlay does). */
  willneed?: boolean;
  /** Mia variant: its row cache's budget and ways (default MIA_CACHE_DEFAULT). */
  mia?: MiaCacheOptions;
  progress?: (line: string) => void;
}

export interface GatherBenchReport {
  results: GatherBenchResult[];
  recommendedThreads: number;
  /** The variant the recommendation was measured on. */
  recommendedFor: BenchVariant;
  /** What the source is: a snapshot, a sparse copy or a pack. */
  sourceKind: RowSourceKind;
  machine: {
    cpus: number;
    cpuModel: string;
    memGiB: number;
    node: string;
    arch: string;
    loadAvgBefore: number[];
    loadAvgAfter: number[];
  };
  cache: string;
  /** Bytes the cases can read (readRegions) and the page cache they are compared with. */
  readRangeBytes: number;
  pageCache?: { limitBytes: number; from: string };
  /** Cold runs: the verdict for buffered reads (O_DIRECT cases are always cold). */
  cold?: ColdVerdict;
  /** The device ceiling measured in this run, or why there is none. */
  ceiling?: Ceiling;
  ceilingNote?: string;
  /** Set when a case took more from the device than the ceiling (largest reads/ceil): the ceiling was measured low. */
  ceilingExceeded?: number;
  fio?: string;
  layer: number;
  rows: number;
  seconds: number;
  delayUs?: number;
}

/**
 * Variants asked for that this source cannot be read with are refused (exit 2), never
 * relabelled. `miaRefused`: why the Mia reader cannot read this pack (it is then left out of
 * the default and refused when asked for).
 */
export function benchVariants(
  kind: RowSourceKind,
  asked: BenchVariant[] | undefined,
  delayUs: number | undefined,
  miaRefused?: string,
): BenchVariant[] {
  const possible = VARIANTS_OF[kind];
  const wrong = asked?.find((v) => !possible.includes(v));
  if (wrong)
    throw usageError(
      `--variants ${wrong} cannot be measured on a ${kind === 'packed' ? 'packed directory' : kind === 'sparse' ? 'sparse copy' : 'snapshot'}: it takes ${possible.join(', ')}`,
    );
  for (const v of ['overlay', 'mia'] as const) {
    if (asked?.includes(v) && delayUs !== undefined)
      throw usageError(`--delay-us slows the row store's reads; the ${v} variant has none to slow: leave it out`);
  }
  if (asked?.includes('mia') && miaRefused) throw usageError(`--variants mia: ${miaRefused}`);
  return (
    asked ??
    possible.filter((v) => (v !== 'overlay' && v !== 'mia') || (delayUs === undefined && (v !== 'mia' || !miaRefused)))
  );
}

export async function runGatherBench(o: GatherBenchOptions): Promise<GatherBenchReport> {
  const say = o.progress ?? (() => {});
  const loadAvgBefore = loadavg();
  const probe = await openRowSource(o.source, {
    threads: 1,
    direct: o.direct,
    openSnapshot: o.openSnapshot,
    layers: o.layer === undefined ? undefined : [o.layer],
  });
  const table = probe.tables[0];
  const spec = probe.specs[0];
  const files = [...new Set(probe.files.filter((f) => f.layer === table.layer).map((f) => f.path))];
  const kind = probe.kind;
  await probe.close();
  const mia = kind === 'packed' ? miaTarget(spec, table) : { refused: 'it reads packs only' };
  const miaRefused =
    'refused' in mia
      ? mia.refused
      : existsSync(miaDriverPath())
        ? undefined
        : `the Mia baseline is not built (${miaDriverPath()} missing): run 'npm run build:native'`;
  const variants = benchVariants(kind, o.variants, o.delayUs, miaRefused);
  if (variants.includes('overlay')) loadOverlayBaseline();
  const miaCache = o.mia ?? MIA_CACHE_DEFAULT;
  if (o.delayUs !== undefined && o.engines?.includes('uring'))
    throw usageError(
      "--delay-us slows the pread pool's reads; the uring engine does not sleep per read: leave uring out of --engines",
    );
  let sizes: number[] | undefined;
  if (kind === 'snapshot') {
    const cfg = await readModelConfig(o.source).catch(() => undefined);
    const s = cfg?.engram ? engramSubTableSizes(cfg.engram).get(table.layer) : undefined;
    if (s && s.reduce((a, b) => a + b, 0) === table.rows) sizes = s;
  }
  const model = idModel(table.rows, table.start, table.end, sizes);
  const random = rng(o.seed ?? 1);
  const fresh = (b: number) => () => drawBatch(model, b, random);
  const fio = o.fio !== false && o.delayUs === undefined ? fioVersion() : undefined;
  const layout = spec.kind === 'packed' ? spec.layout : kind === 'sparse' ? 'sparse' : undefined;
  const regions = readRegions(spec);
  const readRangeBytes = regionBytes(regions);
  const limit: PageCacheLimit | undefined = pageCacheLimit(o.sysRoot);
  const verdict = (direct: boolean): ColdVerdict =>
    coldVerdict({ direct, evictEveryBatch: Boolean(o.evictEveryBatch), readRangeBytes, limit });
  const evict = (): void => {
    for (const f of files) evictFromCache(f);
  };
  const prepare = async (): Promise<void> => {
    if (o.cold) evict();
    // Only the rows the source holds: a sparse copy's holes would fill the cache with zeros.
    else for (const r of regions) await warmCache(r.path, r.offset, r.length);
  };
  const betweenBatches = o.cold && o.evictEveryBatch ? evict : undefined;
  const cachedAfter = (): number | undefined => {
    const bytes = files.map(cachedBytes);
    if (bytes.some((x) => x === undefined) || readRangeBytes <= 0) return undefined;
    return Math.min(1, (bytes as number[]).reduce((a, b) => a + b, 0) / readRangeBytes);
  };

  // The device ceiling first (O_DIRECT: it leaves the page cache alone), over the large region.
  const main = regions[0];
  const region = { file: main.path, offset: main.offset, size: main.length, seconds: o.seconds };
  const measured = fio
    ? measureCeiling(region)
    : {
        note:
          o.delayUs !== undefined
            ? 'no device ceiling: a delay is injected'
            : 'no device ceiling: fio skipped or not installed',
      };
  let ceiling = 'iops' in measured ? measured : undefined;
  if (ceiling)
    say(
      `device ceiling (fio ${ceiling.engine}, direct, ${ceiling.jobs} x QD ${ceiling.iodepth}): ${Math.round(ceiling.iops)} IOPS`,
    );
  else say(measured.note ?? '');

  // Baselines next: they depend on the batch (naive) or the thread count (psync fio), not both.
  // The naive loop reads two pieces per row, or one with resident scales.
  const naive = new Map<string, number>();
  if (o.naive !== false && o.delayUs === undefined) {
    for (const resident of [...new Set(variants.map((v) => v === 'snapshot+scales'))]) {
      const ng = await NaiveGather.open(spec, resident);
      for (const b of o.batches) {
        await prepare();
        const t = await timeLoop(o.seconds, fresh(b), (ids) => ng.gather(ids));
        naive.set(`${resident}/${b}`, t.rowsPerSec);
        say(`naive${resident ? ' (resident scales)' : ''} batch ${b}: ${Math.round(t.rowsPerSec)} rows/s`);
      }
      await ng.close();
    }
  }
  // psync fio runs right before the cases of the same thread count, so both see the same
  // moment of a shared, noisy machine.
  const psync = new Map<number, FioResult & { direct: boolean }>();
  const psyncAt = async (t: number): Promise<void> => {
    if (!fio || psync.has(t)) return;
    await prepare();
    const direct = Boolean(o.direct && layout === 'page');
    try {
      psync.set(t, { ...runFio({ ...region, threads: t, direct, keepCache: !o.cold }), direct });
      say(`fio psync ${t} jobs: ${Math.round(psync.get(t)!.iops)} IOPS`);
    } catch (err) {
      say((err as Error).message);
    }
  };

  const results: GatherBenchResult[] = [];
  const record = (v: BenchVariant, t: number, b: number, r: Timed, extra: Partial<GatherBenchResult>): void => {
    const res: GatherBenchResult = {
      source: v === 'overlay' ? 'snapshot' : v === 'mia' ? 'packed' : v,
      ...(layout ? { layout } : {}),
      variant: v,
      reader: v === 'overlay' ? 'mmap' : v === 'mia' ? 'mia-pool' : 'pread-pool',
      ...extra,
      threads: t,
      batch: b,
      cold: o.cold,
      ...(o.cold ? coldFields(verdict(extra.direct === true)) : {}),
      rowsPerSec: r.rowsPerSec,
      mbPerSec: (r.rowsPerSec * table.rowBytes) / 1e6,
      p50Ms: r.p50,
      p99Ms: r.p99,
      batchesRun: r.n,
      ...timedNumbers(r),
      cachedAfter: cachedAfter(),
      baselines: {},
    };
    const nv = naive.get(`${v === 'snapshot+scales'}/${b}`);
    if (nv !== undefined) res.baselines.naive = { rowsPerSec: nv };
    const ps = psync.get(t);
    if (ps !== undefined) res.baselines.fio = { iops: ps.iops, engine: 'psync', jobs: t, direct: ps.direct };
    results.push(res);
    say(
      `${v} (${res.reader})${extra.merge === false ? ' (no merge)' : ''} threads ${t} batch ${b}: ${Math.round(r.rowsPerSec)} rows/s, p50 ${r.p50.toFixed(2)} ms`,
    );
  };
  // The Mia reader for one case, when it runs: alone, or paired with the row store's first engine.
  const miaPaired = variants.includes('mia') && variants.includes('packed');
  const openMia = (t: number) =>
    variants.includes('mia') && !('refused' in mia) ? openMiaCase(mia, t, miaCache) : undefined;
  const recordMia = async (
    m: Awaited<ReturnType<typeof openMiaCase>>,
    t: number,
    b: number,
    r: Timed,
  ): Promise<void> => {
    record('mia', t, b, r, await m.finish(r.rowsPerSec));
  };

  for (const v of variants) {
    if (v === 'mia' && miaPaired) continue; // measured beside packed, below
    for (const t of o.threads) {
      await psyncAt(t);
      if (v === 'mia') {
        for (const b of o.batches) {
          await prepare();
          const m = (await openMia(t))!;
          await recordMia(m, t, b, (await timeInterleaved(o.seconds, fresh(b), [m.run], betweenBatches))[0]);
        }
        continue;
      }
      if (v === 'overlay') {
        const willneed = o.willneed !== false;
        for (const b of o.batches) {
          await prepare();
          // Mapped per case (per batch with --evict-every-batch): pages this process has
          // mapped cannot be evicted.
          const open = () => MmapGather.open([overlayTable(spec, table)], { threads: t, willneed });
          let g = open();
          try {
            const between = betweenBatches
              ? async () => {
                  await g.close();
                  betweenBatches();
                  g = open();
                }
              : undefined;
            record(v, t, b, await timeLoop(o.seconds, fresh(b), (ids) => g.gather(table.layer, ids), between), {
              willneed,
            });
          } finally {
            await g.close();
          }
        }
        continue;
      }
      const engines = o.engines ?? ['pread'];
      for (const engine of engines)
        for (const merge of o.mergeGain ? [true, false] : [o.store?.merge !== false]) {
          const src: RowSource = await openRowSource(o.source, {
            threads: t,
            ioEngine: engine,
            ...(engine === 'uring' ? { ioDepth: t } : {}),
            layers: [table.layer],
            direct: o.direct,
            residentScales: v === 'snapshot+scales',
            openSnapshot: o.openSnapshot,
            faults: o.delayUs ? { delayUs: o.delayUs } : undefined,
            ...o.store,
            // Cold cases read every row: a page mapped into this process cannot be evicted
            // between batches, so copies out of the mapping would turn a cold case warm.
            mapCached: !o.cold && o.store?.mapCached !== false,
            merge,
          });
          try {
            const directActive = src.store.tables()[0].directActive;
            for (const b of o.batches) {
              // One output buffer per case, as a serving loop reuses its own: a fresh 13 MB buffer
              // per batch would add thousands of first-touch page faults inside the reads.
              const out = Buffer.alloc(b * table.rowBytes);
              await prepare();
              // The cache was warmed behind the store's back: tell it, as a store opened on a warm cache learns at open.
              if (!o.cold) await src.store.learnCached();
              const before = src.store.stats();
              const gather = inProcess((ids) => src.store.gather(table.layer, ids, out));
              // The Mia reader runs beside the first engine's merged case, on the same batches.
              const m =
                v === 'packed' && miaPaired && engine === engines[0] && merge === (o.store?.merge !== false)
                  ? await openMia(t)
                  : undefined;
              const [r, rm] = await timeInterleaved(
                o.seconds,
                fresh(b),
                m ? [gather, m.run] : [gather],
                betweenBatches,
              );
              const after = src.store.stats();
              const delta = {
                rows: after.rows - before.rows,
                reads: after.reads - before.reads,
                duplicates: after.duplicates - before.duplicates,
                merged: after.merged - before.merged,
                mappedRows: after.mappedRows - before.mappedRows,
              };
              record(v, t, b, r, {
                ...(spec.kind === 'packed' ? { direct: directActive } : {}),
                reader: engine === 'uring' ? 'uring' : 'pread-pool',
                ...(merge ? {} : { merge: false }),
                ...storeNumbers(delta, r.rowsPerSec),
              });
              if (m) await recordMia(m, t, b, rm);
            }
          } finally {
            await src.close();
          }
        }
    }
  }
  if (ceiling) {
    ceiling = closeCeiling(ceiling);
    say(`device ceiling after the cases: ${Math.round(ceiling.iopsAfter ?? NaN)} IOPS`);
  }
  for (const r of results) {
    const f = ceilingFractions(r, ceiling);
    if (f) r.ofCeiling = f;
  }
  pairMergeGains(results);
  const exceeded = ceilingShortfall(results);
  const recommended = recommendThreads(results);
  return {
    results,
    recommendedThreads: recommended.threads,
    recommendedFor: recommended.variant,
    sourceKind: kind,
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      memGiB: Math.round(totalmem() / 2 ** 30),
      node: process.version,
      arch: process.arch,
      loadAvgBefore,
      loadAvgAfter: loadavg(),
    },
    cache: o.cold
      ? `cold: the source files are evicted from the page cache (posix_fadvise DONTNEED via dd iflag=nocache) before every ${o.evictEveryBatch ? 'batch' : 'case'}; psync fio drops them too (invalidate=1)`
      : 'warm: each case starts with the rows the source holds read once into the page cache',
    readRangeBytes,
    ...(limit ? { pageCache: { limitBytes: limit.bytes, from: limit.from } } : {}),
    ...(o.cold ? { cold: verdict(false) } : {}),
    ...(ceiling ? { ceiling } : { ceilingNote: measured.note }),
    ...(exceeded !== undefined ? { ceilingExceeded: exceeded } : {}),
    ...(fio ? { fio } : {}),
    layer: table.layer,
    rows: table.rows,
    seconds: o.seconds,
    ...(o.delayUs ? { delayUs: o.delayUs } : {}),
  };
}

function coldFields(v: ColdVerdict): Pick<GatherBenchResult, 'coldValid' | 'coldReason'> {
  return { coldValid: v.valid, coldReason: v.reason };
}
