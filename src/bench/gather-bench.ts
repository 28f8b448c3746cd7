// `spark bench gather`: random-id gathers per (variant, threads, batch), with the baselines
// measured in the same run on the same files: fio random 4 KiB reads (same thread count) where
// fio is installed, and always the naive TypeScript loop. Variants:
//   snapshot, snapshot+scales   the row store's pread pool over a snapshot or sparse copy
//                               (two reads per row, or one with the scale rows resident)
//   overlay                     the serving overlay's path over the same files: one mmap with
//                               MADV_RANDOM, a WILLNEED pass, memcpy workers (native/core/mmap_gather.h)
//   packed                      the row store over spark's dense/page pack (one read per row)
// Every result says what was read: `source` (contract.md), `layout` (dense, page, or sparse for
// a sparse copy), `variant` and `reader`. The recommended SPARK_ENGRAM_THREADS comes from the
// overlay's path when it ran: that is the engine's setting.
import { cpus, totalmem } from 'node:os';
import { readModelConfig } from '../engram/config.js';
import { drawBatch, idModel, rng } from './bench-ids.js';
import { fioVersion, runFio } from './fio.js';
import { NaiveGather } from './naive-gather.js';
import { cachedFraction, evictFromCache, warmCache } from './page-cache.js';
import { engramSubTableSizes } from '../engram/primes.js';
import { openRowSource, type RowSource, type RowSourceKind, type SnapshotOpener } from '../engram/row-source.js';
import { usageError } from '../errors.js';
import type { TableSpec } from '../native/row-store.js';
import { MmapGather } from '../native/sparse.js';

export type BenchVariant = 'snapshot' | 'snapshot+scales' | 'packed' | 'overlay';

/** The variants a source can be measured with: each reads the source the way its name says. */
export const VARIANTS_OF: Record<RowSourceKind, BenchVariant[]> = {
  snapshot: ['snapshot', 'snapshot+scales', 'overlay'],
  sparse: ['snapshot', 'snapshot+scales', 'overlay'],
  packed: ['packed'],
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
  fio?: boolean;
  naive?: boolean;
  seed?: number;
  openSnapshot?: SnapshotOpener;
  /** Row store I/O choices, to measure what each one pays. */
  store?: { dedup?: boolean; merge?: boolean; fadviseRandom?: boolean };
  /** Overlay variant: the WILLNEED pass before the copies (default true, as the overlay does). */
  willneed?: boolean;
  progress?: (line: string) => void;
}

export interface GatherBenchResult {
  /** What was read (contract.md): a snapshot's (or sparse copy's) two columns, with resident scales, or a pack. */
  source: 'snapshot' | 'snapshot+scales' | 'packed';
  /** dense or page for a pack, sparse for a sparse copy; absent for a full snapshot. */
  layout?: 'dense' | 'page' | 'sparse';
  /** The --variants name that produced this result. */
  variant: BenchVariant;
  /** The row store's pread pool, or the overlay's mmap + memcpy path. */
  reader: 'pread-pool' | 'mmap';
  /** Overlay variant: false when run without the WILLNEED pass (--no-willneed). */
  willneed?: boolean;
  direct?: boolean;
  threads: number;
  batch: number;
  cold: boolean;
  rowsPerSec: number;
  mbPerSec: number;
  p50Ms: number;
  p99Ms: number;
  batchesRun: number;
  /** pread pool only (the mmap path faults pages in instead of issuing reads). */
  readsPerRow?: number;
  /** Reads the store issued per second (rows/s x reads/row): the number to hold against fio's IOPS. */
  readsPerSec?: number;
  /** Fraction of the source's bytes in the page cache when the case ended (fincore). */
  cachedAfter?: number;
  baselines: { naive?: { rowsPerSec: number }; fio?: { iops: number } };
}

