import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runEmitSh } from '../../src/commands/wrapper.js';
import { tileLayers, formatEngramRows } from '../../src/engram/ranges.js';
import type { LayerLoader } from '../../src/wrapper/plan.js';
import { recordingEngine } from '../helpers/engine.js';
import { buildSysfs, typical } from '../helpers/sysfs.js';
import { outcome, quietIo, viaNode as nodeOutcome, viaSh as shOutcome } from '../helpers/wrapper-outcome.js';
import { tempDir } from '../helpers/tmp.js';
import { bin } from '../helpers/cli.js';
import { needs } from '../helpers/external-tool.js';

const DASH = '/usr/bin/dash';
const LAYERS = [
  { layer: 1, rows: 384006168 },
  { layer: 14, rows: 384016682 },
];
const load: LayerLoader = async (dir) => ({ kind: 'snapshot', path: dir, layers: LAYERS });

const io = quietIo;

async function emit(world: number, split: 'floor' | 'front' = 'floor'): Promise<string> {
  const out = join(tempDir(), 'spark-wrapper.sh');
  await runEmitSh({ snapshot: '/snap', world: String(world), split, out }, io({}), load);
  return out;
}

const viaNode = (argv: string[], env: NodeJS.ProcessEnv) => nodeOutcome(argv, env, load);
const viaSh = (script: string, argv: string[], env: NodeJS.ProcessEnv) => shOutcome(DASH, script, argv, env);

