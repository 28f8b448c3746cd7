// spark bench gather: one case of each matrix here; the full matrices (thread counts by batch
// sizes, both sparse-copy flavours, the row store's variants without the overlay baseline) are
// in test/long/bench-gather-cases.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { createRequire } from 'node:module';
import { drawBatch, idModel, rng } from '../../src/gather-bench/bench-ids.js';
import { recommendThreads, type BenchVariant, type GatherBenchResult } from '../../src/gather-bench/gather-bench.js';
import { synthRow } from '../../src/synth/synth-rows.js';
import { bin, cli } from '../helpers/cli.js';
import { writePackDir } from '../helpers/engram-files.js';
import { tempDir } from '../helpers/tmp.js';
import { makeSnapshot } from '../helpers/synth.js';
import { floorRange, writeSparseCopy } from '../helpers/sparse-copy.js';
import { openSnapshot } from '../../src/engram/snapshot.js';
import { MmapGather, overlayBaselinePath, type MmapTableSpec } from '../../src/gather-bench/overlay-baseline.js';
import { addon, packageRoot } from '../../src/addon/index.js';
import { NaiveGather } from '../../src/gather-bench/naive-gather.js';
import { openRowSource } from '../../src/stacks/local-copy.js';
import { benchMiaCases, benchPackCases, benchSparseCases } from '../helpers/bench-gather.js';

