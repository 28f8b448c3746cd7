// `spark bench gather <snapshot|copy>`: measures the row store's pread pool and the serving
// overlay's mmap path against fio and a naive TypeScript loop in the same run, prints a table,
// recommends SPARK_ENGRAM_THREADS (from the overlay's path when it ran).
import { Command } from 'commander';
import { accessSync, constants, lstatSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import type { CliContext } from './context.js';
import { writeNewFile } from '../files/new-file.js';
import { MIA_CACHE_DEFAULT } from '../gather-bench/mia-case.js';
import {
  runGatherBench,
  type BenchEngine,
  ALL_VARIANTS,
  type BenchVariant,
  type GatherBenchOptions,
  type GatherBenchReport,
  type GatherBenchResult,
} from '../gather-bench/gather-bench.js';
import { lineChartSvg } from '../gather-bench/svg-chart.js';
import { readerOf } from '../gather-bench/originals.js';
import { SOURCE_NOUN } from '../stacks/row-source.js';
import { usageError } from '../errors/errors.js';
import type { CommandResult, Io } from '../terminal/io.js';
import { table } from '../terminal/format.js';
import { fromEnv, parseCount, parseCountList } from './options.js';

export interface BenchGatherRun extends GatherBenchOptions {
  svg?: string;
}

function ratio(a: number | undefined, b: number | undefined): string {
  return a !== undefined && b ? `${(a / b).toFixed(2)}x` : '-';
}

const fixed = (x: number | undefined, digits: number): string => (x === undefined ? '-' : x.toFixed(digits));
const whole = (x: number | undefined): string | number => (x === undefined ? '-' : Math.round(x));
const percent = (x: number | undefined): string => (x === undefined ? '-' : `${(x * 100).toFixed(0)}%`);
const gib = (b: number): string => `${(b / 2 ** 30).toFixed(1)} GiB`;

/** What a result read, in one cell: variant, layout, reader. */
export function resultLabel(x: GatherBenchResult): string {
  const layout = x.layout ? `/${x.layout}${x.direct ? '+direct' : ''}` : '';
  const cache = x.mia
    ? x.mia.cacheSlots > 0
      ? `cache ${(x.mia.budgetBytes / 2 ** 20).toFixed(0)} MiB ${x.mia.ways}-way, ${percent(x.mia.hitRate)} hits`
      : 'no cache'
    : '';
  const notes = [
    x.reader,
    x.willneed === false ? 'no WILLNEED' : '',
    x.merge === false ? 'no merge' : '',
    cache,
  ].filter(Boolean);
  return `${x.variant}${layout} (${notes.join(', ')})`;
}

/** The lines above the table: what the ceiling is, and (loudly) when "cold" was not cold. */
function headerLines(r: GatherBenchReport): string[] {
  const lines: string[] = [];
  const c = r.ceiling;
  if (c) {
    const after =
      c.iopsAfter === undefined
        ? ''
        : `, ${Math.round(c.iopsBefore)} before the cases and ${Math.round(c.iopsAfter)} after`;
    lines.push(
      `device ceiling: ${Math.round(c.iops)} IOPS (fio ${c.engine}, O_DIRECT 4 KiB random reads, ${c.jobs} jobs x queue depth ${c.iodepth}, over ${gib(c.size)} of ${c.file}${after})${c.note ? `; ${c.note}` : ''}`,
    );
  } else lines.push(r.ceilingNote ?? 'no device ceiling');
  if (r.ceilingExceeded !== undefined) {
    lines.push(
      `WARNING: a case took ${r.ceilingExceeded.toFixed(2)}x the ceiling from the device: the ceiling was measured low (the device's share moved during the run, or fio was starved); the fractions below overstate every case`,
    );
  }
  lines.push(
    `read range ${gib(r.readRangeBytes)}; page cache ${r.pageCache ? `${gib(r.pageCache.limitBytes)} (${r.pageCache.from})` : 'size unknown'}`,
  );
  if (r.cold && !r.cold.valid)
    lines.push(`WARNING: cold cases read through the page cache are NOT cold: ${r.cold.reason}`);
  else if (r.cold) lines.push(`cold holds: ${r.cold.reason}`);
  return lines;
}

/** What the columns mean; the "cold?" note only when a case is marked so (it points at the WARNING above). */
function footer(r: GatherBenchReport): string {
  const notes = [
    'rows/ceil, reads/ceil: rows/s and reads/s (pread pool; device pages/s for the mmap path) over the device ceiling.',
  ];
  notes.push('psync IOPS: fio with one blocking reader per thread, NOT the ceiling.');
  if (r.results.some((x) => x.cold && x.coldValid === false))
    notes.push('cold?: this case may have read from the page cache (see the WARNING above).');
  return [...notes, 'See `spark bench gather --help`.'].join(' ');
}

export function benchText(r: GatherBenchReport): string {
  const rows = r.results.map((x) => [
    resultLabel(x),
    x.cold ? (x.coldValid === false ? 'cold?' : 'cold') : 'warm',
    x.threads,
    x.batch,
    Math.round(x.rowsPerSec),
    whole(x.readsPerSec),
    fixed(x.readsPerRow, 2),
    percent(x.mergedFraction),
    fixed(x.mergeGain, 2),
    whole(x.devicePagesPerSec),
    fixed(x.ofCeiling?.rows, 2),
    fixed(x.ofCeiling?.reads ?? x.ofCeiling?.devicePages, 2),
    x.cpuUsPerRow.toFixed(1),
    x.p50Ms.toFixed(2),
    x.p99Ms.toFixed(2),
    ratio(x.rowsPerSec, x.baselines.naive?.rowsPerSec),
    x.baselines.fio ? Math.round(x.baselines.fio.iops) : '-',
    percent(x.cachedAfter),
    percent(x.mappedFraction),
  ]);
  const head = [
    'source',
    'cache',
    'threads',
    'batch',
    'rows/s',
    'reads/s',
    'reads/row',
    'merged',
    'merge gain',
    'dev pages/s',
    'rows/ceil',
    'reads/ceil',
    'CPU us/row',
    'p50 ms',
    'p99 ms',
    'vs naive',
    'psync IOPS',
    'cached after',
    'mapped',
  ];
  return [
    `${SOURCE_NOUN[r.sourceKind]}, layer ${r.layer} (${r.rows} rows), ${r.seconds} s per case${r.delayUs ? `, ${r.delayUs} us injected per read` : ''}`,
    r.cache,
    `machine: ${r.machine.cpus} x ${r.machine.cpuModel}, ${r.machine.memGiB} GiB, node ${r.machine.node} ${r.machine.arch}, load average ${r.machine.loadAvgBefore.map((x) => x.toFixed(2)).join(' ')} before, ${r.machine.loadAvgAfter.map((x) => x.toFixed(2)).join(' ')} after; ${r.fio ?? 'no fio (not installed, skipped, or a delay is injected)'}`,
    ...headerLines(r),
    '',
    table(head, rows),
    '',
    footer(r),
    `recommended: SPARK_ENGRAM_THREADS=${r.recommendedThreads} (fewest threads within 5% of the best rows/s at the largest batch, ${readerOf(r.recommendedFor) === 'mmap' ? `on the ${r.recommendedFor}'s mmap path, what the engine runs` : `on the ${r.recommendedFor} variant`})`,
  ].join('\n');
}

export function benchSvg(r: GatherBenchReport): string {
  const keys = [...new Set(r.results.map((x) => `${resultLabel(x)}|${x.batch}`))];
  const series = keys.map((k) => {
    const [label, batch] = k.split('|');
    return {
      name: `${label}, batch ${batch}`,
      points: r.results
        .filter((x) => resultLabel(x) === label && String(x.batch) === batch)
        .map((x) => ({ x: x.threads, y: x.rowsPerSec })),
    };
  });
  const cache = r.results[0]?.cold ? 'cold cache' : 'warm cache';
  return lineChartSvg(`Engram gather, layer ${r.layer}, ${cache}`, 'threads per batch', 'rows/s', series);
}

/** Fails now, before a long run, when the chart could not be written where --svg says. */
export function checkSvgTarget(path: string): void {
  const dir = dirname(path);
  if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory())
    throw usageError(`--svg ${path}: ${dir} is not a directory`);
  try {
    accessSync(dir, constants.W_OK);
  } catch {
    throw usageError(`--svg ${path}: ${dir} is not writable`);
  }
  const st = lstatSync(path, { throwIfNoEntry: false });
  if (st && !st.isFile())
    throw usageError(`--svg ${path}: exists and is not a regular file (a link, a directory?): give another path`);
}

