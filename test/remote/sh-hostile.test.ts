// Nothing a user passes reaches a generated script or a printed command except as one quoted
// word: checked by running the output under every shell a node or a person may use (sh, dash,
// bash, and zsh, the login shell the docs support) with hostile inputs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runEmitSh } from '../../src/commands/wrapper.js';
import type { LayerLoader } from '../../src/wrapper/plan.js';
import { shJoin, shQuote } from '../../src/remote/shell.js';
import { stopCommand } from '../../src/launch/stop.js';
import { recordingEngine } from '../helpers/engine.js';
import { tempDir } from '../helpers/tmp.js';
import { needs } from '../helpers/external-tool.js';

/** The shells to run under (a test skips, or fails under CI, when dash or zsh is missing: needs). */
const SHELLS = ['/bin/sh', '/usr/bin/dash', '/bin/bash', '/usr/bin/zsh'];

/** Hostile words: expansions, separators, quotes, newlines, and what zsh and bash expand at a word's start. */
const HOSTILE = [
  '=ls',
  '=1',
  '~',
  '~root',
  '~/x',
  'a=~',
  '%1',
  '^x',
  '#x',
  '!x',
  '{a,b}',
  '[ab]',
  '*',
  '?',
  '-n',
  '--x=1',
  '$HOME',
  '$(touch MARK)',
  '`touch MARK`',
  'a;touch MARK',
  'a|touch MARK',
  'a&&touch MARK',
  'x\ntouch MARK',
  'x\rtouch MARK',
  "it's",
  '"',
  '\\',
  '',
  ' ',
  '\t',
  'é ✓',
  "'; touch MARK; '",
  'a:=b',
  '+x',
  '@x',
  ',x',
  ':x',
  '.x',
  '/x=y',
];
const PRINTABLE = Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i));

test("shQuote: every word, and every printable character at a word's start, comes back byte for byte from each shell", (t) => {
  if (!needs(t, 'dash', 'zsh')) return;
  const words = [...HOSTILE, ...PRINTABLE, ...PRINTABLE.map((c) => `${c}x`), ...PRINTABLE.map((c) => `x${c}`)];
  const dir = tempDir('spark-quote-');
  for (const shell of SHELLS) {
    const r = spawnSync(shell, ['-c', `printf '%s\\0' ${shJoin(words)}`], {
      encoding: 'utf8',
      cwd: dir,
      env: { PATH: process.env.PATH, HOME: '/home/nobody' },
    });
    assert.equal(r.status, 0, `${shell}: ${r.stderr}`);
    assert.deepEqual(r.stdout.split('\0').slice(0, -1), words, shell);
    assert.equal(existsSync(join(dir, 'MARK')), false, `${shell} ran an embedded command`);
  }
  // The zsh case of the issue: a word starting with = or ~ is quoted.
  assert.equal(shQuote('=1'), "'=1'");
  assert.equal(shQuote('=ls'), "'=ls'");
  assert.equal(shQuote('~'), "'~'");
  assert.equal(shQuote('a=1'), 'a=1');
  assert.equal(shQuote('--x=1'), '--x=1');
});

const LAYERS = [
  { layer: 1, rows: 384006168 },
  { layer: 14, rows: 384016682 },
];

test('wrapper --emit-sh: a snapshot path with a newline, quotes or $(...) runs nothing at container start, in any shell', async (t) => {
  if (!needs(t, 'dash')) return;
  const root = tempDir('spark-hostile-');
  const mark = join(root, 'MARK');
  const paths = [
    `/snap\ntouch ${mark}\n`,
    `/snap\rtouch ${mark}\n`,
    `/snap $(touch ${mark}) \`touch ${mark}\``,
    `/snap'; touch ${mark}; '`,
    `/snap"; touch ${mark}; "`,
    `=/snap ~ \\ \n# \n; touch ${mark}`,
  ];
  for (const snapshot of paths) {
    const load: LayerLoader = async (dir) => ({ kind: 'snapshot', path: dir, layers: LAYERS });
    const out = join(tempDir(), 'spark-wrapper.sh');
    const io = { stdout: () => {}, stderr: () => {}, env: {}, cwd: '/', stderrIsTTY: false, color: false };
    await runEmitSh({ snapshot, world: '2', out }, io, load);
    // No user text in a comment: each comment line is the generator's own.
    for (const line of readFileSync(out, 'utf8').split('\n')) {
      if (line.startsWith('#'))
        assert.ok(!line.includes('touch'), `a comment carries the path: ${JSON.stringify(line)}`);
    }
    for (const shell of SHELLS.filter((s) => !s.endsWith('zsh'))) {
      const engine = recordingEngine();
      const r = spawnSync(shell, [out, engine.path, '--nnodes', '2'], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH, RECORD: engine.record, NODE_RANK: '1' },
      });
      assert.equal(r.status, 0, `${shell} ${JSON.stringify(snapshot)}: ${r.stderr}`);
      assert.equal(existsSync(mark), false, `${shell} ran a line of the path ${JSON.stringify(snapshot)}`);
      assert.match(readFileSync(engine.record, 'utf8'), /^rows=1:192003084:384006168,14:192008341:384016682$/m);
      assert.ok(
        r.stderr.includes(`floor split of ${snapshot}`),
        `${shell}: the log names the path verbatim: ${r.stderr}`,
      );
    }
  }
});

test('the commands spark prints for pasting (stop, logs, verify) keep each path one word in every shell', (t) => {
  if (!needs(t, 'dash', 'zsh')) return;
  const file = "/home/me/my cluster $(touch MARK) it's.toml";
  const dir = tempDir('spark-quote-');
  for (const shell of SHELLS) {
    const r = spawnSync(shell, ['-c', `printf '%s\\0' ${stopCommand(file, 'dsv41')}`], { encoding: 'utf8', cwd: dir });
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(
      r.stdout.split('\0').slice(0, -1),
      ['spark', 'launch', '--stop', '--cluster', file, '--name', 'dsv41'],
      shell,
    );
    assert.equal(existsSync(join(dir, 'MARK')), false);
  }
});
