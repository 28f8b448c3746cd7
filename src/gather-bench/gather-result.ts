// What one gather case reports, and the numbers derived from its raw counts: reads and rows
// as fractions of the device ceiling, CPU time per row, what de-duplication and page merging
// saved. Pure functions, so the arithmetic is tested apart from the I/O.
import { readerOf } from './originals.js';
import type { Ceiling, FioEngine } from './fio.js';
import type { Timed } from './time-loop.js';

/** A row store variant ('snapshot', 'snapshot+scales', 'packed') or a stack's name: its own reader (originals.ts). */
export type BenchVariant = string;
/** The row store's read engines (RowStoreOptions.ioEngine), measured side by side. */
export type BenchEngine = 'pread' | 'uring';

export interface GatherBenchResult {
  /** What was read (docs/row-store.md, bench gather's JSON): a snapshot's (or sparse copy's) two columns, with resident scales, or a pack. */
  /** What the variant reads: 'snapshot', 'snapshot+scales', 'packed' (a stack's reader: its room's `original.source`). */
  source: string;
  /** dense or page for a pack, sparse for a sparse copy; absent for a full snapshot. */
  layout?: string;
  /** The --variants name that produced this result. */
  variant: BenchVariant;
  /**
   * The row store's pread pool or io_uring engine (threads = its queue depth), the overlay's
   * mmap + memcpy path, or the Mia stack's pool (bench/baselines/mia-row-store: DSV41_IO_THREADS
   * = threads, one O_DIRECT read per miss, its row cache).
   */
  reader: 'pread-pool' | 'uring' | 'mmap' | 'mia-pool';
  /** Overlay variant: false when run without the WILLNEED pass (--no-willneed). */
  willneed?: boolean;
  direct?: boolean;
  /** Pread pool: false for the no-merge rerun of --merge-gain. */
  merge?: boolean;
  threads: number;
  batch: number;
  cold: boolean;
  /** Cold cases: whether the case could only read from the device (cold.ts), and why. */
  coldValid?: boolean;
  coldReason?: string;
  rowsPerSec: number;
  mbPerSec: number;
  p50Ms: number;
  p99Ms: number;
  batchesRun: number;
  /** Process CPU time (user + sys, all threads) while gathers ran, per row delivered. */
  cpuUsPerRow: number;
  /** Pread pool: reads issued per row delivered (2 for a snapshot's two columns, less when merged). */
  readsPerRow?: number;
  /** Pread pool: reads issued per second: the number to hold against the ceiling's IOPS. */
  readsPerSec?: number;
  /** Pread pool: rows served by copying a duplicate of the same batch, per row delivered. */
  duplicateFraction?: number;
  /** Pread pool: row pieces that shared a read with a neighbour, per row piece read. */
  mergedFraction?: number;
  /** Row store: rows copied out of a mapping of the file (pages known cached, no read call), per row delivered. */
  mappedFraction?: number;
  /** With --merge-gain: rows/s of this case over the same case with merging off. */
  mergeGain?: number;
  /** Bytes fetched from storage (page-cache misses, O_DIRECT) per second, in 4 KiB pages. */
  devicePagesPerSec?: number;
  /** Fractions of the device ceiling's IOPS (same run): rows/s, reads/s, device pages/s. */
  ofCeiling?: { rows: number; reads?: number; devicePages?: number };
  /** Mia variant: its row cache as configured and as it did (hits over lookups of owned ids). */
  mia?: {
    budgetBytes: number;
    ways: number;
    cacheSlots: number;
    cacheBytes: number;
    ioThreads: number;
    hitRate: number;
  };
  /** Page-cache bytes of the source's files when the case ended, over the bytes the case can read (max 1). */
  cachedAfter?: number;
  baselines: {
    naive?: { rowsPerSec: number };
    fio?: { iops: number; engine: FioEngine; jobs: number; direct: boolean };
  };
}

/** Counter deltas of the row store over one case (RowStoreStats fields). */
export interface StoreDelta {
  rows: number;
  reads: number;
  duplicates: number;
  merged: number;
  mappedRows: number;
}