test('bench ids: 24 per token, each inside its head sub-range, with repeats', () => {
  const sizes = Array.from({ length: 24 }, (_, i) => 1000 + i);
  const model = idModel(
    sizes.reduce((a, b) => a + b, 0),
    0,
    24276,
    sizes,
  );
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

test('the recommendation is the fewest threads within 5% of the best at the largest batch, on the overlay path when it ran', () => {
  const r = (variant: BenchVariant, threads: number, batch: number, rowsPerSec: number) =>
    ({ variant, threads, batch, rowsPerSec }) as GatherBenchResult;
  assert.deepEqual(
    recommendThreads([
      r('packed', 1, 49152, 10),
      r('packed', 32, 49152, 97),
      r('packed', 64, 49152, 100),
      r('packed', 96, 49152, 99),
      r('packed', 1, 24, 1000),
    ]),
    { threads: 32, variant: 'packed' },
  );
  const mixed = [
    r('snapshot', 4, 49152, 100),
    r('snapshot', 64, 49152, 101),
    r('overlay', 4, 49152, 50),
    r('overlay', 64, 49152, 90),
    r('overlay', 96, 49152, 92),
  ];
  assert.deepEqual(recommendThreads(mixed), { threads: 64, variant: 'overlay' });
});

test('spark bench gather on a pack, one case: contract JSON keys, a naive baseline, and an SVG chart', async () => {
  await benchPackCases([1], [24]);
});

test("spark bench gather on a dense pack with the Mia header, one batch size: the Mia stack's reader beside the row store, interleaved on the same batches", async () => {
  await benchMiaCases([24]);
});

test('spark bench gather on a snapshot refuses --variants packed', async () => {
  const snap = makeSnapshot();
  const r = await cli(['bench', 'gather', snap.dir, '--variants', 'packed', '--json']);
  assert.equal(r.code, 2);
  assert.match(
    JSON.parse(r.stderr).error.message,
    /--variants packed cannot be measured on a snapshot: it takes snapshot, snapshot\+scales, overlay/,
  );
});

test("spark bench gather on a sparse copy (overlay), one case: the overlay's mmap path, labelled with what was read", async () => {
  await benchSparseCases('overlay', ['overlay'], [1]);
});

test("the overlay's mmap gather: rows byte-exact for owned ids, zeros for the others, ids past the table refused", async () => {
  const snap = makeSnapshot();
  const t = (await openSnapshot(snap.dir)).engram[1];
  const [lo, hi] = [1000, 5000];
  const g = MmapGather.open(
    [
      {
        layer: t.layer,
        rows: t.rows,
        dim: t.dim,
        weight: { path: t.weight.file, offset: t.weight.fileOffset },
        scale: { path: t.scale.file, offset: t.scale.fileOffset },
        range: [lo, hi],
      },
    ],
    { threads: 3 },
  );
  try {
    const ids = Array.from({ length: 200 }, (_, i) => (i * 7919) % t.rows);
    ids.push(lo, hi - 1, lo - 1, hi, lo);
    await g.gather(t.layer, ids);
    const out = g.rows();
    assert.equal(out.length, ids.length * t.rowBytes);
    let zeros = 0;
    ids.forEach((id, i) => {
      const row = out.subarray(i * t.rowBytes, (i + 1) * t.rowBytes);
      const owned = id >= lo && id < hi;
      if (!owned) zeros++;
      assert.ok(row.equals(owned ? synthRow(t.layer, id, 256) : Buffer.alloc(t.rowBytes)), `id ${id} (owned ${owned})`);
    });
    assert.deepEqual(g.stats(), { batches: 1, rows: ids.length, zeroRows: zeros, threads: 3 });
    await g.gather(t.layer, [hi]);
    assert.ok(g.rows().equals(Buffer.alloc(t.rowBytes)), 'rows() holds the last batch only');
    await assert.rejects(g.gather(t.layer, [t.rows]), {
      code: 'E_ROW_RANGE',
      message: new RegExp(`row id ${t.rows} \\(batch index 0\\) is outside the table`),
    });
    await assert.rejects(g.gather(7, [0]), { code: 'E_ROW_RANGE' });
    const first = g.gather(t.layer, [lo]);
    await assert.rejects(g.gather(t.layer, [lo]), /one batch at a time/);
    await first;
  } finally {
    await g.close();
  }
  assert.throws(
    () =>
      MmapGather.open(
        [
          {
            layer: 1,
            rows: 10,
            dim: 256,
            weight: { path: snap.dir, offset: 0 },
            scale: { path: snap.dir, offset: 0 },
            range: [0, 10],
          },
        ],
        { threads: 1 },
      ),
    { code: 'E_SHARD_MISSING' },
  );
  // The table shape is the row store's snapshot table plus a required owned range.
  const noRange = {
    layer: 1,
    rows: 10,
    dim: 256,
    weight: { path: snap.dir, offset: 0 },
    scale: { path: snap.dir, offset: 0 },
  };
  assert.throws(() => MmapGather.open([noRange as unknown as MmapTableSpec], { threads: 1 }), {
    message: /tables\[0\]\.range is required: \[lo, hi\)/,
  });
  assert.throws(
    () => MmapGather.open([{ ...noRange, weight: { path: snap.dir } } as unknown as MmapTableSpec], { threads: 1 }),
    { message: /tables\[0\]\.weight\.offset/ },
  );
});

test("the overlay baseline is a module of its own: not in spark's addon, loaded by path, exit 3 naming the fix when it is not built or not loadable", () => {
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
});

test('the naive baseline reads a sparse copy inside its range, resident scales of that range only', async () => {
  const snap = makeSnapshot();
  const dir = join(tempDir(), 'copy');
  mkdirSync(dir);
  const r = floorRange(14, snap.layers[1].rows, 1, 2);
  writeSparseCopy(snap.dir, dir, { flavour: 'overlay', ranges: [r] });
  const src = await openRowSource(dir, { threads: 1 });
  const spec = src.specs[0];
  await src.close();
  for (const resident of [false, true]) {
    const ng = await NaiveGather.open(spec, resident);
    try {
      const ids = [r.start, r.end - 1, r.start + 999];
      const out = await ng.gather(ids);
      ids.forEach((id, i) =>
        assert.ok(out.subarray(i * 264, (i + 1) * 264).equals(synthRow(14, id, 256)), `id ${id} resident ${resident}`),
      );
    } finally {
      await ng.close();
    }
  }
});

test('a bad --svg path fails before the run (exit 2), not after it', async () => {
  const dir = join(tempDir(), 'pack');
  mkdirSync(dir);
  writePackDir(
    dir,
    { rank: 0, world: 1, layout: 'dense', dim: 256, layers: [{ layer: 1, rows: 100, start: 0, end: 100 }] },
    synthRow,
  );
  const t0 = performance.now();
  const r = await cli([
    'bench',
    'gather',
    dir,
    '--seconds',
    '30',
    '--svg',
    join(dir, 'missing', 'chart.svg'),
    '--json',
  ]);
  assert.equal(r.code, 2);
  assert.match(JSON.parse(r.stderr).error.message, /--svg .*chart\.svg: .*missing is not a directory/);
  assert.ok(performance.now() - t0 < 10_000, 'refused before the 30 s cases ran');
  const taken = join(dir, 'taken.svg');
  mkdirSync(taken);
  assert.equal((await cli(['bench', 'gather', dir, '--svg', taken])).code, 2);
});
