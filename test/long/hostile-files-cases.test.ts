// Hostile files, every case (test/cli/hostile-files.test.ts keeps one of each kind in npm test):
// each snapshot file and each of the recipe, cluster and env files as a FIFO, a directory, a
// device or a huge file, a catastrophic pattern on both pattern flags, and a sparse copy's index
// and shard as FIFOs. A long trial (npm run test:long): one spark process per case.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { MATCH_BUDGET_MS } from '../../src/engram/pattern-match.js';
import { binPath } from '../helpers/cli.js';
import { world } from '../helpers/preflight.js';
import { makeSnapshot } from '../helpers/synth.js';
import { tempDir } from '../helpers/tmp.js';
import {
  type ArgCase,
  BOUND_MS,
  inspectRefuses,
  mkfifo,
  refusesNotAFile,
  SNAPSHOT_CASES,
  spark,
  verifyRefusesFifo,
} from '../helpers/hostile-files.js';

test(
  'snapshot files: a FIFO or directory as config.json, the index or a shard is exit 2 naming it',
  { timeout: 4 * BOUND_MS },
  () => {
    for (const c of SNAPSHOT_CASES) inspectRefuses(c);
    // The snapshot argument itself a FIFO.
    const fifo = mkfifo(join(tempDir(), 'snap'));
    const r = spark(['inspect', fifo]);
    assert.equal(r.code, 2, r.error.message);
    assert.equal(r.error.code, 'E_NOT_A_FILE');
  },
);

test('recipe, cluster and env files that are FIFOs are exit 2 naming them', { timeout: 4 * BOUND_MS }, async () => {
  const w = await world();
  const recipe = w.recipe(w.dsv41Text);
  const dir = tempDir();
  const fifoRecipe = mkfifo(join(dir, 'recipe.toml'));
  const fifoCluster = mkfifo(join(dir, 'cluster.toml'));
  const fifoEnv = mkfifo(join(dir, '.env'));
  const cases: ArgCase[] = [
    [['preflight', fifoRecipe], fifoRecipe, 'recipe'],
    [['preflight', recipe, '--cluster', fifoCluster], fifoCluster, 'cluster file'],
    [['preflight', recipe, '--cluster', w.cluster, '--env', fifoEnv], fifoEnv, 'env file'],
    [['launch', recipe, '--cluster', fifoCluster, '--dry-run'], fifoCluster, 'cluster file'],
    [['launch', recipe, '--cluster', w.cluster, '--env', fifoEnv, '--dry-run'], fifoEnv, 'env file'],
    [['preflight', '/dev/null'], '/dev/null', 'recipe'],
  ];
  for (const c of cases) refusesNotAFile(c);
});

test('a catastrophic --weight-pattern is refused within its time bound, not a hang', { timeout: 2 * BOUND_MS }, () => {
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
  // A sane custom pattern still finds the tables, and the same bound applies to engram-ranges.
  const ok = spawnSync(
    process.execPath,
    [binPath, 'inspect', snap.dir, '--json', '--weight-pattern', '^layers\\.(\\d+)\\.engram\\.embed\\.weight$'],
    { encoding: 'utf8', timeout: BOUND_MS },
  );
  assert.equal(ok.status, 0, ok.stderr);
  assert.deepEqual(
    JSON.parse(ok.stdout).engram.map((e: { layer: number }) => e.layer),
    [1, 14],
  );
  const ranges = spark([
    'engram-ranges',
    snap.dir,
    '--rank',
    '0',
    '--world',
    '2',
    '--scale-pattern',
    evil.replace('X', 'Y'),
  ]);
  assert.equal(ranges.code, 2, ranges.error.message);
  assert.match(ranges.error.message, /^--scale-pattern '.*' did not finish matching/);
});

test(
  'verify of a sparse copy whose index or shard is a FIFO fails at once, naming it',
  { timeout: 4 * BOUND_MS },
  () => {
    const snap = makeSnapshot();
    for (const victim of ['model.safetensors.index.json', 'model-00002-of-00003.safetensors']) {
      verifyRefusesFifo(snap, victim);
    }
  },
);
