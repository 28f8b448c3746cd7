import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runEmitSh, runWrapper, type Exec } from '../src/commands/wrapper.js';
import { tileLayers, formatEngramRows } from '../src/engram/ranges.js';
import type { LayerLoader } from '../src/wrapper/plan.js';
import type { Io } from '../src/io.js';
import { recordingEngine } from './helpers/engine.js';
import { buildSysfs, FE80, mapped, typical, V1, V2, ZERO, type FakePort } from './helpers/sysfs.js';
import { tempDir } from './helpers/tmp.js';
import { bin } from './helpers/cli.js';

const DASH = '/usr/bin/dash';
const LAYERS = [
  { layer: 1, rows: 384006168 },
  { layer: 14, rows: 384016682 },
];
const load: LayerLoader = async (dir) => ({ kind: 'snapshot', path: dir, layers: LAYERS });
const IPV6 = '2001:0db8:0000:0000:0000:0000:0000:0011';

function io(env: NodeJS.ProcessEnv): Io {
  return { stdout: () => {}, stderr: () => {}, env, cwd: '/', stderrIsTTY: false, color: false };
}

async function emit(world: number, split: 'floor' | 'front' = 'floor'): Promise<string> {
  const out = join(tempDir(), 'spark-wrapper.sh');
  await runEmitSh({ snapshot: '/snap', world: String(world), split, out }, io({}), load);
  return out;
}

interface Outcome {
  code: number;
  rows?: string;
  gid?: string;
}

/** The Node wrapper's decision, as exit code and exported values. */
async function viaNode(argv: string[], env: NodeJS.ProcessEnv): Promise<Outcome> {
  let exported: NodeJS.ProcessEnv | undefined;
  const exec: Exec = (_argv, e) => {
    exported = e;
    throw new Error('execed');
  };
  try {
    await runWrapper(['engine', ...argv], {}, io({ SPARK_ENGRAM_DIR: '/snap', ...env }), exec, load);
  } catch (e) {
    if (!exported) return { code: (e as { exitCode?: number }).exitCode ?? 99 };
  }
  return { code: 0, rows: exported!.SPARK_ENGRAM_ROWS ?? 'unset', gid: exported!.B12X_ROCE_GID_INDEX ?? 'unset' };
}

const outcome = (o: Outcome): Outcome => (o.code === 0 ? { code: 0, rows: o.rows!, gid: o.gid! } : { code: o.code });

/** The emitted script under dash, with a recording engine. */
function viaSh(script: string, argv: string[], env: NodeJS.ProcessEnv): Outcome & { stderr: string; pid?: number } {
  const engine = recordingEngine();
  const r = spawnSync(DASH, [script, engine.path, ...argv], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, RECORD: engine.record, ...env },
    input: '',
  });
  if (r.status !== 0) return { code: r.status ?? 99, stderr: r.stderr };
  const rec = readFileSync(engine.record, 'utf8');
  const field = (k: string) => new RegExp(`^${k}=(.*)$`, 'm').exec(rec)![1]!;
  rmSync(engine.record);
  return { code: 0, rows: field('rows'), gid: field('gid'), stderr: r.stderr, pid: Number(field('pid')) };
}

