// Shared by test/cli/hostile-files.test.ts and test/long/hostile-files-cases.test.ts: spark as a
// real process under a time bound (a reader that blocks on a FIFO would hang the test runner
// itself), and the hostile files each case plants.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { binPath } from './cli.js';
import { makeSnapshot } from './synth.js';
import { floorRange, writeSparseCopy } from './sparse-copy.js';
import { tempDir } from './tmp.js';

export const BOUND_MS = 20_000;

export function mkfifo(path: string): string {
  execFileSync('mkfifo', [path]);
  return path;
}

/** Runs spark; a run that outlives the bound is killed and fails the test. */
export function spark(argv: string[]): { code: number; error: { code: string; message: string } } {
  const r = spawnSync(process.execPath, [binPath, ...argv, '--json'], {
    encoding: 'utf8',
    timeout: BOUND_MS,
    input: '',
  });
  assert.equal(r.signal, null, `spark ${argv.join(' ')} hung (killed after ${BOUND_MS} ms)`);
  const line = r.stderr.trim().split('\n').at(-1) ?? '';
  return { code: r.status ?? -1, error: (JSON.parse(line) as { error: { code: string; message: string } }).error };
}

/** A snapshot file replaced by something else: what, how (returns the path), the error code. */
export type SnapshotCase = [string, (dir: string) => string, string];

export const SNAPSHOT_CASES: SnapshotCase[] = [
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
    (d) => (rmSync(join(d, 'model-00001-of-00003.safetensors')), mkfifo(join(d, 'model-00001-of-00003.safetensors'))),
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

/** spark inspect on a fresh snapshot with the case planted: exit 2 at once, one line naming it. */
export function inspectRefuses([what, plant, code]: SnapshotCase): void {
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

/** spark's argv, the path it must name, and what it must call the file. */
export type ArgCase = [string[], string, string];

/** spark exits 2 with E_NOT_A_FILE naming the file as `the WHAT PATH is`. */
export function refusesNotAFile([argv, path, what]: ArgCase): void {
  const r = spark(argv);
  assert.equal(r.code, 2, `${argv.join(' ')}: ${r.error.message}`);
  assert.equal(r.error.code, 'E_NOT_A_FILE');
  assert.ok(r.error.message.includes(`the ${what} ${path} is`), r.error.message);
}

/** verify of a sparse copy of `snapDir` whose file `victim` is a FIFO fails at once, naming it. */
export function verifyRefusesFifo(snap: ReturnType<typeof makeSnapshot>, victim: string): void {
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
