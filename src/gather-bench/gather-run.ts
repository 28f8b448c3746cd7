// One run of `spark bench gather` (gather-bench.ts sets it up): the ceiling, the naive baseline and each variant's cases, then the report.
import type { BatchDrawer, GatherBenchOptions, GatherBenchReport, MiaChoice, ProbedSource } from './gather-types.js';
import { cpus, loadavg, totalmem } from 'node:os';
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
import { MIA_CACHE_DEFAULT, openMiaCase, type MiaCacheOptions } from './mia-case.js';
import { type RowSource } from '../stacks/row-source.js';
import { openRowSource } from '../stacks/local-copy.js';
import { MmapGather } from './overlay-baseline.js';
import { originalOf, readerOf, variantWith } from './originals.js';
import { LAYOUTS, layoutNamed } from '../stacks/registry.js';

type MiaCase = Awaited<ReturnType<typeof openMiaCase>>;

/** One run of the benchmark: the source, its baselines and the results, case by case. */
export class GatherRun {
  private readonly say: (line: string) => void;
  private readonly table: ProbedSource['table'];
  private readonly spec: ProbedSource['spec'];
  private readonly fio: string | undefined;
  private readonly layout: GatherBenchResult['layout'];
  private readonly regions: ReturnType<typeof readRegions>;
  private readonly readRangeBytes: number;
  private readonly limit: PageCacheLimit | undefined;
  private readonly betweenBatches: (() => void) | undefined;
  private readonly miaCache: MiaCacheOptions;
  /** The Mia reader runs beside the row store's packed cases when both are asked for. */
  private readonly miaPaired: boolean;
  /** The variant that runs the Mia stack's pool, when one is asked for. */
  private readonly poolVariant: BenchVariant | undefined;
  private readonly region: { file: string; offset: number; size: number; seconds: number };
  private ceiling: Ceiling | undefined;
  private ceilingNote: string | undefined;
  private readonly naive = new Map<string, number>();
  private readonly psync = new Map<number, FioResult & { direct: boolean }>();
  private readonly results: GatherBenchResult[] = [];

  constructor(
    private readonly o: GatherBenchOptions,
    private readonly source: ProbedSource,
    private readonly variants: BenchVariant[],
    private readonly mia: MiaChoice,
    private readonly fresh: BatchDrawer,
  ) {
    const { spec, kind } = source;
    this.say = o.progress ?? (() => {});
    this.table = source.table;
    this.spec = spec;
    this.miaCache = o.mia ?? MIA_CACHE_DEFAULT;
    this.fio = o.fio !== false && o.delayUs === undefined ? fioVersion() : undefined;
    // A pack's layout is in its table; a sparse copy's is the layout that writes that kind of directory.
    this.layout = spec.kind === 'packed' ? spec.layout : LAYOUTS.find((l) => l.kind === kind)?.name;
    this.regions = readRegions(spec);
    this.readRangeBytes = regionBytes(this.regions);
    this.limit = pageCacheLimit(o.sysRoot);
    this.betweenBatches = o.cold && o.evictEveryBatch ? () => this.evict() : undefined;
    this.poolVariant = variantWith('mia-pool', variants);
    this.miaPaired = this.poolVariant !== undefined && variants.includes('packed');
    const main = this.regions[0];
    this.region = { file: main.path, offset: main.offset, size: main.length, seconds: o.seconds };
  }

  private verdict(direct: boolean): ColdVerdict {
    const { o, readRangeBytes, limit } = this;
    return coldVerdict({ direct, evictEveryBatch: Boolean(o.evictEveryBatch), readRangeBytes, limit });
  }

  private evict(): void {
    for (const f of this.source.files) evictFromCache(f);
  }

  /** Before each case: the source evicted (cold), or the rows it holds read into the page cache (warm). */
  private async prepare(): Promise<void> {
    if (this.o.cold) this.evict();
    // Only the rows the source holds: a sparse copy's holes would fill the cache with zeros.
    else for (const r of this.regions) await warmCache(r.path, r.offset, r.length);
  }

  private cachedAfter(): number | undefined {
    const bytes = this.source.files.map(cachedBytes);
    if (bytes.some((x) => x === undefined) || this.readRangeBytes <= 0) return undefined;
    return Math.min(1, (bytes as number[]).reduce((a, b) => a + b, 0) / this.readRangeBytes);
  }

  /** The device ceiling (fio, O_DIRECT) over the large region, or why there is none. */
  measureCeiling(): void {
    const measured = this.fio
      ? measureCeiling(this.region)
      : {
          note:
            this.o.delayUs !== undefined
              ? 'no device ceiling: a delay is injected'
              : 'no device ceiling: fio skipped or not installed',
        };
    this.ceiling = 'iops' in measured ? measured : undefined;
    this.ceilingNote = measured.note;
    const c = this.ceiling;
    if (c)
      this.say(`device ceiling (fio ${c.engine}, direct, ${c.jobs} x QD ${c.iodepth}): ${Math.round(c.iops)} IOPS`);
    else this.say(measured.note ?? '');
  }