test('the script is written atomically with mode 755 and passes dash -n', async (t) => {
  if (!needs(t, 'dash')) return;
  const script = await emit(4);
  assert.equal(statSync(script).mode & 0o777, 0o755);
  const r = spawnSync(DASH, ['-n', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const text = readFileSync(script, 'utf8');
  assert.ok(text.startsWith('#!/bin/sh\n'));
  for (const rank of tileLayers(LAYERS, 4, 'floor')) assert.ok(text.includes(`'${formatEngramRows(rank)}'`));
});

test('every rank gets the same SPARK_ENGRAM_ROWS from the sh script as from the Node wrapper', async (t) => {
  if (!needs(t, 'dash')) return;
  const floor = await emit(4);
  const front = await emit(4, 'front');
  const expected = [
    '1:0:96001542,14:0:96004170',
    '1:96001542:192003084,14:96004170:192008341',
    '1:192003084:288004626,14:192008341:288012511',
    '1:288004626:384006168,14:288012511:384016682',
  ];
  for (let rank = 0; rank < 4; rank++) {
    const ways: [string[], NodeJS.ProcessEnv][] = [
      [['--nnodes', '4'], { NODE_RANK: String(rank) }],
      [['--tp', '4', '--node-rank', String(rank)], {}],
      [[`--node-rank=${rank}`], { SPARK_WORLD_SIZE: '4' }],
    ];
    for (const [argv, env] of ways) {
      const node = await viaNode(argv, env);
      const sh = viaSh(floor, argv, env);
      assert.deepEqual(outcome(sh), node, `rank ${rank} ${argv.join(' ')}: ${sh.stderr}`);
      assert.equal(sh.rows, expected[rank]);
    }
    const env = { NODE_RANK: String(rank), SPARK_ENGRAM_SPLIT: 'front' };
    assert.deepEqual(viaSh(front, ['--nnodes', '4'], env).rows, (await viaNode(['--nnodes', '4'], env)).rows);
  }
});

test('the sh script refuses what the Node wrapper refuses, with the same exit codes', async (t) => {
  if (!needs(t, 'dash')) return;
  const script = await emit(4);
  const cases: [string[], NodeJS.ProcessEnv][] = [
    [['--nnodes', '4'], {}],
    [[], { NODE_RANK: '1' }],
    [['--nnodes', '4', '--node-rank', '2'], { NODE_RANK: '1' }],
    [['--nnodes', '2', '--tp', '4'], { NODE_RANK: '1' }],
    [['--nnodes', '4'], { NODE_RANK: '4' }],
    [['--nnodes', 'four'], { NODE_RANK: '1' }],
    [['--nnodes', '4'], { NODE_RANK: '1', SPARK_ENGRAM_ROWS: '1:0:384006168,14:0:384016682' }],
    [['--nnodes', '4'], { NODE_RANK: '1', SPARK_ENGRAM_ROWS: '1:96001542:192003084,14:96004170:192008341' }],
    [['--nnodes', '4'], { NODE_RANK: '01' }],
  ];
  for (const [argv, env] of cases) {
    const node = await viaNode(argv, env);
    const sh = viaSh(script, argv, env);
    assert.deepEqual(outcome(sh), node, `${argv.join(' ')} ${JSON.stringify(env)}: ${sh.stderr}`);
  }
  const full = viaSh(script, ['--nnodes', '4'], { NODE_RANK: '1', SPARK_ENGRAM_ROWS: '1:0:384006168,14:0:384016682' });
  assert.match(
    full.stderr,
    /^spark wrapper: SPARK_ENGRAM_ROWS='1:0:384006168,14:0:384016682' is not rank 1 of 4's floor range 1:96001542:192003084,14:96004170:192008341; unset it/,
  );
  const other = viaSh(script, ['--nnodes', '3'], { NODE_RANK: '1' });
  assert.equal(other.code, 2);
  assert.match(
    other.stderr,
    /generated for 4 ranks but the world is 3 \(--nnodes\): regenerate it with spark wrapper --emit-sh --world 3/,
  );
  const none = spawnSync(DASH, [script], { encoding: 'utf8' });
  assert.equal(none.status, 2);
  assert.match(none.stderr, /no engine command/);
});

test('the script execs the engine in place and logs one line', async (t) => {
  if (!needs(t, 'dash')) return;
  const script = await emit(2);
  const sysfs = buildSysfs({ rocep1s0f0: { 1: typical('192.168.200.11') } });
  const engine = recordingEngine();
  const r = spawnSync(DASH, [script, engine.path, '--nnodes', '2', 'a b'], {
    encoding: 'utf8',
    env: {
      PATH: process.env.PATH,
      RECORD: engine.record,
      EXIT_CODE: '9',
      NODE_RANK: '1',
      SPARK_SYSFS: sysfs,
      NCCL_IB_HCA: 'rocep1s0f0',
    },
    input: 'line\n',
  });
  assert.equal(r.status, 9);
  assert.equal(r.stdout, 'engine stdout\n');
  assert.match(
    r.stderr,
    /^spark wrapper: rank 1 of 2 \(NODE_RANK, --nnodes\): SPARK_ENGRAM_ROWS=1:192003084:384006168,14:192008341:384016682 set \(floor split of \/snap\); B12X_ROCE_GID_INDEX=3 set \(rocep1s0f0:1\); exec .*engine\.sh --nnodes 2 a b\nengine stderr\n$/,
  );
  const rec = readFileSync(engine.record, 'utf8');
  assert.equal(rec.match(/^arg=.*$/gm)!.join('|'), 'arg=--nnodes|arg=2|arg=a b');
  assert.match(rec, /^stdin=line$/m);
  assert.equal(Number(/^pid=(\d+)$/m.exec(rec)![1]), r.pid, 'exec, not a child');
});

test('--emit-sh --out never writes through a link planted at its temporary names', async () => {
  const dir = tempDir();
  const out = join(dir, 'spark-wrapper.sh');
  const target = join(tempDir(), 'victim');
  writeFileSync(target, 'untouched\n');
  // Every name the write could use beside the target: a fixed one and the per-process one.
  for (const name of [`${out}.partial`, `${out}.${process.pid}.partial`]) symlinkSync(target, name);
  await assert.rejects(runEmitSh({ snapshot: '/snap', world: '2', split: 'floor', out }, io({}), load), /EEXIST/);
  assert.equal(readFileSync(target, 'utf8'), 'untouched\n');
  assert.equal(existsSync(out), false);
});

test('an engine that cannot be run is exit 3 from the sh script as from the Node wrapper, and NODE_RANK is digits only in both', async (t) => {
  if (!needs(t, 'dash')) return;
  const script = await emit(2);
  const dir = tempDir('spark-engines-');
  const file = (name: string, text: string, mode: number) => {
    const path = join(dir, name);
    writeFileSync(path, text, { mode });
    return path;
  };
  const engines: Record<string, string> = {
    'not in PATH': 'no-such-engine-here',
    'a shell builtin name': 'cd',
    'a directory': dir,
    'not executable': file('plain.sh', '#!/bin/sh\nexit 0\n', 0o644),
    'no #! line and not ELF (sh would run it as a script)': file('garbage', 'touch should-not-run\n', 0o755),
    'a #! interpreter that does not exist': file('lost.sh', '#!/nonexistent/python3\nprint(1)\n', 0o755),
  };
  const env = { PATH: process.env.PATH, NODE_RANK: '1', SPARK_WORLD_SIZE: '2' };
  for (const [what, engine] of Object.entries(engines)) {
    const sh = spawnSync(DASH, [script, engine], { encoding: 'utf8', env, cwd: dir });
    const node = bin(['wrapper', '--', engine], { env });
    assert.equal(sh.status, 3, `sh, ${what}: ${sh.stderr}`);
    assert.equal(node.code, 3, `Node, ${what}: ${node.stderr}`);
    assert.match(sh.stderr, /^spark wrapper: cannot run the engine /m, what);
  }
  assert.equal(existsSync(join(dir, 'should-not-run')), false);
  // A real #! script still runs.
  const ok = spawnSync(DASH, [script, file('ok.sh', '#!/bin/sh\nexit 7\n', 0o755)], { encoding: 'utf8', env });
  assert.equal(ok.status, 7, ok.stderr);
  for (const rank of [' 1', '1 ', '+1', '1.0', '٠']) {
    const e = { ...env, NODE_RANK: rank };
    const sh = spawnSync(DASH, [script, 'true'], { encoding: 'utf8', env: e });
    assert.equal(sh.status, 2, `sh NODE_RANK=${JSON.stringify(rank)}: ${sh.stderr}`);
    assert.equal(
      (await viaNode([], { ...e, SPARK_WORLD_SIZE: '2' })).code,
      2,
      `Node NODE_RANK=${JSON.stringify(rank)}`,
    );
  }
});

// What the overlay reads (docs/serving-stacks.md): SPARK_ENGRAM_ROWS is comma-separated
// `L:lo:hi` items, one per Engram layer of the index, in canonical digits; the floor split is
// lo = N*R//W, hi = N*(R+1)//W. Computed here with BigInt, not through spark's tiling.
test('worlds 2 and 3: every rank of the sh script exports the overlay-canonical floor ranges, and they tile', async (t) => {
  if (!needs(t, 'dash')) return;
  for (const world of [2, 3]) {
    const script = await emit(world);
    const next = new Map(LAYERS.map((l) => [l.layer, 0n]));
    for (let rank = 0; rank < world; rank++) {
      const got = viaSh(script, ['--nnodes', String(world)], { NODE_RANK: String(rank) });
      assert.equal(got.code, 0, got.stderr);
      const want = LAYERS.map(({ layer, rows }) => {
        const n = BigInt(rows);
        return `${layer}:${(n * BigInt(rank)) / BigInt(world)}:${(n * BigInt(rank + 1)) / BigInt(world)}`;
      }).join(',');
      assert.equal(got.rows, want, `world ${world} rank ${rank}`);
      for (const item of got.rows!.split(',')) {
        assert.match(item, /^(0|[1-9]\d*):(0|[1-9]\d*):(0|[1-9]\d*)$/);
        const [layer, lo, hi] = item.split(':').map(BigInt);
        assert.equal(
          lo,
          next.get(Number(layer)),
          `world ${world} rank ${rank} layer ${layer} starts where the last ended`,
        );
        next.set(Number(layer), hi);
      }
    }
    for (const { layer, rows } of LAYERS)
      assert.equal(next.get(layer), BigInt(rows), `world ${world} layer ${layer} covers [0, N)`);
  }
});
