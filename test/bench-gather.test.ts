import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { drawBatch, idModel, rng } from '../src/engram/bench-ids.js';
import { recommendThreads, type GatherBenchResult } from '../src/engram/gather-bench.js';
import { synthRow } from '../src/engram/synth-rows.js';
import { cli } from './helpers/cli.js';
import { writePackDir } from './helpers/engram-files.js';
import { tempDir } from './helpers/tmp.js';

test('bench ids: 24 per token, each inside its head sub-range, with repeats', () => {
  const sizes = Array.from({ length: 24 }, (_, i) => 1000 + i);
  const model = idModel(sizes.reduce((a, b) => a + b, 0), 0, 24276, sizes);
  const ids = drawBatch(model, 24 * 500, rng(7));
  assert.equal(ids.length, 12000);
  let at = 0;
  const bounds = sizes.map((s) => [at, (at += s)]);
  ids.forEach((id, i) => {
    const [lo, hi] = bounds[i % 24];
    assert.ok(id >= lo && id < hi, `id ${id} at ${i} outside head ${i % 24}`);
  });
  const distinct = new Set(ids).size;
  assert.ok(distinct < ids.length * 0.9 && distinct > ids.length * 0.5, `distinct ${distinct}`);
  const clipped = idModel(24276, 5000, 9000, sizes);
  assert.ok(drawBatch(clipped, 240, rng(1)).every((id) => id >= 5000 && id < 9000));
});

test('the recommendation is the fewest threads within 5% of the best at the largest batch', () => {
  const r = (threads: number, batch: number, rowsPerSec: number) => ({ source: 'packed', threads, batch, rowsPerSec }) as GatherBenchResult;
  assert.equal(recommendThreads([r(1, 49152, 10), r(32, 49152, 97), r(64, 49152, 100), r(96, 49152, 99), r(1, 24, 1000)]), 32);
});

test('spark bench gather on a pack: contract JSON keys, a naive baseline, and an SVG chart', async () => {
  const dir = join(tempDir(), 'pack');
  mkdirSync(dir);
  writePackDir(dir, { rank: 0, world: 1, layout: 'page', dim: 256, layers: [{ layer: 1, rows: 3000, start: 0, end: 3000 }] }, synthRow);
  const svg = join(dir, '..', 'chart.svg');
  const r = await cli(['bench', 'gather', dir, '--threads', '1,2', '--batch', '24,48', '--seconds', '1', '--no-fio', '--svg', svg, '--json']);
  assert.equal(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout);
  assert.equal(report.results.length, 4);
  for (const x of report.results) {
    assert.deepEqual(Object.keys(x).filter((k) => ['source', 'layout', 'threads', 'batch', 'cold', 'rowsPerSec', 'mbPerSec', 'p50Ms', 'p99Ms', 'baselines'].includes(k)).length, 10);
    assert.equal(x.source, 'packed');
    assert.equal(x.layout, 'page');
    assert.equal(x.cold, false);
    assert.ok(x.rowsPerSec > 0 && x.baselines.naive.rowsPerSec > 0);
    assert.equal(x.baselines.fio, undefined);
  }
  assert.ok([1, 2].includes(report.recommendedThreads));
  const chart = readFileSync(svg, 'utf8');
  assert.match(chart, /^<svg /);
  assert.equal((chart.match(/<polyline /g) ?? []).length, 2);
  const bad = await cli(['bench', 'gather', dir, '--variants', 'nope']);
  assert.equal(bad.code, 2);
});
