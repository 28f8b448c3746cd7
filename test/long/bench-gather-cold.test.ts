// spark bench gather --cold end to end on a pack the page cache holds: each case says it is not
// cold and why, --evict-every-batch makes it cold, --merge-gain adds the no-merge twins, and the
// text output carries the WARNING. A long trial (npm run test:long): three runs of a second or
// more each; npm test holds the verdict itself (test/gather-bench/bench-report.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { GatherBenchResult } from '../../src/gather-bench/gather-result.js';
import { cli } from '../helpers/cli.js';
import { benchPack } from '../helpers/bench-gather.js';

test('spark bench gather --cold on a small pack: coldValid false with the reason, per-row numbers on every case; --evict-every-batch makes it valid; --merge-gain adds no-merge twins; the text names the WARNING', async () => {
  const dir = benchPack('page');
  // One cold case of a second, no fio and no naive loop; `args` adds the threads, batch and the rest.
  const cold = (...args: string[]) =>
    cli(['bench', 'gather', dir, '--cold', '--seconds', '1', '--no-fio', '--no-naive', ...args]);
  const r = await cold('--threads', '2', '--batch', '48', '--merge-gain', '--json');
  assert.equal(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout);
  assert.equal(report.readRangeBytes, 200 * 4096); // 3000 rows, 15 per page
  assert.equal(report.cold.valid, false);
  assert.match(report.ceilingNote, /no device ceiling/);
  assert.deepEqual(
    report.results.map((x: GatherBenchResult) => x.merge),
    [undefined, false],
  );
  for (const x of report.results as GatherBenchResult[]) {
    assert.equal(x.coldValid, false);
    assert.match(x.coldReason!, /fits in the page cache/);
    assert.ok(x.cpuUsPerRow > 0 && x.readsPerRow! > 0 && x.readsPerSec! > 0);
    assert.ok(x.mergedFraction! >= 0 && x.duplicateFraction! > 0, 'the id model repeats tokens');
    assert.equal(x.ofCeiling, undefined);
  }
  assert.equal(report.results[1].mergedFraction, 0, 'merging off merges nothing');
  assert.ok(report.results[0].mergeGain > 0);
  const evicting = await cold('--evict-every-batch', '--threads', '1', '--batch', '24', '--json');
  assert.equal(evicting.code, 0, evicting.stderr);
  const ev = JSON.parse(evicting.stdout);
  assert.equal(ev.cold.valid, true);
  assert.equal(ev.results[0].coldValid, true);
  const text = await cold('--threads', '1', '--batch', '24');
  assert.match(text.stdout, /WARNING: cold cases read through the page cache are NOT cold/);
});