test('the script is written atomically with mode 755 and passes dash -n', async () => {
  const script = await emit(4);
  assert.equal(statSync(script).mode & 0o777, 0o755);
  const r = spawnSync(DASH, ['-n', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const text = readFileSync(script, 'utf8');
  assert.ok(text.startsWith('#!/bin/sh\n'));
  for (const rank of tileLayers(LAYERS, 4, 'floor')) assert.ok(text.includes(`'${formatEngramRows(rank)}'`));
});

test('every rank gets the same SPARK_ENGRAM_ROWS from the sh script as from the Node wrapper', async () => {
  const floor = await emit(4);
  const front = await emit(4, 'front');
  const expected = ['1:0:96001542,14:0:96004170', '1:96001542:192003084,14:96004170:192008341',
    '1:192003084:288004626,14:192008341:288012511', '1:288004626:384006168,14:288012511:384016682'];
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

test('the sh script refuses what the Node wrapper refuses, with the same exit codes', async () => {
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
  assert.match(full.stderr, /^spark wrapper: SPARK_ENGRAM_ROWS='1:0:384006168,14:0:384016682' is not rank 1 of 4's floor range 1:96001542:192003084,14:96004170:192008341; unset it/);
  const other = viaSh(script, ['--nnodes', '3'], { NODE_RANK: '1' });
  assert.equal(other.code, 2);
  assert.match(other.stderr, /generated for 4 ranks but the world is 3 \(--nnodes\): regenerate it with spark wrapper --emit-sh --world 3/);
  const none = spawnSync(DASH, [script], { encoding: 'utf8' });
  assert.equal(none.status, 2);
  assert.match(none.stderr, /no engine command/);
});

test('the sh GID scan agrees with the Node one on every sysfs case', async () => {
  const script = await emit(1);
  const shifted = typical('192.168.200.12');
  shifted.gids.splice(2, 0, [IPV6, V1], [IPV6, V2]);
  const twoV4 = typical('10.0.0.5');
  twoV4.gids.splice(4, 0, [mapped('192.168.200.11'), V1], [mapped('192.168.200.11'), V2]);
  const down: FakePort = { ...typical('192.168.200.11'), state: '1: DOWN' };
  const trees = {
    typical: buildSysfs({ rocep1s0f0: { 1: typical('192.168.200.11') }, roceP2p1s0f0: { 1: typical('192.168.200.12') } }),
    shifted: buildSysfs({ rocep1s0f0: { 1: shifted } }),
    fe80: buildSysfs({ rocep1s0f0: { 1: { gids: [[FE80, V1], [FE80, V2], [ZERO]] } } }),
    disagree: buildSysfs({ rocep1s0f0: { 1: typical('192.168.200.11') }, roceP2p1s0f0: { 1: shifted } }),
    range: buildSysfs({ rocep1s0f0: { 1: twoV4 } }),
    v1: buildSysfs({ rocep1s0f0: { 1: { gids: [[FE80, V1], [mapped('192.168.200.11'), V1]] } } }),
    mlx: buildSysfs({ mlx5_0: { 1: typical('192.168.200.11') }, mlx5_1: { 1: typical('192.168.200.11'), 2: { gids: [[FE80, V2]] } }, mlx5_10: { 1: shifted } }),
    down: buildSysfs({ rocep1s0f0: { 1: down } }),
    v6: buildSysfs({ rocep1s0f0: { 1: shifted } }),
  };
  const cases: [keyof typeof trees, NodeJS.ProcessEnv, Outcome['code'], string?][] = [
    ['typical', { B12X_ROCE_HCA: 'rocep1s0f0,roceP2p1s0f0' }, 0, '3'],
    ['typical', { NCCL_IB_HCA: 'rocep1s0f0' }, 0, '3'],
    ['typical', {}, 0, 'unset'],
    ['typical', { NCCL_IB_HCA: 'rocep1s0f0', B12X_ROCE_GID_INDEX: '3' }, 0, '3'],
    ['typical', { NCCL_IB_HCA: 'rocep1s0f0', B12X_ROCE_GID_INDEX: '' }, 0, '3'],
    ['typical', { NCCL_IB_HCA: 'rocep1s0f0', B12X_ROCE_GID_INDEX: '2' }, 1],
    ['typical', { NCCL_IB_HCA: 'rocep1s0f0', B12X_ROCE_GID_INDEX: 'x' }, 2],
    ['typical', { NCCL_IB_HCA: 'rocep1s0f0,rocep9', SPARK_SKIP_GID: '1' }, 0, 'unset'],
    ['typical', { NCCL_IB_HCA: 'rocep1s0f0, roceP2p1s0f0' }, 1],
    ['shifted', { NCCL_IB_HCA: 'rocep1s0f0' }, 0, '5'],
    ['fe80', { NCCL_IB_HCA: 'rocep1s0f0' }, 1],
    ['disagree', { NCCL_IB_HCA: 'rocep1s0f0,roceP2p1s0f0' }, 1],
    ['range', { NCCL_IB_HCA: 'rocep1s0f0' }, 0, '3'],
    ['range', { NCCL_IB_HCA: 'rocep1s0f0', NCCL_IB_ADDR_RANGE: '192.168.200.0/24' }, 0, '5'],
    ['range', { NCCL_IB_HCA: 'rocep1s0f0', NCCL_IB_ADDR_RANGE: '192.168.0.0/16' }, 0, '5'],
    ['range', { NCCL_IB_HCA: 'rocep1s0f0', NCCL_IB_ADDR_RANGE: '10.0.0.0/8' }, 0, '3'],
    ['range', { NCCL_IB_HCA: 'rocep1s0f0', NCCL_IB_ADDR_RANGE: '0.0.0.0/0' }, 0, '3'],
    ['range', { NCCL_IB_HCA: 'rocep1s0f0', NCCL_IB_ADDR_RANGE: '172.16.0.0/12' }, 1],
    ['range', { NCCL_IB_HCA: 'rocep1s0f0', NCCL_IB_ADDR_RANGE: '192.168.200.0' }, 0, '3'],
    ['range', { NCCL_IB_HCA: 'rocep1s0f0', NCCL_IB_ADDR_RANGE: '192.168.200.00/24' }, 0, '3'],
    ['range', { NCCL_IB_HCA: 'rocep1s0f0', NCCL_IB_ADDR_RANGE: '192.168.200.0/024' }, 0, '5'],
    ['range', { NCCL_IB_HCA: 'rocep1s0f0', NCCL_IB_ADDR_RANGE: '192.168.200.0/33' }, 0, '3'],
    ['v1', { NCCL_IB_HCA: 'rocep1s0f0' }, 1],
    ['v1', { NCCL_IB_HCA: 'rocep1s0f0', NCCL_IB_ROCE_VERSION_NUM: '1' }, 0, '1'],
    ['mlx', { NCCL_IB_HCA: '=mlx5_0:1' }, 0, '3'],
    ['mlx', { NCCL_IB_HCA: 'mlx5_1:1' }, 1],
    ['mlx', { NCCL_IB_HCA: '=mlx5_1:1' }, 0, '3'],
    ['mlx', { NCCL_IB_HCA: '=mlx5_1' }, 1],
    ['mlx', { NCCL_IB_HCA: '^mlx5_1' }, 0, '3'],
    ['mlx', { NCCL_IB_HCA: '^=mlx5_1,mlx5_0' }, 0, '5'],
    ['mlx', { NCCL_IB_HCA: 'mlx5_0,mlx5_7' }, 1],
    ['mlx', { NCCL_IB_HCA: 'mlx5_0:2' }, 1],
    ['down', { NCCL_IB_HCA: 'rocep1s0f0' }, 1],
    ['v6', { NCCL_IB_HCA: 'rocep1s0f0', NCCL_IB_ADDR_FAMILY: 'AF_INET6' }, 0, '3'],
    ['v6', { NCCL_IB_HCA: 'rocep1s0f0', NCCL_IB_ADDR_FAMILY: 'inet6' }, 0, '5'],
  ];
  for (const [tree, extra, code, gid] of cases) {
    const env = { NODE_RANK: '0', SPARK_WORLD_SIZE: '1', SPARK_SYSFS: trees[tree], ...extra };
    const node = await viaNode([], env);
    const sh = viaSh(script, [], env);
    const what = `${tree} ${JSON.stringify(extra)}`;
    assert.deepEqual(outcome(sh), node, `${what}: sh and Node differ (${sh.stderr})`);
    assert.equal(node.code, code, what);
    if (gid !== undefined) assert.equal(node.gid, gid, what);
  }
  const missing = viaSh(script, [], { NODE_RANK: '0', SPARK_WORLD_SIZE: '1', SPARK_SYSFS: '/nonexistent', NCCL_IB_HCA: 'x' });
  assert.equal(missing.code, 3);
  assert.equal((await viaNode([], { NODE_RANK: '0', SPARK_WORLD_SIZE: '1', SPARK_SYSFS: '/nonexistent', NCCL_IB_HCA: 'x' })).code, 3);
});

test('the script execs the engine in place and logs one line', async () => {
  const script = await emit(2);
  const sysfs = buildSysfs({ rocep1s0f0: { 1: typical('192.168.200.11') } });
  const engine = recordingEngine();
  const r = spawnSync(DASH, [script, engine.path, '--nnodes', '2', 'a b'], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, RECORD: engine.record, EXIT_CODE: '9', NODE_RANK: '1', SPARK_SYSFS: sysfs, NCCL_IB_HCA: 'rocep1s0f0' },
    input: 'line\n',
  });
  assert.equal(r.status, 9);
  assert.equal(r.stdout, 'engine stdout\n');
  assert.match(r.stderr, /^spark wrapper: rank 1 of 2 \(NODE_RANK, --nnodes\): SPARK_ENGRAM_ROWS=1:192003084:384006168,14:192008341:384016682 set \(floor split of \/snap\); B12X_ROCE_GID_INDEX=3 set \(rocep1s0f0:1\); exec .*engine\.sh --nnodes 2 a b\nengine stderr\n$/);
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

test('an engine that cannot be run is exit 3 from the sh script as from the Node wrapper, and NODE_RANK is digits only in both', async () => {
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
    assert.equal((await viaNode([], { ...e, SPARK_WORLD_SIZE: '2' })).code, 2, `Node NODE_RANK=${JSON.stringify(rank)}`);
  }
});