export interface GatherBenchReport {
  results: GatherBenchResult[];
  recommendedThreads: number;
  /** The variant the recommendation was measured on. */
  recommendedFor: BenchVariant;
  /** What the source is: a snapshot, a sparse copy or a pack. */
  sourceKind: RowSourceKind;
  machine: { cpus: number; cpuModel: string; memGiB: number; node: string; arch: string };
  cache: string;
  fio?: string;
  layer: number;
  rows: number;
  seconds: number;
  delayUs?: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

// Batches run one after another with fresh ids each (a reused pool of ids would be served from
// the cache the first pass filled); only the gathers are timed.
interface Timed {
  rowsPerSec: number;
  p50: number;
  p99: number;
  n: number;
}

async function timeLoop(seconds: number, next: () => number[], run: (ids: number[]) => Promise<unknown>): Promise<Timed> {
  const lat: number[] = [];
  let rows = 0;
  let busy = 0;
  const deadline = performance.now() + seconds * 1000;
  for (let i = 0; performance.now() < deadline || i < 1; i++) {
    const ids = next();
    const b0 = performance.now();
    await run(ids);
    const ms = performance.now() - b0;
    lat.push(ms);
    busy += ms;
    rows += ids.length;
  }
  lat.sort((a, b) => a - b);
  return { rowsPerSec: rows / (busy / 1000), p50: percentile(lat, 50), p99: percentile(lat, 99), n: lat.length };
}

/**
 * Smallest thread count within 5% of the best rows/s at the largest batch, on the overlay's
 * path when it ran (the engine's SPARK_ENGRAM_THREADS), else on the first variant.
 */
export function recommendThreads(results: GatherBenchResult[]): { threads: number; variant: BenchVariant } {
  if (results.length === 0) return { threads: 64, variant: 'snapshot' };
  const variant = results.some((r) => r.variant === 'overlay') ? 'overlay' : results[0].variant;
  const batch = Math.max(...results.map((r) => r.batch));
  const at = results.filter((r) => r.batch === batch && r.variant === variant);
  const best = Math.max(...at.map((r) => r.rowsPerSec));
  return { threads: Math.min(...at.filter((r) => r.rowsPerSec >= 0.95 * best).map((r) => r.threads)), variant };
}

/** The byte region fio reads: the rows the source holds (a sparse copy's holes would read as free zeros). */
function mainFile(spec: TableSpec): { file: string; offset: number; size: number } {
  if (spec.kind === 'packed') {
    return { file: spec.path, offset: Number(spec.dataOffset), size: (Number(spec.end) - Number(spec.start)) * spec.stride };
  }
  const [lo, hi] = spec.range ?? [0, spec.rows];
  return { file: spec.weight.path, offset: Number(spec.weight.offset) + Number(lo) * spec.dim, size: (Number(hi) - Number(lo)) * spec.dim };
}

/** Variants asked for that this source cannot be read with are refused (exit 2), never relabelled. */
export function benchVariants(kind: RowSourceKind, asked: BenchVariant[] | undefined, delayUs: number | undefined): BenchVariant[] {
  const possible = VARIANTS_OF[kind];
  const wrong = asked?.find((v) => !possible.includes(v));
  if (wrong) throw usageError(`--variants ${wrong} cannot be measured on a ${kind === 'packed' ? 'packed directory' : kind === 'sparse' ? 'sparse copy' : 'snapshot'}: it takes ${possible.join(', ')}`);
  if (asked?.includes('overlay') && delayUs !== undefined) throw usageError('--delay-us slows the row store\'s reads; the overlay variant (mmap) has none to slow: leave it out');
  return asked ?? possible.filter((v) => v !== 'overlay' || delayUs === undefined);
}

/** The byte regions a case reads: a pack's data file, or the weight and scale rows the source holds. */
function regions(spec: TableSpec): { path: string; offset: number; length: number }[] {
  if (spec.kind === 'packed') return [{ path: spec.path, offset: 0, length: Infinity }];
  const [lo, hi] = (spec.range ?? [0, spec.rows]).map(Number);
  const sb = spec.dim / 32;
  return [
    { path: spec.weight.path, offset: Number(spec.weight.offset) + lo * spec.dim, length: (hi - lo) * spec.dim },
    { path: spec.scale.path, offset: Number(spec.scale.offset) + lo * sb, length: (hi - lo) * sb },
  ];
}

export async function runGatherBench(o: GatherBenchOptions): Promise<GatherBenchReport> {
  const say = o.progress ?? (() => {});
  const probe = await openRowSource(o.source, { threads: 1, direct: o.direct, openSnapshot: o.openSnapshot, layers: o.layer === undefined ? undefined : [o.layer] });
  const table = probe.tables[0];
  const spec = probe.specs[0];
  const files = [...new Set(probe.files.filter((f) => f.layer === table.layer).map((f) => f.path))];
  const kind = probe.kind;
  await probe.close();
  const variants = benchVariants(kind, o.variants, o.delayUs);
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
  const prepare = async (): Promise<void> => {
    if (o.cold) for (const f of files) evictFromCache(f);
    // Only the rows the source holds: a sparse copy's holes would fill the cache with zeros.
    else for (const r of regions(spec)) await warmCache(r.path, r.offset, r.length);
  };
  const cachedAfter = (): number | undefined => {
    const fr = files.map(cachedFraction);
    return fr.some((x) => x === undefined) ? undefined : (fr as number[]).reduce((a, b) => a + b, 0) / fr.length;
  };

  // Baselines first: they depend on the batch (naive) or the thread count (fio), not both. The
  // naive loop reads two pieces per row, or one with resident scales.
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
  // fio runs right before the cases of the same thread count, so both see the same moment of
  // a shared, noisy machine.
  const fioIops = new Map<number, number>();
  const fioAt = async (t: number): Promise<void> => {
    if (!fio || fioIops.has(t)) return;
    await prepare();
    const iops = runFio({ ...mainFile(spec), threads: t, seconds: o.seconds, direct: Boolean(o.direct && layout === 'page'), keepCache: !o.cold });
    fioIops.set(t, iops);
    say(`fio ${t} threads: ${Math.round(iops)} IOPS`);
  };

  const results: GatherBenchResult[] = [];
  const record = (v: BenchVariant, t: number, b: number, r: Timed, extra: Partial<GatherBenchResult>): void => {
    const res: GatherBenchResult = {
      source: v === 'overlay' ? 'snapshot' : v,
      ...(layout ? { layout } : {}),
      variant: v,
      reader: v === 'overlay' ? 'mmap' : 'pread-pool',
      ...extra,
      threads: t,
      batch: b,
      cold: o.cold,
      rowsPerSec: r.rowsPerSec,
      mbPerSec: (r.rowsPerSec * table.rowBytes) / 1e6,
      p50Ms: r.p50,
      p99Ms: r.p99,
      batchesRun: r.n,
      cachedAfter: cachedAfter(),
      baselines: {},
    };
    const nv = naive.get(`${v === 'snapshot+scales'}/${b}`);
    if (nv !== undefined) res.baselines.naive = { rowsPerSec: nv };
    const fi = fioIops.get(t);
    if (fi !== undefined) res.baselines.fio = { iops: fi };
    results.push(res);
    say(`${v} threads ${t} batch ${b}: ${Math.round(r.rowsPerSec)} rows/s, p50 ${r.p50.toFixed(2)} ms`);
  };

  for (const v of variants) {
    for (const t of o.threads) {
      await fioAt(t);
      if (v === 'overlay') {
        for (const b of o.batches) {
          await prepare();
          // Mapped per case: pages this process has mapped in cannot be evicted for the next cold case.
          const willneed = o.willneed !== false;
          const g = MmapGather.open([overlayTable(spec, table)], { threads: t, willneed });
          try {
            record(v, t, b, await timeLoop(o.seconds, fresh(b), (ids) => g.gather(table.layer, ids)), { willneed });
          } finally {
            await g.close();
          }
        }
        continue;
      }
      const src: RowSource = await openRowSource(o.source, {
        threads: t,
        layers: [table.layer],
        direct: o.direct,
        residentScales: v === 'snapshot+scales',
        openSnapshot: o.openSnapshot,
        faults: o.delayUs ? { delayUs: o.delayUs } : undefined,
        ...o.store,
      });
      try {
        const directActive = src.store.tables()[0].directActive;
        for (const b of o.batches) {
          // One output buffer per case, as a serving loop reuses its own: a fresh 13 MB buffer
          // per batch would add thousands of first-touch page faults inside the reads.
          const out = Buffer.alloc(b * table.rowBytes);
          await prepare();
          const before = src.store.stats();
          const r = await timeLoop(o.seconds, fresh(b), (ids) => src.store.gather(table.layer, ids, out));
          const after = src.store.stats();
          const readsPerRow = (after.reads - before.reads) / Math.max(1, after.rows - before.rows);
          record(v, t, b, r, { ...(spec.kind === 'packed' ? { direct: directActive } : {}), readsPerRow, readsPerSec: r.rowsPerSec * readsPerRow });
        }
      } finally {
        await src.close();
      }
    }
  }
  const recommended = recommendThreads(results);
  return {
    results,
    recommendedThreads: recommended.threads,
    recommendedFor: recommended.variant,
    sourceKind: kind,
    machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', memGiB: Math.round(totalmem() / 2 ** 30), node: process.version, arch: process.arch },
    cache: o.cold
      ? 'cold: each case starts with the source files evicted from the page cache (posix_fadvise DONTNEED via dd iflag=nocache); fio drops them too (invalidate=1)'
      : 'warm: each case starts with the rows the source holds read once into the page cache',
    ...(fio ? { fio } : {}),
    layer: table.layer,
    rows: table.rows,
    seconds: o.seconds,
    ...(o.delayUs ? { delayUs: o.delayUs } : {}),
  };
}

/** The overlay's view of the table: the same files and offsets, owning the rows the source holds. */
function overlayTable(spec: TableSpec, table: { layer: number; rows: number; dim: number; start: number; end: number }) {
  if (spec.kind !== 'snapshot') throw new Error('the overlay variant reads snapshots and sparse copies only');
  return {
    layer: table.layer,
    rows: table.rows,
    dim: table.dim,
    weightPath: spec.weight.path,
    weightOffset: Number(spec.weight.offset),
    scalePath: spec.scale.path,
    scaleOffset: Number(spec.scale.offset),
    lo: table.start,
    hi: table.end,
  };
}
