// spark bench gather's case matrices in full (test/gather-bench/bench-gather.test.ts keeps one
// case of each in npm test): two thread counts by two batch sizes on a pack, both batches of
// the Mia reader beside the row store, both sparse-copy flavours, and the overlay baseline's
// absence with the row store's variants still running. A long trial (npm run test:long): each
// case runs at least one whole second.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { bin } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';
import { makeSnapshot } from '../helpers/synth.js';
import { benchMiaCases, benchPackCases, benchSparseCases } from '../helpers/bench-gather.js';

test('spark bench gather on a pack: contract JSON keys, a naive baseline, and an SVG chart', async () => {
  await benchPackCases([1, 2], [24, 48]);
});

test("spark bench gather on a dense pack with the Mia header: the Mia stack's reader beside the row store, interleaved on the same batches", async () => {
  await benchMiaCases([24, 48]);
});

for (const flavour of ['overlay', 'spark'] as const) {
  test(`spark bench gather on a sparse copy (${flavour}): the overlay's mmap path beside the pread pool, labelled with what was read`, async () => {
    await benchSparseCases(flavour, ['snapshot', 'overlay'], [1, 2]);
  });
}

test("without the overlay baseline the row store's variants still run (only the overlay's needs it)", () => {
  const snap = makeSnapshot();
  const args = ['bench', 'gather', snap.dir, '--threads', '1', '--batch', '24', '--seconds', '1', '--no-fio'];
  const missing = join(tempDir(), 'overlay_mmap_baseline.so');
  const rowStore = bin([...args, '--variants', 'snapshot', '--json'], {
    env: { SPARK_OVERLAY_BASELINE_PATH: missing },
  });
  assert.equal(rowStore.code, 0, rowStore.stderr);
});