export async function runBenchGather(o: BenchGatherRun, io: Io): Promise<CommandResult> {
  if (o.svg) checkSvgTarget(o.svg);
  const progress = io.stderrIsTTY ? (line: string) => io.stderr(line + '\n') : undefined;
  const report = await runGatherBench({ ...o, progress });
  if (o.svg) writeNewFile(o.svg, benchSvg(report));
  return { json: report, text: benchText(report), exitCode: 0 };
}

interface Flags {
  threads?: string;
  batch?: string;
  seconds?: string;
  cold?: boolean;
  json?: boolean;
  svg?: string;
  layer?: string;
  direct?: boolean;
  delayUs?: string;
  variants?: string;
  engines?: string;
  fio?: boolean;
  naive?: boolean;
  seed?: string;
  dedup?: boolean;
  merge?: boolean;
  fadvise?: boolean;
  map?: boolean;
  willneed?: boolean;
  mergeGain?: boolean;
  evictEveryBatch?: boolean;
  miaCacheMib?: string;
  miaWays?: string;
}

const VARIANTS: BenchVariant[] = ALL_VARIANTS;

/** The case grid when a flag is left out: shown by --help and applied by parseBenchGatherFlags. */
const GATHER_DEFAULT = { threads: '1,4,16,32,64,96', batch: '24,144,49152', seconds: '2' } as const;

