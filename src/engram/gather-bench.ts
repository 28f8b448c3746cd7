// `spark bench gather`: random-id gathers through the row store per (variant, threads, batch),
// with the baselines measured in the same run on the same files: fio random 4 KiB reads (same
// thread count) where fio is installed, and always the naive TypeScript loop.
import { cpus, totalmem } from 'node:os';
import { usageError } from '../errors.js';
import { readModelConfig } from './config.js';
import { drawBatch, idModel, rng } from './bench-ids.js';
import { fioVersion, runFio } from './fio.js';
import { NaiveGather } from './naive-gather.js';
import { cachedFraction, evictFromCache, warmCache } from './page-cache.js';
import { engramSubTableSizes } from './primes.js';
import { openRowSource, type RowSource, type SnapshotOpener } from './row-source.js';
import type { TableSpec } from '../native/row-store.js';

export type BenchVariant = 'snapshot' | 'snapshot+scales' | 'packed';

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
  progress?: (line: string) => void;
}

export interface GatherBenchResult {
  source: BenchVariant;
  layout?: 'dense' | 'page';
  direct?: boolean;
  threads: number;
  batch: number;
  cold: boolean;
  rowsPerSec: number;
  mbPerSec: number;
  p50Ms: number;
  p99Ms: number;
  batchesRun: number;
  readsPerRow: number;
  /** Reads the store issued per second (rows/s x reads/row): the number to hold against fio's IOPS. */
  readsPerSec: number;
  /** Fraction of the source's bytes in the page cache when the case ended (fincore). */
  cachedAfter?: number;
  baselines: { naive?: { rowsPerSec: number }; fio?: { iops: number } };
}

