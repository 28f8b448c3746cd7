// `spark bench gather <snapshot|packdir>`: measures the row store against fio and a naive
// TypeScript loop in the same run, prints a table, recommends SPARK_ENGRAM_THREADS.
import { Command } from 'commander';
import { closeSync, openSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import type { CliContext } from '../cli.js';
import { runGatherBench, type BenchVariant, type GatherBenchOptions, type GatherBenchReport } from '../engram/gather-bench.js';
import { lineChartSvg } from '../engram/svg-chart.js';
import { usageError, withPath } from '../errors.js';
import type { CommandResult, Io } from '../io.js';
import { table } from '../format.js';
import { fromEnv, parseCount, parseCountList } from './options.js';

export interface BenchGatherRun extends GatherBenchOptions {
  svg?: string;
}

function ratio(a: number, b: number | undefined): string {
  return b ? `${(a / b).toFixed(2)}x` : '-';
}

export function benchText(r: GatherBenchReport): string {
  const rows = r.results.map((x) => [
    x.source + (x.layout ? `/${x.layout}${x.direct ? '+direct' : ''}` : ''),
    x.cold ? 'cold' : 'warm',
    x.threads,
    x.batch,
    Math.round(x.rowsPerSec),
    x.mbPerSec.toFixed(1),
    x.p50Ms.toFixed(2),
    x.p99Ms.toFixed(2),
    x.readsPerRow.toFixed(2),
    Math.round(x.readsPerSec),
    x.baselines.naive ? Math.round(x.baselines.naive.rowsPerSec) : '-',
    ratio(x.rowsPerSec, x.baselines.naive?.rowsPerSec),
    x.baselines.fio ? Math.round(x.baselines.fio.iops) : '-',
    ratio(x.rowsPerSec, x.baselines.fio?.iops),
    ratio(x.readsPerSec, x.baselines.fio?.iops),
    x.cachedAfter === undefined ? '-' : `${(x.cachedAfter * 100).toFixed(0)}%`,
  ]);
  const head = ['source', 'cache', 'threads', 'batch', 'rows/s', 'MB/s', 'p50 ms', 'p99 ms', 'reads/row', 'reads/s', 'naive rows/s', 'vs naive', 'fio IOPS', 'rows vs fio', 'reads vs fio', 'cached after'];
  return [
    `layer ${r.layer} (${r.rows} rows), ${r.seconds} s per case${r.delayUs ? `, ${r.delayUs} us injected per read` : ''}`,
    r.cache,
    `machine: ${r.machine.cpus} x ${r.machine.cpuModel}, ${r.machine.memGiB} GiB, node ${r.machine.node} ${r.machine.arch}; ${r.fio ?? 'no fio baseline (not installed, skipped, or a delay is injected)'}`,
    '',
    table(head, rows),
    '',
    `recommended: SPARK_ENGRAM_THREADS=${r.recommendedThreads} (fewest threads within 5% of the best rows/s at the largest batch)`,
  ].join('\n');
}

export function benchSvg(r: GatherBenchReport): string {
  const keys = [...new Set(r.results.map((x) => `${x.source}|${x.batch}`))];
  const series = keys.map((k) => {
    const [source, batch] = k.split('|');
    return {
      name: `${source}, batch ${batch}`,
      points: r.results.filter((x) => x.source === source && String(x.batch) === batch).map((x) => ({ x: x.threads, y: x.rowsPerSec })),
    };
  });
  const cache = r.results[0]?.cold ? 'cold cache' : 'warm cache';
  return lineChartSvg(`Engram gather, layer ${r.layer}, ${cache}`, 'threads per batch', 'rows/s', series);
}

/**
 * The chart's destination, proven writable before minutes of measuring: its `.partial` is
 * created now (a missing directory or a read-only disk fails here, naming the path).
 */
function openSvgTarget(svg: string): { write(text: string): void; discard(): void } {
  if (statSync(svg, { throwIfNoEntry: false })?.isDirectory()) throw usageError(`--svg ${svg} is a directory; name the chart file`, { path: svg });
  const partial = `${svg}.partial`;
  try {
    closeSync(openSync(partial, 'w'));
  } catch (err) {
    throw withPath(err, partial);
  }
  return {
    write(text: string) {
      writeFileSync(partial, text);
      renameSync(partial, svg);
    },
    discard: () => rmSync(partial, { force: true }),
  };
}

export async function runBenchGather(o: BenchGatherRun, io: Io): Promise<CommandResult> {
  const progress = io.stderrIsTTY ? (line: string) => io.stderr(line + '\n') : undefined;
  const svg = o.svg ? openSvgTarget(o.svg) : undefined;
  let report: GatherBenchReport;
  try {
    report = await runGatherBench({ ...o, progress });
  } catch (err) {
    svg?.discard();
    throw err;
  }
  svg?.write(benchSvg(report));
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
}

const VARIANTS: BenchVariant[] = ['snapshot', 'snapshot+scales', 'packed'];

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
  };
}

export function benchCommand(ctx: CliContext): Command {
  const gather = new Command('gather')
    .description('random-id gathers through the row store, with fio and naive baselines from the same run')
    .argument('[source]', 'snapshot or packed directory; default $SPARK_ENGRAM_DIR')
    .option('--threads <list>', 'reader thread counts', '1,4,16,32,64,96')
    .option('--batch <list>', 'ids per batch (24: one token, 144: a speculative block, 49152: a 2048-token prefill)', '24,144,49152')
    .option('--seconds <s>', 'seconds per case', '2')
    .option('--cold', 'evict the source files from the page cache before every case')
    .option('--layer <L>', 'layer to read (default: the first)')
    .option('--direct', 'packed directories: O_DIRECT reads (fio runs with direct=1 too)')
    .option('--delay-us <n>', 'inject this delay before every read (models NFS latency; no baselines)')
    .option('--variants <list>', 'snapshot, snapshot+scales, packed (default: all the source supports)')
    .option('--no-fio', 'skip the fio baseline')
    .option('--no-naive', 'skip the naive TypeScript baseline')
    .option('--seed <n>', 'id generator seed', '1')
    .option('--no-dedup', 'row store: do not sort and de-duplicate ids (to measure what it pays)')
    .option('--no-merge', 'row store: one read per row piece, no page merging')
    .option('--no-fadvise', 'row store: no POSIX_FADV_RANDOM hint')
    .option('--svg <file>', 'write a chart of rows/s against threads per batch size')
    .option('--json', 'print {results: [...], recommendedThreads}')
    .addHelpText(
      'after',
      `
Ids are drawn like a serving rank's: 24 per token, one inside each (order, head) sub-table, with
repeated tokens and bigrams. Results are ratios to baselines measured in the same run.

Example:
  spark bench gather /nvme/engram-pack --threads 16,32,64 --batch 144,49152 --cold --svg gather.svg`,
    )
    .action(async (source: string | undefined, flags: Flags) => {
      ctx.emit(await runBenchGather(parseBenchGatherFlags(source, flags, ctx.io.env), ctx.io), Boolean(flags.json));
    });
  return new Command('bench').description('benchmarks: gather').addCommand(gather);
}
