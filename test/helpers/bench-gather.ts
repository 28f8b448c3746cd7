// Shared by test/gather-bench/bench-gather.test.ts (one case of each) and
// test/long/bench-gather-cases.test.ts (the matrices): `spark bench gather` on a page pack, on a
// dense pack beside the Mia stack's reader, and on a sparse copy; and the pack every bench test
// reads (benchPack).
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { synthRow } from '../../src/synth/synth-rows.js';
import { cli } from './cli.js';
import { writePackDir } from './engram-files.js';
import { tempDir } from './tmp.js';
import { makeSnapshot } from './synth.js';
import { floorRange, writeSparseCopy } from './sparse-copy.js';
import type { GatherBenchResult } from '../../src/gather-bench/gather-bench.js';
import { stampMiaHeaders } from '../../bench/lib/mia-header.js';

/** A rank-0-of-1 pack of one layer of `rows` synthetic rows in `layout`, in a new directory `pack`. */
export function benchPack(layout: 'page' | 'dense', rows = 3000, parent = tempDir()): string {
  const dir = join(parent, 'pack');
  mkdirSync(dir);
  writePackDir(
    dir,
    { rank: 0, world: 1, layout, dim: 256, layers: [{ layer: 1, rows, start: 0, end: rows }] },
    synthRow,
  );
  return dir;
}

const KEYS = ['source', 'layout', 'threads', 'batch', 'cold', 'rowsPerSec', 'mbPerSec', 'p50Ms', 'p99Ms', 'baselines'];

/**
 * A case for each thread count and batch on a page pack: the contract's JSON keys, the row
 * store's reader, a naive baseline and no fio, a recommendation among the counts run, a chart
 * line per batch; an unknown variant and one the pack cannot be read with refused (exit 2).
 */
export async function benchPackCases(threads: number[], batches: number[]): Promise<void> {
  const dir = benchPack('page');
  const svg = join(dir, '..', 'chart.svg');
  const args = ['--threads', threads.join(','), '--batch', batches.join(','), '--seconds', '1', '--no-fio'];
  const r = await cli(['bench', 'gather', dir, ...args, '--svg', svg, '--json']);
  assert.equal(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout);
  assert.equal(report.results.length, threads.length * batches.length);
  for (const x of report.results) {
    for (const k of KEYS) assert.ok(k in x, k);
    assert.deepEqual(
      [x.source, x.layout, x.variant, x.reader, x.cold],
      ['packed', 'page', 'packed', 'pread-pool', false],
    );
    assert.ok(x.rowsPerSec > 0 && x.baselines.naive.rowsPerSec > 0);
    assert.equal(x.baselines.fio, undefined);
  }
  assert.ok(threads.includes(report.recommendedThreads));
  const chart = readFileSync(svg, 'utf8');
  assert.match(chart, /^<svg /);
  assert.equal((chart.match(/<polyline /g) ?? []).length, batches.length);
  const bad = await cli(['bench', 'gather', dir, '--variants', 'nope']);
  assert.equal(bad.code, 2);
  // A variant the source cannot be read with is refused, never run on something else and relabelled.
  const overlay = await cli(['bench', 'gather', dir, '--variants', 'overlay', '--json']);
  assert.equal(overlay.code, 2);
  assert.match(
    JSON.parse(overlay.stderr).error.message,
    /--variants overlay cannot be measured on a packed directory: it takes packed/,
  );
}

/**
 * The Mia stack's reader beside the row store on a dense pack, at 2 threads and each batch:
 * refused before the pack carries the stack's header, then interleaved on the same batches with
 * the cache geometry asked for; refused on a page pack, which the stack does not read.
 */