  /** The naive loop per batch size: two pieces per row, or one with resident scales. */
  async measureNaive(): Promise<void> {
    const { o } = this;
    if (o.naive === false || o.delayUs !== undefined) return;
    for (const resident of [...new Set(this.variants.map((v) => v === 'snapshot+scales'))]) {
      const ng = await NaiveGather.open(this.spec, resident);
      for (const b of o.batches) {
        await this.prepare();
        const t = await timeLoop(o.seconds, this.fresh(b), (ids) => ng.gather(ids));
        this.naive.set(`${resident}/${b}`, t.rowsPerSec);
        this.say(`naive${resident ? ' (resident scales)' : ''} batch ${b}: ${Math.round(t.rowsPerSec)} rows/s`);
      }
      await ng.close();
    }
  }

  /**
   * psync fio runs right before the cases of the same thread count, so both see the same
   * moment of a shared, noisy machine.
   */
  private async psyncAt(t: number): Promise<void> {
    if (!this.fio || this.psync.has(t)) return;
    await this.prepare();
    const direct = Boolean(this.o.direct && this.layout !== undefined && layoutNamed(this.layout).pageAligned);
    try {
      const r = runFio({ ...this.region, threads: t, direct, keepCache: !this.o.cold });
      this.psync.set(t, { ...r, direct });
      this.say(`fio psync ${t} jobs: ${Math.round(r.iops)} IOPS`);
    } catch (err) {
      this.say((err as Error).message);
    }
  }

  private record(v: BenchVariant, t: number, b: number, r: Timed, extra: Partial<GatherBenchResult>): void {
    const { o, table, layout } = this;
    const res: GatherBenchResult = {
      source: originalOf(v)?.original?.source ?? v,
      ...(layout ? { layout } : {}),
      variant: v,
      reader: readerOf(v) ?? 'pread-pool',
      ...extra,
      threads: t,
      batch: b,
      cold: o.cold,
      ...(o.cold ? coldFields(this.verdict(extra.direct === true)) : {}),
      rowsPerSec: r.rowsPerSec,
      mbPerSec: (r.rowsPerSec * table.rowBytes) / 1e6,
      p50Ms: r.p50,
      p99Ms: r.p99,
      batchesRun: r.n,
      ...timedNumbers(r),
      cachedAfter: this.cachedAfter(),
      baselines: {},
    };
    const nv = this.naive.get(`${v === 'snapshot+scales'}/${b}`);
    if (nv !== undefined) res.baselines.naive = { rowsPerSec: nv };
    const ps = this.psync.get(t);
    if (ps !== undefined) res.baselines.fio = { iops: ps.iops, engine: 'psync', jobs: t, direct: ps.direct };
    this.results.push(res);
    this.say(
      `${v} (${res.reader})${extra.merge === false ? ' (no merge)' : ''} threads ${t} batch ${b}: ${Math.round(r.rowsPerSec)} rows/s, p50 ${r.p50.toFixed(2)} ms`,
    );
  }

  /** The Mia reader for one case, when it runs: alone, or paired with the row store's first engine. */
  private openMia(t: number): Promise<MiaCase> | undefined {
    const { mia } = this;
    return this.poolVariant !== undefined && !('refused' in mia) ? openMiaCase(mia, t, this.miaCache) : undefined;
  }

  private async recordMia(m: MiaCase, t: number, b: number, r: Timed): Promise<void> {
    this.record(this.poolVariant!, t, b, r, await m.finish(r.rowsPerSec));
  }

  /** Every case of one variant at one thread count. */
  async runCases(v: BenchVariant, t: number): Promise<void> {
    const reader = readerOf(v);
    if (reader === 'mia-pool' && this.miaPaired) return; // measured beside packed, below
    await this.psyncAt(t);
    if (reader === 'mia-pool') return this.runMia(t);
    if (reader === 'mmap') return this.runOverlay(v, t);
    const engines = this.o.engines ?? ['pread'];
    const merges = this.o.mergeGain ? [true, false] : [this.o.store?.merge !== false];
    for (const engine of engines) for (const merge of merges) await this.runStore(v, t, engine, merge, engines[0]);
  }

  private async runMia(t: number): Promise<void> {
    for (const b of this.o.batches) {
      await this.prepare();
      const m = (await this.openMia(t))!;
      const [r] = await timeInterleaved(this.o.seconds, this.fresh(b), [m.run], this.betweenBatches);
      await this.recordMia(m, t, b, r);
    }
  }