export function parseBenchGatherFlags(source: string | undefined, f: Flags, env: NodeJS.ProcessEnv): BenchGatherRun {
  const src = fromEnv(source, env, 'SPARK_ENGRAM_DIR');
  if (src === undefined) throw usageError('give a snapshot or packed directory (or set SPARK_ENGRAM_DIR)');
  if (f.evictEveryBatch && !f.cold) throw usageError('--evict-every-batch is for cold runs: add --cold');
  const variants = f.variants?.split(',').map((v) => {
    if (!VARIANTS.includes(v as BenchVariant)) throw usageError(`--variants takes ${VARIANTS.join(', ')}; got '${v}'`);
    return v as BenchVariant;
  });
  return {
    source: src,
    threads: parseCountList(f.threads ?? GATHER_DEFAULT.threads, '--threads', 1, 1024),
    batches: parseCountList(f.batch ?? GATHER_DEFAULT.batch, '--batch', 1, 1 << 24),
    seconds: parseCount(f.seconds ?? GATHER_DEFAULT.seconds, '--seconds', 1, 3600),
    cold: Boolean(f.cold) || Boolean(f.evictEveryBatch),
    svg: f.svg,
    layer: f.layer === undefined ? undefined : parseCount(f.layer, '--layer', 0, 0xffffffff),
    direct: Boolean(f.direct),
    delayUs: f.delayUs === undefined ? undefined : parseCount(f.delayUs, '--delay-us', 1, 10_000_000),
    variants,
    engines: f.engines?.split(',').map((e) => {
      if (e !== 'pread' && e !== 'uring') throw usageError(`--engines takes pread, uring; got '${e}'`);
      return e as BenchEngine;
    }),
    fio: f.fio !== false,
    naive: f.naive !== false,
    seed: f.seed === undefined ? 1 : parseCount(f.seed, '--seed', 0, 0xffffffff),
    store: {
      dedup: f.dedup !== false,
      merge: f.merge !== false,
      fadviseRandom: f.fadvise !== false,
      mapCached: f.map !== false,
    },
    willneed: f.willneed !== false,
    mergeGain: Boolean(f.mergeGain),
    evictEveryBatch: Boolean(f.evictEveryBatch),
    mia: {
      budget:
        f.miaCacheMib === undefined
          ? MIA_CACHE_DEFAULT.budget
          : parseCount(f.miaCacheMib, '--mia-cache-mib', 0, 1 << 20) * 2 ** 20,
      ways: f.miaWays === undefined ? MIA_CACHE_DEFAULT.ways : parseCount(f.miaWays, '--mia-ways', 1, 16),
    },
  };
}

