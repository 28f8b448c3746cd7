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
import { loadavg } from 'node:os';
import { readModelConfig } from '../engram/config.js';
import { drawBatch, idModel, rng } from './bench-ids.js';
import { type BenchVariant } from './gather-result.js';
import { miaTarget } from './mia-case.js';
import { miaDriverPath } from './mia-reader.js';
import { engramSubTableSizes } from '../engram/primes.js';
import { SOURCE_NOUN, type RowSourceKind } from '../stacks/row-source.js';
import { openRowSource } from '../stacks/local-copy.js';
import { usageError } from '../errors/errors.js';
import { loadOverlayBaseline } from './overlay-baseline.js';
import { originalOf, originalsReading, readerOf, variantWith } from './originals.js';
import { GatherRun } from './gather-run.js';
import type { BatchDrawer, GatherBenchOptions, GatherBenchReport, MiaChoice, ProbedSource } from './gather-types.js';

export { recommendThreads, type BenchEngine, type BenchVariant, type GatherBenchResult } from './gather-result.js';
export type { GatherBenchOptions, GatherBenchReport } from './gather-types.js';

/** The variants a source can be measured with: each reads the source the way its name says. */
export const VARIANTS_OF: Record<RowSourceKind, BenchVariant[]> = {
  snapshot: ['snapshot', 'snapshot+scales', ...originalsReading('snapshot')],
  sparse: ['snapshot', 'snapshot+scales', ...originalsReading('sparse')],
  packed: ['packed', ...originalsReading('packed')],
};

/** Every variant, in the order --help lists them. */
export const ALL_VARIANTS: BenchVariant[] = [...new Set(Object.values(VARIANTS_OF).flat())];

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
      `--variants ${wrong} cannot be measured on a ${SOURCE_NOUN[kind]}: it takes ${possible.join(', ')}`,
    );
  for (const v of possible.filter((p) => originalOf(p) && asked?.includes(p))) {
    if (delayUs !== undefined)
      throw usageError(`--delay-us slows the row store's reads; the ${v} variant has none to slow: leave it out`);
  }
  const pool = variantWith('mia-pool', asked ?? []);
  if (pool && miaRefused) throw usageError(`--variants ${pool}: ${miaRefused}`);
  const runs = (v: BenchVariant) =>
    !originalOf(v) || (delayUs === undefined && (readerOf(v) !== 'mia-pool' || !miaRefused));
  return asked ?? possible.filter(runs);
}

export async function runGatherBench(o: GatherBenchOptions): Promise<GatherBenchReport> {
  const loadAvgBefore = loadavg();
  const source = await probeSource(o);
  const { variants, mia } = chooseVariants(o, source);
  const run = new GatherRun(o, source, variants, mia, await batchDrawer(o, source));
  // The device ceiling first (O_DIRECT: it leaves the page cache alone), then the baselines
  // that depend on the batch alone (naive), then the cases.
  run.measureCeiling();
  await run.measureNaive();
  for (const v of variants) for (const t of o.threads) await run.runCases(v, t);
  return run.report(loadAvgBefore);
}

/** Opens the source once to learn its kind, its first (or --layer) table and its files. */
async function probeSource(o: GatherBenchOptions): Promise<ProbedSource> {
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
  return { table, spec, files, kind };
}

/** The variants to run (refused by name when the source cannot be read so), and the Mia reader's target. */
function chooseVariants(
  o: GatherBenchOptions,
  { kind, spec, table }: ProbedSource,
): { variants: BenchVariant[]; mia: MiaChoice } {
  const mia: MiaChoice = kind === 'packed' ? miaTarget(spec, table) : { refused: 'it reads packs only' };
  const miaRefused =
    'refused' in mia
      ? mia.refused
      : existsSync(miaDriverPath())
        ? undefined
        : `the Mia baseline is not built (${miaDriverPath()} missing): run 'npm run build:native'`;
  const variants = benchVariants(kind, o.variants, o.delayUs, miaRefused);
  if (variantWith('mmap', variants)) loadOverlayBaseline();
  if (o.delayUs !== undefined && o.engines?.includes('uring'))
    throw usageError(
      "--delay-us slows the pread pool's reads; the uring engine does not sleep per read: leave uring out of --engines",
    );
  return { variants, mia };
}

/** Batches of random ids as the engine asks for them: per head sub-table where the config gives them. */
async function batchDrawer(o: GatherBenchOptions, { kind, table }: ProbedSource): Promise<BatchDrawer> {
  let sizes: number[] | undefined;
  if (kind === 'snapshot') {
    const cfg = await readModelConfig(o.source).catch(() => undefined);
    const s = cfg?.engram ? engramSubTableSizes(cfg.engram).get(table.layer) : undefined;
    if (s && s.reduce((a, b) => a + b, 0) === table.rows) sizes = s;
  }
  const model = idModel(table.rows, table.start, table.end, sizes);
  const random = rng(o.seed ?? 1);
  return (b) => () => drawBatch(model, b, random);
}
