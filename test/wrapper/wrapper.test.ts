import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runWrapper, type Exec } from '../../src/commands/wrapper.js';
import type { LayerLoader } from '../../src/wrapper/plan.js';
import type { Io } from '../../src/terminal/io.js';
import { bin, binPath } from '../helpers/cli.js';
import { recordingEngine, trappingEngine } from '../helpers/engine.js';
import { buildSysfs, typical } from '../helpers/sysfs.js';
import { tempDir } from '../helpers/tmp.js';

const LAYERS = [
  { layer: 1, rows: 384006168 },
  { layer: 14, rows: 384016682 },
];
const load: LayerLoader = async (dir) => ({ kind: 'snapshot', path: dir, layers: LAYERS });
const RANK1 = '1:96001542:192003084,14:96004170:192008341';

function io(env: NodeJS.ProcessEnv): Io & { err: string[] } {
  const err: string[] = [];
  return { stdout: () => {}, stderr: (t) => err.push(t), env, cwd: '/', stderrIsTTY: false, color: false, err };
}

class Execed extends Error {
  constructor(
    readonly argv: string[],
    readonly env: NodeJS.ProcessEnv,
  ) {
    super('exec');
  }
}
const fakeExec: Exec = (argv, env) => {
  throw new Execed(argv, env);
};

async function plan(argv: string[], env: NodeJS.ProcessEnv, flags = {}): Promise<{ execed: Execed; log: string }> {
  const i = io(env);
  try {
    await runWrapper(argv, flags, i, fakeExec, load);
  } catch (e) {
    if (e instanceof Execed) return { execed: e, log: i.err.join('') };
    throw e;
  }
  throw new Error('runWrapper returned without exec');
}

const ENGINE = ['python3', '-m', 'sglang.launch_server', '--model-path', '/m', '--nnodes', '4', '--node-rank', '1'];

test("the wrapper exports this rank's rows and logs one line, then execs the engine argv unchanged", async () => {
  const { execed, log } = await plan(ENGINE, { SPARK_ENGRAM_DIR: '/snap', NODE_RANK: '1', KEEP: 'x' });
  assert.deepEqual(execed.argv, ENGINE);
  assert.equal(execed.env.SPARK_ENGRAM_ROWS, RANK1);
  assert.equal(execed.env.KEEP, 'x');
  assert.equal(execed.env.B12X_ROCE_GID_INDEX, undefined);
  assert.equal(log.split('\n').length, 2, 'one line');
  assert.match(
    log,
    /^spark wrapper: rank 1 of 4 \(NODE_RANK, --nnodes\): SPARK_ENGRAM_ROWS=1:96001542:192003084,14:96004170:192008341 set \(floor split of \/snap\); no B12X_ROCE_HCA or NCCL_IB_HCA: B12X_ROCE_GID_INDEX not set; exec python3 -m sglang.launch_server \.\.\. \(6 more args\)\n$/,
  );
});