/** `spark bench gather --help` after the flags: how ids are drawn, the variants, what each number means. */
const GATHER_HELP = `
Ids are drawn like a serving rank's: 24 per token, one inside each (order, head) sub-table, with
repeated tokens and bigrams, all inside the rows the source holds (a sparse copy's or pack's
range). Give it a table of real size (a rank holds ~96M rows per layer): on a small table,
neighbouring ids share pages far more often than in serving, and page merging looks better.

The overlay variant reads the snapshot or sparse copy the way the serving overlay does (one
mmap with MADV_RANDOM, a WILLNEED pass over the batch, memcpy workers); when it runs, the
recommended SPARK_ENGRAM_THREADS is measured on it.

The mia variant reads a dense pack the way the Mia stack's reader does (its behaviour
re-implemented in bench/baselines/mia-row-store: a pool of DSV41_IO_THREADS = --threads, one
O_DIRECT 4 or 8 KiB read per miss, its set-associative row cache of --mia-cache-mib and
--mia-ways, empty at the start of every case), in a child process that times its own calls.
Beside the packed variant, every batch goes to both, in alternating order, on the same ids
(with the first engine of --engines). It needs the stack's 4096-byte binary header in the
data file (a pack of format version 2); O_DIRECT reads do not use the page cache, so "warm"
changes nothing for it but its own cache.

What the numbers mean (the same names in --json):
  device ceiling   fio, 4 KiB random reads, O_DIRECT, io_uring (libaio when io_uring is not
                   available: said so), 2 jobs x queue depth 128, over the bytes the cases read;
                   run before the first case and after the last, the mean is the ceiling;
                   a WARNING (ceilingExceeded) when a case took more than it from the device
  rows/s           rows delivered per second of gather time (duplicates included)
  reads/s          pread pool: read calls per second (readsPerRow x rows/s); the row store reads
                   a snapshot's weight and scale separately (2 per row) unless merged
  reads/row        pread pool: reads per row delivered; below 1 (pack) or 2 (snapshot) when
                   duplicates are copied and neighbouring rows share a read
  merged           pread pool: row pieces that shared a read with a neighbour (mergedFraction)
  merge gain       --merge-gain: rows/s over the same case with merging off
  dev pages/s      bytes this process fetched from storage (/proc/self/io read_bytes: misses
                   and O_DIRECT, not cache hits) per second, in 4 KiB pages; the mmap path's
                   reads/s
  rows/ceil        rows/s over the ceiling's IOPS (above 1 only when rows share reads or pages
                   come from the cache)
  reads/ceil       reads/s (pread pool) or dev pages/s (mmap) over the ceiling's IOPS: how
                   much of the device the case used
  CPU us/row       process CPU time (user + sys, every thread) while gathers ran, per row
  p50/p99 ms       batch latency percentiles
  vs naive         rows/s over a TypeScript fs.read loop (same batch)
  psync IOPS       fio psync with as many jobs as reader threads: what that many blocking
                   readers get (baselines.fio); not the device's limit
  cached after     page-cache bytes of the source files at the end of the case, over the bytes
                   the case can read
  mapped           row store: rows copied out of a mapping of the file (their pages known
                   cached; no read call), per row delivered (mappedFraction; warm cases only,
                   --no-map turns it off)
  cold / cold?     with --cold the source is evicted before each case (each batch with
                   --evict-every-batch); "cold?" (coldValid: false) marks a buffered case whose
                   read range fits in the page cache (MemTotal or the cgroup's limit), so
                   re-reads inside the case may have been memory copies. O_DIRECT cases are
                   cold by construction.

Example:
  spark bench gather /nvme/engram-pack --threads 16,32,64 --batch 144,49152 --cold --svg gather.svg`;

