// Shared by test/gather-bench/bench-gather.test.ts (one thread count, one batch) and
// test/long/bench-gather-cases.test.ts (the matrix): `spark bench gather` on a page pack.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { synthRow } from '../../src/synth/synth-rows.js';
import { cli } from './cli.js';
import { writePackDir } from './engram-files.js';
import { tempDir } from './tmp.js';

const KEYS = ['source', 'layout', 'threads', 'batch', 'cold', 'rowsPerSec', 'mbPerSec', 'p50Ms', 'p99Ms', 'baselines'];

/**
 * A case for each thread count and batch on a page pack: the contract's JSON keys, the row
 * store's reader, a naive baseline and no fio, a recommendation among the counts run, a chart
 * line per batch; an unknown variant and one the pack cannot be read with refused (exit 2).
 */
export async function benchPackCases(threads: number[], batches: number[]): Promise<void> {
  const dir = join(tempDir(), 'pack');
  mkdirSync(dir);
  writePackDir(
    dir,
    { rank: 0, world: 1, layout: 'page', dim: 256, layers: [{ layer: 1, rows: 3000, start: 0, end: 3000 }] },
    synthRow,
  );
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