export async function benchMiaCases(batches: number[]): Promise<void> {
  const dir = benchPack('dense');
  // Before the header is the stack's own, its reader would abort: the variant is refused, and left out by default.
  const v1 = await cli(['bench', 'gather', dir, '--variants', 'mia', '--json']);
  assert.equal(v1.code, 2);
  assert.match(
    JSON.parse(v1.stderr).error.message,
    /--variants mia: .*is not the stack's packed shard \(magic is .*its reader would abort on it/,
  );
  await stampMiaHeaders(dir);
  const r = await cli([
    'bench',
    'gather',
    dir,
    '--threads',
    '2',
    '--batch',
    batches.join(','),
    '--seconds',
    '1',
    '--no-fio',
    '--mia-cache-mib',
    '1',
    '--mia-ways',
    '8',
    '--json',
  ]);
  assert.equal(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout);
  assert.deepEqual(
    report.results.map((x: GatherBenchResult) => [x.variant, x.source, x.layout, x.reader, x.threads, x.batch]),
    batches.flatMap((b) => [
      ['packed', 'packed', 'dense', 'pread-pool', 2, b],
      ['mia', 'packed', 'dense', 'mia-pool', 2, b],
    ]),
  );
  for (const [a, b] of batches.map((_, i) => report.results.slice(2 * i, 2 * i + 2))) {
    // Interleaved: both ran the same batches.
    assert.equal(a.batchesRun, b.batchesRun);
    assert.ok(b.rowsPerSec > 0 && b.p99Ms >= b.p50Ms && b.baselines.naive.rowsPerSec > 0);
    // 1 MiB, 8 ways: 1048576 / (272 * 8 + 1) = 481 sets.
    assert.deepEqual(b.mia, { ...b.mia, budgetBytes: 1 << 20, ways: 8, cacheSlots: 481 * 8, ioThreads: 2 });
    assert.ok(b.readsPerRow > 0 && b.readsPerRow <= 1);
  }
  assert.equal(report.recommendedFor, 'packed');
  const page = join(tempDir(), 'page');
  mkdirSync(page);
  writePackDir(
    page,
    { rank: 0, world: 1, layout: 'page', dim: 256, layers: [{ layer: 1, rows: 300, start: 0, end: 300 }] },
    synthRow,
  );
  const refused = await cli(['bench', 'gather', page, '--variants', 'mia', '--json']);
  assert.equal(refused.code, 2);
  assert.match(JSON.parse(refused.stderr).error.message, /the Mia stack reads dense packs/);
}

/** What `spark bench gather` reports of each variant on a sparse copy: who reads which source, and how. */
const SPARSE_VARIANT = {
  snapshot: ['snapshot', 'snapshot', 'sparse', 'pread-pool'],
  overlay: ['overlay', 'snapshot', 'sparse', 'mmap'],
} as const;

/**
 * Rank 0 of 2's sparse copy of `flavour` measured with each variant at each thread count (batch
 * 24), labelled with what was read, a naive baseline beside each, the overlay's path recommended.
 */
export async function benchSparseCases(
  flavour: 'overlay' | 'spark',
  variants: (keyof typeof SPARSE_VARIANT)[],
  threads: number[],
): Promise<void> {
  const snap = makeSnapshot();
  const dir = join(tempDir(), 'copy');
  mkdirSync(dir);
  writeSparseCopy(snap.dir, dir, { flavour, ranges: snap.layers.map((l) => floorRange(l.layer, l.rows, 0, 2)) });
  const args = ['--threads', threads.join(','), '--batch', '24', '--seconds', '1', '--no-fio'];
  const r = await cli(['bench', 'gather', dir, ...args, '--variants', variants.join(','), '--json']);
  assert.equal(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout);
  assert.equal(report.sourceKind, 'sparse');
  assert.deepEqual(
    report.results.map((x: GatherBenchResult) => [x.variant, x.source, x.layout, x.reader, x.threads]),
    variants.flatMap((v) => threads.map((t) => [...SPARSE_VARIANT[v], t])),
  );
  for (const x of report.results) assert.ok(x.rowsPerSec > 0 && x.baselines.naive.rowsPerSec > 0);
  assert.equal(report.recommendedFor, 'overlay');
  assert.ok(threads.includes(report.recommendedThreads));
}