export function benchCommand(ctx: CliContext): Command {
  const gather = new Command('gather')
    .description(
      "random-id gathers through the row store and the serving overlay's mmap path, with fio and naive baselines from the same run",
    )
    .argument('[source]', 'snapshot, sparse copy or packed directory; default $SPARK_ENGRAM_DIR')
    .option('--threads <list>', 'reader thread counts', GATHER_DEFAULT.threads)
    .option(
      '--batch <list>',
      'ids per batch (24: one token, 144: a speculative block, 49152: a 2048-token prefill)',
      GATHER_DEFAULT.batch,
    )
    .option('--seconds <s>', 'seconds per case', GATHER_DEFAULT.seconds)
    .option('--cold', 'evict the source files from the page cache before every case')
    .option(
      '--evict-every-batch',
      'with --cold: evict before every batch too (untimed), so a source smaller than the page cache stays cold',
    )
    .option(
      '--merge-gain',
      'pread pool: run every case again without page merging and report rows/s merged over unmerged',
    )
    .option('--layer <L>', 'layer to read (default: the first)')
    .option('--direct', 'packed directories: O_DIRECT reads (fio runs with direct=1 too)')
    .option('--delay-us <n>', 'inject this delay before every read (models NFS latency; no baselines)')
    .option(
      '--variants <list>',
      "snapshot, snapshot+scales, overlay (snapshots and sparse copies), packed, mia (packs; mia: the Mia stack's reader, dense packs with its header); default: all the source supports",
    )
    .option(
      '--engines <list>',
      'row store engines: pread (default), uring (io_uring; its queue depth is the thread count), or both: pread,uring',
    )
    .option('--no-fio', 'skip fio (the device ceiling and the psync baseline)')
    .option('--no-naive', 'skip the naive TypeScript baseline')
    .option('--seed <n>', 'id generator seed', '1')
    .option('--no-dedup', 'row store: do not sort and de-duplicate ids (to measure what it pays)')
    .option('--no-merge', 'row store: one read per row piece, no page merging')
    .option('--no-fadvise', 'row store: no POSIX_FADV_RANDOM hint')
    .option(
      '--no-map',
      'row store: read every row with a read call, also the rows the page cache holds (warm cases copy those out of a mapping; cold cases always read)',
    )
    .option(
      '--mia-cache-mib <n>',
      "mia variant: the reader's row cache budget per store in MiB (its DSV41_CACHE_GIB * 1024 / (2 * ranks per host)); 0 = no cache, as the mia-tp4 env file sets",
      '0',
    )
    .option('--mia-ways <n>', 'mia variant: DSV41_CACHE_WAYS, 1-16', '4')
    .option('--no-willneed', 'overlay variant: skip the WILLNEED pass (to measure what it pays; the overlay runs it)')
    .option('--svg <file>', 'write a chart of rows/s against threads per batch size')
    .option('--json', 'print {results: [...], recommendedThreads}')
    .addHelpText('after', GATHER_HELP)
    .action(async (source: string | undefined, flags: Flags) => {
      ctx.emit(await runBenchGather(parseBenchGatherFlags(source, flags, ctx.io.env), ctx.io), Boolean(flags.json));
    });
  return new Command('bench').description('benchmarks: gather').addCommand(gather);
}
