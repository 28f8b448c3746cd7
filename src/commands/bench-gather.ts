// `spark bench gather <snapshot|copy>`: measures the row store's pread pool and the serving
// overlay's mmap path against fio and a naive TypeScript loop in the same run, prints a table,
// recommends SPARK_ENGRAM_THREADS (from the overlay's path when it ran).
import { Command } from 'commander';
import { accessSync, constants, lstatSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import type { CliContext } from '../cli.js';
import { writeNewFile } from '../new-file.js';
import { runGatherBench, type BenchVariant, type GatherBenchOptions, type GatherBenchReport, type GatherBenchResult } from '../bench/gather-bench.js';
import { lineChartSvg } from '../bench/svg-chart.js';
import { usageError } from '../errors.js';
import type { CommandResult, Io } from '../io.js';
import { table } from '../format.js';
import { fromEnv, parseCount, parseCountList } from './options.js';

export interface BenchGatherRun extends GatherBenchOptions {
  svg?: string;
}

function ratio(a: number | undefined, b: number | undefined): string {
  return a !== undefined && b ? `${(a / b).toFixed(2)}x` : '-';
}

/** What a result read, in one cell: variant, layout, reader. */
export function resultLabel(x: GatherBenchResult): string {
  const layout = x.layout ? `/${x.layout}${x.direct ? '+direct' : ''}` : '';
  return `${x.variant}${layout} (${x.reader}${x.willneed === false ? ', no WILLNEED' : ''})`;
}

export function benchText(r: GatherBenchReport): string {
  const rows = r.results.map((x) => [
    resultLabel(x),
    x.cold ? 'cold' : 'warm',
    x.threads,
    x.batch,
    Math.round(x.rowsPerSec),
    x.mbPerSec.toFixed(1),
    x.p50Ms.toFixed(2),
    x.p99Ms.toFixed(2),
    x.readsPerRow === undefined ? '-' : x.readsPerRow.toFixed(2),
    x.readsPerSec === undefined ? '-' : Math.round(x.readsPerSec),
    x.baselines.naive ? Math.round(x.baselines.naive.rowsPerSec) : '-',
    ratio(x.rowsPerSec, x.baselines.naive?.rowsPerSec),
    x.baselines.fio ? Math.round(x.baselines.fio.iops) : '-',
    ratio(x.rowsPerSec, x.baselines.fio?.iops),
    ratio(x.readsPerSec, x.baselines.fio?.iops),
    x.cachedAfter === undefined ? '-' : `${(x.cachedAfter * 100).toFixed(0)}%`,
  ]);
  const head = ['source', 'cache', 'threads', 'batch', 'rows/s', 'MB/s', 'p50 ms', 'p99 ms', 'reads/row', 'reads/s', 'naive rows/s', 'vs naive', 'fio IOPS', 'rows vs fio', 'reads vs fio', 'cached after'];
  return [
    `${r.sourceKind === 'sparse' ? 'sparse copy' : r.sourceKind === 'packed' ? 'packed directory' : 'snapshot'}, layer ${r.layer} (${r.rows} rows), ${r.seconds} s per case${r.delayUs ? `, ${r.delayUs} us injected per read` : ''}`,
    r.cache,
    `machine: ${r.machine.cpus} x ${r.machine.cpuModel}, ${r.machine.memGiB} GiB, node ${r.machine.node} ${r.machine.arch}; ${r.fio ?? 'no fio baseline (not installed, skipped, or a delay is injected)'}`,
    '',
    table(head, rows),
    '',
    `recommended: SPARK_ENGRAM_THREADS=${r.recommendedThreads} (fewest threads within 5% of the best rows/s at the largest batch, ${r.recommendedFor === 'overlay' ? "on the overlay's mmap path, what the engine runs" : `on the ${r.recommendedFor} variant`})`,
  ].join('\n');
}

export function benchSvg(r: GatherBenchReport): string {
  const keys = [...new Set(r.results.map((x) => `${resultLabel(x)}|${x.batch}`))];
  const series = keys.map((k) => {
    const [label, batch] = k.split('|');
    return {
      name: `${label}, batch ${batch}`,
      points: r.results.filter((x) => resultLabel(x) === label && String(x.batch) === batch).map((x) => ({ x: x.threads, y: x.rowsPerSec })),
    };
  });
  const cache = r.results[0]?.cold ? 'cold cache' : 'warm cache';
  return lineChartSvg(`Engram gather, layer ${r.layer}, ${cache}`, 'threads per batch', 'rows/s', series);
}

/** Fails now, before a long run, when the chart could not be written where --svg says. */
export function checkSvgTarget(path: string): void {
  const dir = dirname(path);
  if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory()) throw usageError(`--svg ${path}: ${dir} is not a directory`);
  try {
    accessSync(dir, constants.W_OK);
  } catch {
    throw usageError(`--svg ${path}: ${dir} is not writable`);
  }
  const st = lstatSync(path, { throwIfNoEntry: false });
  if (st && !st.isFile()) throw usageError(`--svg ${path}: exists and is not a regular file (a link, a directory?): give another path`);
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
  fio?: boolean;
  naive?: boolean;
  seed?: string;
  dedup?: boolean;
  merge?: boolean;
  fadvise?: boolean;
  willneed?: boolean;
}

