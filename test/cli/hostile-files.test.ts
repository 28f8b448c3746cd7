// Files that are not what they claim: a FIFO, a device, a directory or a huge file where
// spark expects a small regular file. Every case runs as a real process under a time bound:
// a reader that blocks on a FIFO would hang the test runner itself. One case of each kind here;
// every case is in test/long/hostile-files-cases.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MATCH_BUDGET_MS } from '../../src/engram/pattern-match.js';
import { readSmallText, readSmallTextSync } from '../../src/files/small-file.js';
import { world } from '../helpers/preflight.js';
import { buildSysfs, typical } from '../helpers/sysfs.js';
import { makeSnapshot } from '../helpers/synth.js';
import { tempDir } from '../helpers/tmp.js';
import {
  BOUND_MS,
  inspectRefuses,
  mkfifo,
  refusesNotAFile,
  SNAPSHOT_CASES,
  spark,
  verifyRefusesFifo,
} from '../helpers/hostile-files.js';

test('snapshot files: a FIFO as config.json or a 20 MiB one is exit 2 naming it', { timeout: 4 * BOUND_MS }, () => {
  for (const c of SNAPSHOT_CASES.filter(([what]) => what === 'config.json FIFO' || what === 'a 20 MiB config.json')) {
    inspectRefuses(c);
  }
});

test('a cluster file that is a FIFO is exit 2 naming it', { timeout: 4 * BOUND_MS }, async () => {
  const w = await world();
  const recipe = w.recipe(w.dsv41Text);
  const dir = tempDir();
  const fifoCluster = mkfifo(join(dir, 'cluster.toml'));
  refusesNotAFile([['launch', recipe, '--cluster', fifoCluster, '--dry-run'], fifoCluster, 'cluster file']);
});

test('a FIFO under --sysfs is exit 2 naming it, not a hang', { timeout: 2 * BOUND_MS }, () => {
  const sysfs = buildSysfs({ rocep1s0f0: { 1: typical('192.168.200.11') } });
  const gid = join(sysfs, 'class', 'infiniband', 'rocep1s0f0', 'ports', '1', 'gids', '3');
  rmSync(gid);
  mkfifo(gid);
  const r = spark(['gid', '--hca', 'rocep1s0f0', '--sysfs', sysfs]);
  assert.equal(r.code, 2, r.error.message);
  assert.equal(r.error.code, 'E_NOT_A_FILE');
  assert.ok(r.error.message.includes(gid), r.error.message);
});

test('readSmallText reads to EOF (sysfs and /proc sizes lie), refuses past the cap', async () => {
  // /proc files report size 0 yet hold text.
  const status = await readSmallText('/proc/self/status', { what: 'status file' });
  assert.match(status, /^Name:/m);
  assert.match(readSmallTextSync('/proc/self/status', { what: 'status file' }), /^Pid:/m);
  const dir = tempDir();
  const file = join(dir, 'big');
  writeFileSync(file, 'x'.repeat(1000));
  assert.equal((await readSmallText(file, { what: 'file', maxBytes: 1000 })).length, 1000);
  await assert.rejects(readSmallText(file, { what: 'file', maxBytes: 999 }), { code: 'E_FILE_TOO_LARGE' });
  assert.throws(() => readSmallTextSync(file, { what: 'file', maxBytes: 999 }), { code: 'E_FILE_TOO_LARGE' });
  // A device is refused before any read (/dev/zero would never end).
  await assert.rejects(readSmallText('/dev/zero', { what: 'file' }), { code: 'E_NOT_A_FILE' });
  // Absent stays the caller's business (ENOENT as Node raised it).
  await assert.rejects(readSmallText(join(dir, 'nope'), { what: 'file' }), { code: 'ENOENT' });
});

test(
  'a catastrophic --weight-pattern is refused by inspect within its time bound, not a hang',
  { timeout: 2 * BOUND_MS },
  () => {
    const snap = makeSnapshot();
    // Exponential backtracking on every name that fails to match: minutes for one 28-char name.
    const evil = '^(?:(?:[a-z]|\\.|[a-z0-9])*)*X(\\d+)$';
    const began = Date.now();
    const r = spark(['inspect', snap.dir, '--weight-pattern', evil]);
    assert.equal(r.code, 2, r.error.message);
    assert.equal(r.error.code, 'E_USAGE');
    assert.ok(r.error.message.startsWith(`--weight-pattern '${evil}' did not finish matching `), r.error.message);
    assert.match(r.error.message, /within 2 s \(catastrophic backtracking/);
    assert.ok(Date.now() - began < MATCH_BUDGET_MS + 8000, `took ${Date.now() - began} ms`);
  },
);

test('verify of a sparse copy whose index is a FIFO fails at once, naming it', { timeout: 4 * BOUND_MS }, () => {
  verifyRefusesFifo(makeSnapshot(), 'model.safetensors.index.json');
});