/** Pread-pool numbers from the row store's counters: reads per row, reads/s, what dedup and merging saved. */
export function storeNumbers(
  d: StoreDelta,
  rowsPerSec: number,
): Pick<GatherBenchResult, 'readsPerRow' | 'readsPerSec' | 'duplicateFraction' | 'mergedFraction' | 'mappedFraction'> {
  const readsPerRow = d.reads / Math.max(1, d.rows);
  const pieces = d.reads + d.merged; // every read covers 1 + (pieces merged into it)
  return {
    readsPerRow,
    readsPerSec: rowsPerSec * readsPerRow,
    duplicateFraction: d.duplicates / Math.max(1, d.rows),
    mergedFraction: pieces > 0 ? d.merged / pieces : 0,
    mappedFraction: d.mappedRows / Math.max(1, d.rows),
  };
}

/** CPU per row and device pages/s from a timed case. */
export function timedNumbers(t: Timed): Pick<GatherBenchResult, 'cpuUsPerRow' | 'devicePagesPerSec'> {
  return {
    cpuUsPerRow: (t.cpuSeconds * 1e6) / Math.max(1, t.rows),
    ...(t.deviceBytes !== undefined && t.busySeconds > 0
      ? { devicePagesPerSec: t.deviceBytes / 4096 / t.busySeconds }
      : {}),
  };
}

/** rows/s, reads/s and device pages/s over the ceiling's IOPS; undefined without a ceiling. */
export function ceilingFractions(
  r: Pick<GatherBenchResult, 'rowsPerSec' | 'readsPerSec' | 'devicePagesPerSec'>,
  ceiling: Ceiling | undefined,
): GatherBenchResult['ofCeiling'] {
  if (!ceiling || !(ceiling.iops > 0)) return undefined;
  return {
    rows: r.rowsPerSec / ceiling.iops,
    ...(r.readsPerSec !== undefined ? { reads: r.readsPerSec / ceiling.iops } : {}),
    ...(r.devicePagesPerSec !== undefined ? { devicePages: r.devicePagesPerSec / ceiling.iops } : {}),
  };
}

/**
 * The largest share of the ceiling any case took from the device (reads/s or device pages/s),
 * when it is above 1.05: then the ceiling was measured low (on a shared machine the device's
 * share moves between runs) and every fraction is an overestimate.
 */
export function ceilingShortfall(results: GatherBenchResult[]): number | undefined {
  const used = results.map((r) => Math.max(r.ofCeiling?.reads ?? 0, r.ofCeiling?.devicePages ?? 0));
  const most = Math.max(0, ...used);
  return most > 1.05 ? most : undefined;
}

/** Sets mergeGain on every merged pread-pool result that has a no-merge twin (same variant, threads, batch). */
export function pairMergeGains(results: GatherBenchResult[]): void {
  for (const r of results) {
    if (r.reader === 'mmap' || r.merge === false) continue;
    const twin = results.find(
      (x) =>
        x.merge === false &&
        x.variant === r.variant &&
        x.reader === r.reader &&
        x.threads === r.threads &&
        x.batch === r.batch,
    );
    if (twin && twin.rowsPerSec > 0) r.mergeGain = r.rowsPerSec / twin.rowsPerSec;
  }
}

/**
 * Smallest thread count within 5% of the best rows/s at the largest batch, on the overlay's
 * path when it ran (the engine's SPARK_ENGRAM_THREADS), else on the first variant; no-merge
 * reruns and the Mia baseline are not candidates.
 */
export function recommendThreads(all: GatherBenchResult[]): { threads: number; variant: BenchVariant } {
  // The Mia stack's reader is a baseline: its DSV41_IO_THREADS is not SPARK_ENGRAM_THREADS.
  const results = all.filter((r) => r.merge !== false && readerOf(r.variant) !== 'mia-pool');
  if (results.length === 0) return { threads: 64, variant: 'snapshot' };
  const variant = results.find((r) => readerOf(r.variant) === 'mmap')?.variant ?? results[0].variant;
  const batch = Math.max(...results.map((r) => r.batch));
  // Threads are what SPARK_ENGRAM_THREADS sets: io_uring cases (threads = queue depth) only when nothing else ran.
  const threaded = results.filter((r) => r.reader !== 'uring');
  const at = (threaded.length > 0 ? threaded : results).filter((r) => r.batch === batch && r.variant === variant);
  const best = Math.max(...at.map((r) => r.rowsPerSec));
  return { threads: Math.min(...at.filter((r) => r.rowsPerSec >= 0.95 * best).map((r) => r.threads)), variant };
}