const VARIANTS: BenchVariant[] = ['snapshot', 'snapshot+scales', 'overlay', 'packed'];

export function parseBenchGatherFlags(source: string | undefined, f: Flags, env: NodeJS.ProcessEnv): BenchGatherRun {
  const src = fromEnv(source, env, 'SPARK_ENGRAM_DIR');
  if (src === undefined) throw usageError('give a snapshot or packed directory (or set SPARK_ENGRAM_DIR)');
  const variants = f.variants?.split(',').map((v) => {
    if (!VARIANTS.includes(v as BenchVariant)) throw usageError(`--variants takes ${VARIANTS.join(', ')}; got '${v}'`);
    return v as BenchVariant;
  });
  return {
    source: src,
    threads: parseCountList(f.threads ?? '1,4,16,32,64,96', '--threads', 1, 1024),
    batches: parseCountList(f.batch ?? '24,144,49152', '--batch', 1, 1 << 24),
    seconds: parseCount(f.seconds ?? '2', '--seconds', 1, 3600),
    cold: Boolean(f.cold),
    svg: f.svg,
    layer: f.layer === undefined ? undefined : parseCount(f.layer, '--layer', 0, 0xffffffff),
    direct: Boolean(f.direct),
    delayUs: f.delayUs === undefined ? undefined : parseCount(f.delayUs, '--delay-us', 1, 10_000_000),
    variants,
    fio: f.fio !== false,
    naive: f.naive !== false,
    seed: f.seed === undefined ? 1 : parseCount(f.seed, '--seed', 0, 0xffffffff),
    store: { dedup: f.dedup !== false, merge: f.merge !== false, fadviseRandom: f.fadvise !== false },
    willneed: f.willneed !== false,
  };
}

export function benchCommand(ctx: CliContext): Command {
  const gather = new Command('gather')
    .description("random-id gathers through the row store and the serving overlay's mmap path, with fio and naive baselines from the same run")
    .argument('[source]', 'snapshot, sparse copy or packed directory; default $SPARK_ENGRAM_DIR')
    .option('--threads <list>', 'reader thread counts', '1,4,16,32,64,96')
    .option('--batch <list>', 'ids per batch (24: one token, 144: a speculative block, 49152: a 2048-token prefill)', '24,144,49152')
    .option('--seconds <s>', 'seconds per case', '2')
    .option('--cold', 'evict the source files from the page cache before every case')
    .option('--layer <L>', 'layer to read (default: the first)')
    .option('--direct', 'packed directories: O_DIRECT reads (fio runs with direct=1 too)')
    .option('--delay-us <n>', 'inject this delay before every read (models NFS latency; no baselines)')
    .option('--variants <list>', 'snapshot, snapshot+scales, overlay (snapshots and sparse copies), packed (packs); default: all the source supports')
    .option('--no-fio', 'skip the fio baseline')
    .option('--no-naive', 'skip the naive TypeScript baseline')
    .option('--seed <n>', 'id generator seed', '1')
    .option('--no-dedup', 'row store: do not sort and de-duplicate ids (to measure what it pays)')
    .option('--no-merge', 'row store: one read per row piece, no page merging')
    .option('--no-fadvise', 'row store: no POSIX_FADV_RANDOM hint')
    .option('--no-willneed', "overlay variant: skip the WILLNEED pass (to measure what it pays; the overlay runs it)")
    .option('--svg <file>', 'write a chart of rows/s against threads per batch size')
    .option('--json', 'print {results: [...], recommendedThreads}')
    .addHelpText(
      'after',
      `
Ids are drawn like a serving rank's: 24 per token, one inside each (order, head) sub-table, with
repeated tokens and bigrams (inside a sparse copy's or pack's range). Results are ratios to
baselines measured in the same run. The overlay variant reads the snapshot or sparse copy the
way the serving overlay does (one mmap with MADV_RANDOM, a WILLNEED pass over the batch, memcpy
workers); when it runs, the recommended SPARK_ENGRAM_THREADS is measured on it.

Example:
  spark bench gather /nvme/engram-pack --threads 16,32,64 --batch 144,49152 --cold --svg gather.svg`,
    )
    .action(async (source: string | undefined, flags: Flags) => {
      ctx.emit(await runBenchGather(parseBenchGatherFlags(source, flags, ctx.io.env), ctx.io), Boolean(flags.json));
    });
  return new Command('bench').description('benchmarks: gather').addCommand(gather);
}