  private async runOverlay(v: BenchVariant, t: number): Promise<void> {
    const willneed = this.o.willneed !== false;
    const { table, spec } = this;
    for (const b of this.o.batches) {
      await this.prepare();
      // Mapped per case (per batch with --evict-every-batch): pages this process has
      // mapped cannot be evicted.
      const open = () => MmapGather.open([overlayTable(spec, table)], { threads: t, willneed });
      let g = open();
      try {
        const between = this.betweenBatches
          ? async () => {
              await g.close();
              this.betweenBatches!();
              g = open();
            }
          : undefined;
        const r = await timeLoop(this.o.seconds, this.fresh(b), (ids) => g.gather(table.layer, ids), between);
        this.record(v, t, b, r, { willneed });
      } finally {
        await g.close();
      }
    }
  }

  private async openStore(v: BenchVariant, t: number, engine: BenchEngine, merge: boolean): Promise<RowSource> {
    const { o, table } = this;
    return openRowSource(o.source, {
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
  }

  /** The row store's cases of one engine and merge setting, every batch size. */
  private async runStore(
    v: BenchVariant,
    t: number,
    engine: BenchEngine,
    merge: boolean,
    firstEngine: BenchEngine,
  ): Promise<void> {
    const src = await this.openStore(v, t, engine, merge);
    try {
      const directActive = src.store.tables()[0].directActive;
      // The Mia reader runs beside the first engine's merged case, on the same batches.
      const withMia =
        v === 'packed' && this.miaPaired && engine === firstEngine && merge === (this.o.store?.merge !== false);
      for (const b of this.o.batches) await this.runStoreBatch(src, v, t, b, { engine, merge, directActive, withMia });
    } finally {
      await src.close();
    }
  }

  private async runStoreBatch(
    src: RowSource,
    v: BenchVariant,
    t: number,
    b: number,
    c: { engine: BenchEngine; merge: boolean; directActive: boolean | undefined; withMia: boolean },
  ): Promise<void> {
    const { o, table } = this;
    // One output buffer per case, as a serving loop reuses its own: a fresh 13 MB buffer
    // per batch would add thousands of first-touch page faults inside the reads.
    const out = Buffer.alloc(b * table.rowBytes);
    await this.prepare();
    // The cache was warmed behind the store's back: tell it, as a store opened on a warm cache learns at open.
    if (!o.cold) await src.store.learnCached();
    const before = src.store.stats();
    const gather = inProcess((ids) => src.store.gather(table.layer, ids, out));
    const m = c.withMia ? await this.openMia(t) : undefined;
    const [r, rm] = await timeInterleaved(
      o.seconds,
      this.fresh(b),
      m ? [gather, m.run] : [gather],
      this.betweenBatches,
    );
    const after = src.store.stats();
    const delta = {
      rows: after.rows - before.rows,
      reads: after.reads - before.reads,
      duplicates: after.duplicates - before.duplicates,
      merged: after.merged - before.merged,
      mappedRows: after.mappedRows - before.mappedRows,
    };
    this.record(v, t, b, r, {
      ...(this.spec.kind === 'packed' ? { direct: c.directActive } : {}),
      reader: c.engine === 'uring' ? 'uring' : 'pread-pool',
      ...(c.merge ? {} : { merge: false }),
      ...storeNumbers(delta, r.rowsPerSec),
    });
    if (m) await this.recordMia(m, t, b, rm);
  }

  /** The ceiling again after the cases, each case as a fraction of it, and the report. */
  report(loadAvgBefore: number[]): GatherBenchReport {
    const { o, results, table, limit } = this;
    if (this.ceiling) {
      this.ceiling = closeCeiling(this.ceiling);
      this.say(`device ceiling after the cases: ${Math.round(this.ceiling.iopsAfter ?? NaN)} IOPS`);
    }
    const ceiling = this.ceiling;
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
      sourceKind: this.source.kind,
      machine: machineFacts(loadAvgBefore),
      cache: o.cold
        ? `cold: the source files are evicted from the page cache (posix_fadvise DONTNEED via dd iflag=nocache) before every ${o.evictEveryBatch ? 'batch' : 'case'}; psync fio drops them too (invalidate=1)`
        : 'warm: each case starts with the rows the source holds read once into the page cache',
      readRangeBytes: this.readRangeBytes,
      ...(limit ? { pageCache: { limitBytes: limit.bytes, from: limit.from } } : {}),
      ...(o.cold ? { cold: this.verdict(false) } : {}),
      ...(ceiling ? { ceiling } : { ceilingNote: this.ceilingNote }),
      ...(exceeded !== undefined ? { ceilingExceeded: exceeded } : {}),
      ...(this.fio ? { fio: this.fio } : {}),
      layer: table.layer,
      rows: table.rows,
      seconds: o.seconds,
      ...(o.delayUs ? { delayUs: o.delayUs } : {}),
    };
  }
}

function machineFacts(loadAvgBefore: number[]): GatherBenchReport['machine'] {
  return {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    memGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    arch: process.arch,
    loadAvgBefore,
    loadAvgAfter: loadavg(),
  };
}

function coldFields(v: ColdVerdict): Pick<GatherBenchResult, 'coldValid' | 'coldReason'> {
  return { coldValid: v.valid, coldReason: v.reason };
}
