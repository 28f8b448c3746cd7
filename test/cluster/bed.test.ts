// The bed ends everything it started, by pid, however the tests end: its own teardown, an
// uncaught error, or a signal; and what a bed killed outright left, the next bed ends. Checked from outside: /proc (no process left in a node's network
// namespace, no daemon pid alive), the bridge, the temp dir.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startBed } from './bed.js';
import { ended, pidsInNetns } from './processes.js';

interface Started {
  dir: string;
  bridge: string;
  netns: string[];
  pids: number[];
  running: string[];
}

const CHILD = fileURLToPath(new URL('./bed-child.js', import.meta.url));

function runChild(
  mode: 'exit' | 'throw' | 'signal',
): Promise<{ code: number | null; lines: string[]; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CHILD, mode], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
      if (mode === 'signal' && stdout.includes('\n')) child.kill('SIGTERM');
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, lines: stdout.split('\n').filter(Boolean), stderr });
    });
  });
}

function assertGone(started: Started): void {
  assert.deepEqual(started.running, ['running', 'running'], 'the child left a container running on each node');
  assert.deepEqual(pidsInNetns(new Set(started.netns)), [], 'a process is left in a node namespace');
  assert.deepEqual(
    started.pids.filter((p) => !ended(p)),
    [],
    'a daemon of the bed is still running',
  );
  assert.notEqual(
    spawnSync('ip', ['link', 'show', started.bridge]).status,
    0,
    `bridge ${started.bridge} is still there`,
  );
  assert.equal(existsSync(started.dir), false, `${started.dir} is still there`);
}

for (const mode of ['exit', 'throw', 'signal'] as const) {
  test(`a bed ended by ${mode === 'exit' ? 'its teardown' : mode === 'throw' ? 'an uncaught error' : 'SIGTERM'} leaves no process, bridge or file`, async () => {
    const r = await runChild(mode);
    assert.ok(r.lines.length > 0, r.stderr);
    const started = JSON.parse(r.lines[0]!) as Started;
    if (mode === 'exit') {
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(JSON.parse(r.lines[1]!), { leftover: [] });
    } else {
      assert.notEqual(r.code, 0);
      if (mode === 'throw') assert.match(r.stderr, /a test failed/);
    }
    assertGone(started);
  });
}

test('a bed whose test process was killed outright (SIGKILL) is ended by the next bed', async () => {
  const child = spawn(process.execPath, [CHILD, 'signal'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve) => {
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      if (out.includes('\n')) resolve(out.split('\n')[0]!);
    });
    child.on('close', () => resolve(out));
  });
  child.kill('SIGKILL');
  await new Promise((r) => child.once('close', r));
  const started = JSON.parse(line) as Started;
  // The kernel ended its daemons (--pdeathsig); what was started over ssh is still there.
  assert.ok(pidsInNetns(new Set(started.netns)).length > 0, 'nothing was left to end: the test proves nothing');
  const next = await startBed({ nodes: 1 });
  next.teardown();
  assertGone(started);
});