test('rank and world come from NODE_RANK / SPARK_WORLD_SIZE or the engine argv, and must agree', async () => {
  const base = ['python3', '-m', 'sglang.launch_server'];
  const rows = async (argv: string[], env: NodeJS.ProcessEnv) =>
    (await plan(argv, { SPARK_ENGRAM_DIR: '/s', ...env })).execed.env.SPARK_ENGRAM_ROWS;
  assert.equal(await rows([...base, '--tp', '4', '--node-rank', '1'], {}), RANK1);
  assert.equal(await rows([...base, '--tp-size=4', '--node-rank=1'], {}), RANK1);
  assert.equal(await rows([...base, '--tensor-parallel-size', '4'], { NODE_RANK: '1' }), RANK1);
  assert.equal(await rows([...base, '--nnodes', '2'], { NODE_RANK: '1', SPARK_WORLD_SIZE: '4' }), RANK1);
  assert.equal(await rows([...base, '--nnodes', '2'], { NODE_RANK: '0' }), '1:0:192003084,14:0:192008341');
  const fails: [string[], NodeJS.ProcessEnv, RegExp][] = [
    [[...base, '--nnodes', '4'], {}, /NODE_RANK is not set and the engine has no --node-rank/],
    [base, { NODE_RANK: '1' }, /the world size is unknown: set SPARK_WORLD_SIZE or pass --nnodes/],
    [
      [...base, '--nnodes', '4', '--node-rank', '2'],
      { NODE_RANK: '1' },
      /NODE_RANK=1 but the engine is started with --node-rank 2/,
    ],
    [[...base, '--nnodes', '2', '--tp', '4'], { NODE_RANK: '1' }, /--nnodes 2 but --tp 4: .*set SPARK_WORLD_SIZE/],
    [
      [...base, '--nnodes', '4'],
      { NODE_RANK: '4' },
      /rank 4 \(NODE_RANK\) is outside the world of 4 ranks \(--nnodes\)/,
    ],
    [
      [...base, '--nnodes', 'four'],
      { NODE_RANK: '1' },
      /the engine's --nnodes must be a whole number >= 1, got 'four'/,
    ],
    [[], { NODE_RANK: '1' }, /no engine command/],
  ];
  for (const [argv, env, message] of fails) {
    await assert.rejects(plan(argv, { SPARK_ENGRAM_DIR: '/s', ...env }), (e: Error & { exitCode?: number }) => {
      assert.match(e.message, message);
      assert.equal(e.exitCode, 2);
      return true;
    });
  }
});