export interface GatherBenchReport {
  results: GatherBenchResult[];
  recommendedThreads: number;
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
async function timeLoop(seconds: number, next: () => number[], run: (ids: number[]) => Promise<unknown>) {
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

/** Smallest thread count within 5% of the best rows/s at the largest batch. */
export function recommendThreads(results: GatherBenchResult[]): number {
  if (results.length === 0) return 64;
  const batch = Math.max(...results.map((r) => r.batch));
  const at = results.filter((r) => r.batch === batch && r.source === results[0].source);
  const best = Math.max(...at.map((r) => r.rowsPerSec));
  return Math.min(...at.filter((r) => r.rowsPerSec >= 0.95 * best).map((r) => r.threads));
}

function mainFile(spec: TableSpec): { file: string; offset: number; size: number } {
  if (spec.kind === 'packed') {
    return { file: spec.path, offset: Number(spec.dataOffset), size: (Number(spec.end) - Number(spec.start)) * spec.stride };
  }
  return { file: spec.weight.path, offset: Number(spec.weight.offset), size: Number(spec.rows) * spec.dim };
}

export async function runGatherBench(o: GatherBenchOptions): Promise<GatherBenchReport> {
  const say = o.progress ?? (() => {});
  const probe = await openRowSource(o.source, { threads: 1, direct: o.direct, openSnapshot: o.openSnapshot, layers: o.layer === undefined ? undefined : [o.layer] });
  const table = probe.tables[0];
  const spec = probe.specs[0];
  const files = [...new Set(probe.files.filter((f) => f.layer === table.layer).map((f) => f.path))];
  const kind = probe.kind;
  await probe.close();
  let sizes: number[] | undefined;
  if (kind === 'snapshot') {
    const cfg = await readModelConfig(o.source).catch(() => undefined);
    const s = cfg?.engram ? engramSubTableSizes(cfg.engram).get(table.layer) : undefined;
    if (s && s.reduce((a, b) => a + b, 0) === table.rows) sizes = s;
  }
  const model = idModel(table.rows, table.start, table.end, sizes);
  const random = rng(o.seed ?? 1);
  const fresh = (b: number) => () => drawBatch(model, b, random);
  const supported: BenchVariant[] = kind === 'packed' ? ['packed'] : ['snapshot', 'snapshot+scales'];
  // A result is labelled with what it read: a variant the source cannot serve is refused, not
  // measured on the source's own reads under another name.
  const unsupported = o.variants?.filter((v) => !supported.includes(v)) ?? [];
  if (unsupported.length > 0) {
    throw usageError(`--variants ${unsupported.join(',')}: ${o.source} is a ${kind === 'packed' ? 'packed directory' : 'snapshot'}, which serves ${supported.join(', ')}`, {
      path: o.source,
    });
  }
  const variants = o.variants ?? supported;
  const fio = o.fio !== false && o.delayUs === undefined ? fioVersion() : undefined;
  const layout = spec.kind === 'packed' ? spec.layout : undefined;
  const prepare = async (): Promise<void> => {
    if (o.cold) for (const f of files) evictFromCache(f);
    else for (const f of files) await warmCache(f);
  };
  const cachedAfter = (): number | undefined => {
    const fr = files.map(cachedFraction);
    return fr.some((x) => x === undefined) ? undefined : (fr as number[]).reduce((a, b) => a + b, 0) / fr.length;
  };

  // Baselines first: they depend on the batch (naive) or the thread count (fio), not both.
  const naive = new Map<string, number>();
  if (o.naive !== false && o.delayUs === undefined) {
    for (const v of variants) {
      const ng = await NaiveGather.open(spec, v === 'snapshot+scales');
      for (const b of o.batches) {
        await prepare();
        const t = await timeLoop(o.seconds, fresh(b), (ids) => ng.gather(ids));
        naive.set(`${v}/${b}`, t.rowsPerSec);
        say(`naive ${v} batch ${b}: ${Math.round(t.rowsPerSec)} rows/s`);
      }
      await ng.close();
    }
  }
  // fio runs right before the row store's cases of the same thread count, so both see the
  // same moment of a shared, noisy machine.
  const fioIops = new Map<number, number>();
  const fioAt = async (t: number): Promise<void> => {
    if (!fio || fioIops.has(t)) return;
    await prepare();
    const iops = runFio({ ...mainFile(spec), threads: t, seconds: o.seconds, direct: Boolean(o.direct && layout === 'page'), keepCache: !o.cold });
    fioIops.set(t, iops);
    say(`fio ${t} threads: ${Math.round(iops)} IOPS`);
  };

  const results: GatherBenchResult[] = [];
  for (const v of variants) {
    for (const t of o.threads) {
      await fioAt(t);
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
          const res: GatherBenchResult = {
            source: v,
            ...(layout ? { layout } : {}),
            ...(spec.kind === 'packed' ? { direct: directActive } : {}),
            threads: t,
            batch: b,
            cold: o.cold,
            rowsPerSec: r.rowsPerSec,
            mbPerSec: (r.rowsPerSec * table.rowBytes) / 1e6,
            p50Ms: r.p50,
            p99Ms: r.p99,
            batchesRun: r.n,
            readsPerRow: (after.reads - before.reads) / Math.max(1, after.rows - before.rows),
            readsPerSec: (r.rowsPerSec * (after.reads - before.reads)) / Math.max(1, after.rows - before.rows),
            cachedAfter: cachedAfter(),
            baselines: {},
          };
          const nv = naive.get(`${v}/${b}`);
          if (nv !== undefined) res.baselines.naive = { rowsPerSec: nv };
          const fi = fioIops.get(t);
          if (fi !== undefined) res.baselines.fio = { iops: fi };
          results.push(res);
          say(`${v} threads ${t} batch ${b}: ${Math.round(r.rowsPerSec)} rows/s, p50 ${r.p50.toFixed(2)} ms`);
        }
      } finally {
        await src.close();
      }
    }
  }
  return {
    results,
    recommendedThreads: recommendThreads(results),
    machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', memGiB: Math.round(totalmem() / 2 ** 30), node: process.version, arch: process.arch },
    cache: o.cold
      ? 'cold: each case starts with the source files evicted from the page cache (posix_fadvise DONTNEED via dd iflag=nocache); fio drops them too (invalidate=1)'
      : 'warm: each case starts with the source files read once into the page cache',
    ...(fio ? { fio } : {}),
    layer: table.layer,
    rows: table.rows,
    seconds: o.seconds,
    ...(o.delayUs ? { delayUs: o.delayUs } : {}),
  };
}
