// Files that are not what they claim: a FIFO, a device, a directory or a huge file where
// spark expects a small regular file. Every case runs as a real process under a time bound:
// a reader that blocks on a FIFO would hang the test runner itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MATCH_BUDGET_MS } from '../../src/engram/pattern-match.js';
import { readSmallText, readSmallTextSync } from '../../src/files/small-file.js';
import { binPath } from '../helpers/cli.js';
import { world } from '../helpers/preflight.js';
import { buildSysfs, typical } from '../helpers/sysfs.js';
import { floorRange, writeSparseCopy } from '../helpers/sparse-copy.js';
import { makeSnapshot } from '../helpers/synth.js';
import { tempDir } from '../helpers/tmp.js';

const BOUND_MS = 20_000;

function mkfifo(path: string): string {
  execFileSync('mkfifo', [path]);
  return path;
}

/** Runs spark; a run that outlives the bound is killed and fails the test. */
function spark(argv: string[]): { code: number; error: { code: string; message: string } } {
  const r = spawnSync(process.execPath, [binPath, ...argv, '--json'], {
    encoding: 'utf8',
    timeout: BOUND_MS,
    input: '',
  });
  assert.equal(r.signal, null, `spark ${argv.join(' ')} hung (killed after ${BOUND_MS} ms)`);
  const line = r.stderr.trim().split('\n').at(-1) ?? '';
  return { code: r.status ?? -1, error: (JSON.parse(line) as { error: { code: string; message: string } }).error };
}

test(
  'snapshot files: a FIFO or directory as config.json, the index or a shard is exit 2 naming it',
  { timeout: 4 * BOUND_MS },
  () => {
    const cases: [string, (dir: string) => string, string][] = [
      ['config.json FIFO', (d) => (rmSync(join(d, 'config.json')), mkfifo(join(d, 'config.json'))), 'E_NOT_A_FILE'],
      [
        'config.json directory',
        (d) => (rmSync(join(d, 'config.json')), mkdirSync(join(d, 'config.json')), join(d, 'config.json')),
        'E_NOT_A_FILE',
      ],
      [
        'index FIFO',
        (d) => (rmSync(join(d, 'model.safetensors.index.json')), mkfifo(join(d, 'model.safetensors.index.json'))),
        'E_NOT_A_FILE',
      ],
      [
        'shard FIFO',
        (d) => (
          rmSync(join(d, 'model-00001-of-00003.safetensors')),
          mkfifo(join(d, 'model-00001-of-00003.safetensors'))
        ),
        'E_NOT_A_FILE',
      ],
      [
        'shard directory',
        (d) => {
          const p = join(d, 'model-00002-of-00003.safetensors');
          rmSync(p);
          mkdirSync(p);
          return p;
        },
        'E_NOT_A_FILE',
      ],
      [
        '/dev/zero as the index',
        (d) => {
          const p = join(d, 'model.safetensors.index.json');
          rmSync(p);
          symlinkSync('/dev/zero', p);
          return p;
        },
        'E_NOT_A_FILE',
      ],
      [
        'a 20 MiB config.json',
        (d) => {
          const p = join(d, 'config.json');
          truncateSync(p, 20 << 20);
          return p;
        },
        'E_FILE_TOO_LARGE',
      ],
    ];
    for (const [what, plant, code] of cases) {
      const snap = makeSnapshot();
      const path = plant(snap.dir);
      const began = Date.now();
      const r = spark(['inspect', snap.dir]);
      assert.equal(r.code, 2, `${what}: ${r.error.message}`);
      assert.equal(r.error.code, code, what);
      assert.ok(r.error.message.includes(path), `${what}: ${r.error.message}`);
      assert.equal(r.error.message.split('\n').length, 1, what);
      assert.ok(Date.now() - began < BOUND_MS, what);
    }
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
  const cases: [string[], string, string][] = [
    [['preflight', fifoRecipe], fifoRecipe, 'recipe'],
    [['preflight', recipe, '--cluster', fifoCluster], fifoCluster, 'cluster file'],
    [['preflight', recipe, '--cluster', w.cluster, '--env', fifoEnv], fifoEnv, 'env file'],
    [['launch', recipe, '--cluster', fifoCluster, '--dry-run'], fifoCluster, 'cluster file'],
    [['launch', recipe, '--cluster', w.cluster, '--env', fifoEnv, '--dry-run'], fifoEnv, 'env file'],
    [['preflight', '/dev/null'], '/dev/null', 'recipe'],
  ];
  for (const [argv, path, what] of cases) {
    const r = spark(argv);
    assert.equal(r.code, 2, `${argv.join(' ')}: ${r.error.message}`);
    assert.equal(r.error.code, 'E_NOT_A_FILE');
    assert.ok(r.error.message.includes(`the ${what} ${path} is`), r.error.message);
  }
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
      const dir = tempDir();
      writeSparseCopy(snap.dir, dir, {
        flavour: 'spark',
        ranges: snap.layers.map((l) => floorRange(l.layer, l.rows, 0, 2)),
        world: 2,
      });
      rmSync(join(dir, victim));
      mkfifo(join(dir, victim));
      const r = spawnSync(process.execPath, [binPath, 'verify', dir, '--source', snap.dir, '--json'], {
        encoding: 'utf8',
        timeout: BOUND_MS,
        input: '',
      });
      assert.equal(r.signal, null, `verify hung on a FIFO ${victim}`);
      assert.ok(r.status === 1 || r.status === 2, `${victim}: status ${r.status}: ${r.stderr}`);
      assert.ok((r.stdout + r.stderr).includes(victim), `${victim}: ${r.stdout.slice(0, 400)} ${r.stderr}`);
    }
  },
);
