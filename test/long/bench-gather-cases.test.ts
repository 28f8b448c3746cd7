// spark bench gather's case matrices in full (test/gather-bench/bench-gather.test.ts keeps one
// case of each in npm test): two thread counts by two batch sizes on a pack, both batches of
// the Mia reader beside the row store, both sparse-copy flavours, and the overlay baseline's
// absence with the row store's variants still running. A long trial (npm run test:long): each
// case runs at least one whole second.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { createRequire } from 'node:module';
import { type GatherBenchResult } from '../../src/gather-bench/gather-bench.js';
import { synthRow } from '../../src/synth/synth-rows.js';
import { bin, cli } from '../helpers/cli.js';
import { writePackDir } from '../helpers/engram-files.js';
import { tempDir } from '../helpers/tmp.js';
import { makeSnapshot } from '../helpers/synth.js';
import { floorRange, writeSparseCopy } from '../helpers/sparse-copy.js';
import { overlayBaselinePath } from '../../src/gather-bench/overlay-baseline.js';
import { addon, packageRoot } from '../../src/addon/index.js';
import { benchPackCases } from '../helpers/bench-gather.js';
import { stampMiaHeaders } from '../../bench/lib/mia-header.js';

test('spark bench gather on a pack: contract JSON keys, a naive baseline, and an SVG chart', async () => {
  await benchPackCases([1, 2], [24, 48]);
});

test("spark bench gather on a dense pack with the Mia header: the Mia stack's reader beside the row store, interleaved on the same batches", async () => {
  const dir = join(tempDir(), 'pack');
  mkdirSync(dir);
  writePackDir(
    dir,
    { rank: 0, world: 1, layout: 'dense', dim: 256, layers: [{ layer: 1, rows: 3000, start: 0, end: 3000 }] },
    synthRow,
  );
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
    '24,48',
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
    [
      ['packed', 'packed', 'dense', 'pread-pool', 2, 24],
      ['mia', 'packed', 'dense', 'mia-pool', 2, 24],
      ['packed', 'packed', 'dense', 'pread-pool', 2, 48],
      ['mia', 'packed', 'dense', 'mia-pool', 2, 48],
    ],
  );
  for (const [a, b] of [report.results.slice(0, 2), report.results.slice(2)]) {
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
});

for (const flavour of ['overlay', 'spark'] as const) {
  test(`spark bench gather on a sparse copy (${flavour}): the overlay's mmap path beside the pread pool, labelled with what was read`, async () => {
    const snap = makeSnapshot();
    const dir = join(tempDir(), 'copy');
    mkdirSync(dir);
    writeSparseCopy(snap.dir, dir, { flavour, ranges: snap.layers.map((l) => floorRange(l.layer, l.rows, 0, 2)) });
    const r = await cli([
      'bench',
      'gather',
      dir,
      '--threads',
      '1,2',
      '--batch',
      '24',
      '--seconds',
      '1',
      '--no-fio',
      '--variants',
      'snapshot,overlay',
      '--json',
    ]);
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout);
    assert.equal(report.sourceKind, 'sparse');
    assert.deepEqual(
      report.results.map((x: GatherBenchResult) => [x.variant, x.source, x.layout, x.reader, x.threads]),
      [
        ['snapshot', 'snapshot', 'sparse', 'pread-pool', 1],
        ['snapshot', 'snapshot', 'sparse', 'pread-pool', 2],
        ['overlay', 'snapshot', 'sparse', 'mmap', 1],
        ['overlay', 'snapshot', 'sparse', 'mmap', 2],
      ],
    );
    for (const x of report.results) assert.ok(x.rowsPerSec > 0 && x.baselines.naive.rowsPerSec > 0);
    assert.equal(report.recommendedFor, 'overlay');
    assert.ok([1, 2].includes(report.recommendedThreads));
  });
}

test("the overlay baseline is a module of its own: not in spark's addon, loaded by path, exit 3 naming the fix when it is not built", () => {
  assert.equal(
    'MmapGather' in (addon() as unknown as Record<string, unknown>),
    false,
    "spark's addon carries no baseline",
  );
  assert.equal(overlayBaselinePath({}), join(packageRoot(), 'build', 'Release', 'overlay_mmap_baseline.so'));
  assert.ok(existsSync(overlayBaselinePath({})), 'npm install builds it (node-gyp builds every target of binding.gyp)');
  // Not a .node file: node-gyp-build loads the first one in build/Release as spark's addon.
  const nodeGypBuild = createRequire(import.meta.url)('node-gyp-build') as { path(dir: string): string };
  assert.equal(basename(nodeGypBuild.path(packageRoot())), 'spark.node');
  assert.equal(overlayBaselinePath({ SPARK_OVERLAY_BASELINE_PATH: '/x/y.node' }), '/x/y.node');
  const snap = makeSnapshot();
  const args = ['bench', 'gather', snap.dir, '--threads', '1', '--batch', '24', '--seconds', '1', '--no-fio'];
  const missing = join(tempDir(), 'overlay_mmap_baseline.so');
  const notBuilt = bin([...args, '--variants', 'overlay', '--json'], { env: { SPARK_OVERLAY_BASELINE_PATH: missing } });
  assert.equal(notBuilt.code, 3, notBuilt.stderr);
  const err = JSON.parse(notBuilt.stderr).error;
  assert.equal(err.code, 'E_ADDON_LOAD');
  assert.match(
    err.message,
    /the overlay baseline is not built: .*overlay_mmap_baseline\.so does not exist; build it with 'npm run build:native'/,
  );
  const junk = join(tempDir(), 'junk.node');
  writeFileSync(junk, 'not a shared object\n');
  const bad = bin([...args, '--variants', 'overlay', '--json'], { env: { SPARK_OVERLAY_BASELINE_PATH: junk } });
  assert.equal(bad.code, 3, bad.stderr);
  assert.match(JSON.parse(bad.stderr).error.message, /the overlay baseline could not be loaded from .*junk\.node/);
  // Only the overlay variant needs it: the row store's variants run without it.
  const rowStore = bin([...args, '--variants', 'snapshot', '--json'], {
    env: { SPARK_OVERLAY_BASELINE_PATH: missing },
  });
  assert.equal(rowStore.code, 0, rowStore.stderr);
});