test('a preset SPARK_ENGRAM_ROWS is checked: the right one passes, a wrong one is refused saying what it is', async () => {
  const env = { SPARK_ENGRAM_DIR: '/s', NODE_RANK: '1', SPARK_WORLD_SIZE: '4' };
  const ok = await plan(['engine'], { ...env, SPARK_ENGRAM_ROWS: RANK1 });
  assert.equal(ok.execed.env.SPARK_ENGRAM_ROWS, RANK1);
  assert.match(ok.log, /SPARK_ENGRAM_ROWS=.* checked \(floor split/);
  // The older L:lo-hi form is accepted and exported as the overlay reads it, never as given.
  const dashed = await plan(['engine'], { ...env, SPARK_ENGRAM_ROWS: '1:96001542-192003084,14:96004170-192008341' });
  assert.equal(dashed.execed.env.SPARK_ENGRAM_ROWS, RANK1);
  assert.match(
    dashed.log,
    /SPARK_ENGRAM_ROWS=1:96001542:192003084,14:96004170:192008341 checked and rewritten in the overlay's grammar/,
  );
  const refused: [string, RegExp][] = [
    [
      '1:0:384006168,14:0:384016682',
      /it is the full table, and a full range on every rank double-counts rows in the all-reduce/,
    ],
    [
      '1:96001542:192003084,14:96004171:192008342',
      /it is the front split \(pass --split front or set SPARK_ENGRAM_SPLIT=front/,
    ],
    [
      '1:96001542:192003084,14:96004170:192008340',
      /; layer 14: given \[96004170, 192008340\), expected \[96004170, 192008341\); unset it/,
    ],
    ['1:96001542:192003084', /; layer 14: missing, expected \[96004170, 192008341\)/],
  ];
  for (const [value, message] of refused) {
    await assert.rejects(
      plan(['engine'], { ...env, SPARK_ENGRAM_ROWS: value }),
      (e: Error & { exitCode?: number; code?: string }) => {
        assert.equal(e.code, 'E_CHECK_FAILED');
        assert.equal(e.exitCode, 1);
        assert.match(e.message, new RegExp(`^SPARK_ENGRAM_ROWS='${value}' is not rank 1 of 4's floor range ${RANK1}`));
        assert.match(e.message, message);
        return true;
      },
    );
  }
  await assert.rejects(plan(['engine'], { ...env, SPARK_ENGRAM_ROWS: '1:5:2' }), { code: 'E_ROWS_SPEC' });
  const front = await plan(['engine'], { ...env, SPARK_ENGRAM_SPLIT: 'front' });
  assert.equal(front.execed.env.SPARK_ENGRAM_ROWS, '1:96001542:192003084,14:96004171:192008342');
  // Without SPARK_ENGRAM_DIR there is nothing to compute: a preset value is kept, none is set.
  assert.equal((await plan(['engine'], { SPARK_ENGRAM_ROWS: '1:0:5' })).execed.env.SPARK_ENGRAM_ROWS, '1:0:5');
  const kept = await plan(['engine'], { SPARK_ENGRAM_ROWS: '1:0-5,14:0-7' });
  assert.equal(kept.execed.env.SPARK_ENGRAM_ROWS, '1:0:5,14:0:7');
  assert.match(kept.log, /SPARK_ENGRAM_ROWS=1:0:5,14:0:7 rewritten from '1:0-5,14:0-7' in the overlay's grammar/);
  assert.equal((await plan(['engine'], {})).execed.env.SPARK_ENGRAM_ROWS, undefined);
});

test('the wrapper sets or checks B12X_ROCE_GID_INDEX from the HCAs and refuses a node without one index', async () => {
  const sysfs = buildSysfs({
    rocep1s0f0: { 1: typical('192.168.200.11') },
    roceP2p1s0f0: { 1: typical('192.168.200.12') },
  });
  const env = { SPARK_SYSFS: sysfs, B12X_ROCE_HCA: 'rocep1s0f0,roceP2p1s0f0' };
  const set = await plan(['engine'], env);
  assert.equal(set.execed.env.B12X_ROCE_GID_INDEX, '3');
  assert.match(set.log, /B12X_ROCE_GID_INDEX=3 set \(roceP2p1s0f0:1, rocep1s0f0:1\)/);
  assert.equal((await plan(['engine'], { ...env, B12X_ROCE_GID_INDEX: '3' })).execed.env.B12X_ROCE_GID_INDEX, '3');
  const empty = await plan(['engine'], { ...env, B12X_ROCE_GID_INDEX: '' });
  assert.equal(empty.execed.env.B12X_ROCE_GID_INDEX, '3');
  assert.match(empty.log, /it was set but empty, which parses as 0/);
  await assert.rejects(plan(['engine'], { ...env, B12X_ROCE_GID_INDEX: '1' }), (e: Error & { exitCode?: number }) => {
    assert.equal(e.exitCode, 1);
    assert.match(
      e.message,
      /^B12X_ROCE_GID_INDEX=1 is not usable for B12X_ROCE_HCA=rocep1s0f0,roceP2p1s0f0: roceP2p1s0f0 port 1: pinned GID index 1 is not usable \(link-local/,
    );
    return true;
  });
  await assert.rejects(
    plan(['engine'], { SPARK_SYSFS: sysfs, NCCL_IB_HCA: 'rocep1s0f0', NCCL_IB_ADDR_RANGE: '10.0.0.0/8' }),
    /^SparkError: no single RoCE GID index for NCCL_IB_HCA=rocep1s0f0: rocep1s0f0 port 1: no IPv4 RoCE v2 in 10\.0\.0\.0\/8 GID entry/,
  );
  const skipped = await plan(['engine'], { ...env, NCCL_IB_ADDR_RANGE: '10.0.0.0/8' }, { skipGid: true });
  assert.equal(skipped.execed.env.B12X_ROCE_GID_INDEX, undefined);
  assert.match(skipped.log, /GID detection skipped/);
});

test('--dry-run prints the exports and the command without running it', async () => {
  const r = bin(['wrapper', '--dry-run', '--', 'python3', '-m', 'x', '--arg', "it's"], {
    env: { SPARK_ENGRAM_ROWS: '1:0:5' },
  });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, `export SPARK_ENGRAM_ROWS='1:0:5'\nexec python3 -m x --arg 'it'\\''s'\n`);
});

test('the engine replaces the wrapper: same pid, argv, env, stdio, clean signal state, its exit code', () => {
  const engine = recordingEngine();
  const sysfs = buildSysfs({ rocep1s0f0: { 1: typical('192.168.200.11') } });
  const r = bin(['wrapper', '--', engine.path, '--tp', '4', 'with space', '', '--json'], {
    env: {
      RECORD: engine.record,
      EXIT_CODE: '7',
      SPARK_ENGRAM_ROWS: '1:0:5',
      SPARK_SYSFS: sysfs,
      NCCL_IB_HCA: 'rocep1s0f0',
    },
    input: 'from stdin\n',
  });
  assert.equal(r.code, 7);
  assert.equal(r.stdout, 'engine stdout\n');
  assert.match(
    r.stderr,
    /^spark wrapper: SPARK_ENGRAM_ROWS=1:0:5 kept as given .*; B12X_ROCE_GID_INDEX=3 set \(rocep1s0f0:1\); exec .*engine\.sh --tp 4 \.\.\. \(3 more args\)\nengine stderr\n$/,
  );
  const lines = readFileSync(engine.record, 'utf8').split('\n');
  assert.deepEqual(
    lines.filter((l) => l.startsWith('arg=')),
    ['arg=--tp', 'arg=4', 'arg=with space', 'arg=', 'arg=--json'],
  );
  assert.ok(lines.includes('rows=1:0:5'));
  assert.ok(lines.includes('gid=3'));
  assert.ok(lines.includes('SigIgn:\t0000000000000000'), 'no signal left ignored (Node ignores SIGPIPE)');
  assert.ok(lines.includes('SigBlk:\t0000000000000000'), 'nothing blocked');
  assert.ok(lines.includes('stdin=from stdin'), 'stdin survives the exec');
});

test('the engine is the same process as the wrapper (no Node left behind)', async () => {
  const engine = recordingEngine();
  const child = spawn(process.execPath, [binPath, 'wrapper', '--', engine.path], {
    env: { ...process.env, RECORD: engine.record, EXIT_CODE: '0' },
    stdio: ['ignore', 'ignore', 'ignore'],
  });
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  assert.equal(code, 0);
  assert.ok(readFileSync(engine.record, 'utf8').startsWith(`pid=${child.pid}\n`));
});

async function waitFor(path: string, text: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (existsSync(path) && readFileSync(path, 'utf8').includes(text)) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for '${text}' in ${path}`);
}

test("SIGTERM reaches the engine and its exit status is the wrapper's", async () => {
  const ready = join(tempDir(), 'ready');
  const child = spawn(process.execPath, [binPath, 'wrapper', '--', trappingEngine()], {
    env: { ...process.env, READY: ready },
    stdio: ['ignore', 'ignore', 'ignore'],
  });
  await waitFor(ready, 'ready');
  child.kill('SIGTERM');
  const [code, signal] = await new Promise<[number | null, string | null]>((resolve) =>
    child.on('exit', (c, s) => resolve([c, s])),
  );
  assert.equal(signal, null);
  assert.equal(code, 143);
  assert.equal(readFileSync(ready, 'utf8'), 'ready\nterm\n');
});

test('an engine without a handler dies of SIGTERM itself (default disposition restored)', async () => {
  const child = spawn(process.execPath, [binPath, 'wrapper', '--', 'sleep', '30'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  for (let i = 0; i < 400 && !err.includes('exec sleep'); i++) await new Promise((r) => setTimeout(r, 25));
  await new Promise((r) => setTimeout(r, 100));
  child.kill('SIGTERM');
  const [code, signal] = await new Promise<[number | null, string | null]>((resolve) =>
    child.on('exit', (c, s) => resolve([c, s])),
  );
  assert.deepEqual([code, signal], [null, 'SIGTERM']);
});

test('an engine that cannot be run is an environment error (exit 3) naming it', () => {
  const r = bin(['wrapper', '--', 'no-such-engine-here', '--tp', '4']);
  assert.equal(r.code, 3);
  assert.match(r.stderr, /spark: cannot run the engine 'no-such-engine-here' in PATH: No such file or directory/);
  const dir = bin(['wrapper', '--', tempDir()]);
  assert.equal(dir.code, 3);
  assert.match(dir.stderr, /Permission denied/);
});

test('help for the boot-path commands has an example and never loads the addon', () => {
  const forbidAddon = ['--import', 'data:text/javascript,process.dlopen=()=>{throw new Error("addon loaded")}'];
  for (const command of ['wrapper', 'engram-ranges', 'gid']) {
    const r = bin([command, '--help'], { nodeArgs: forbidAddon });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`Usage: spark ${command}`));
    assert.match(r.stdout, /Examples?:\n {2}/);
  }
});
