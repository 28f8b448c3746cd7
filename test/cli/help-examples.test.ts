// Every example in `spark preflight --help` and `spark launch --help` runs as written, from the
// repository root, against fake nodes (ssh and docker on PATH are the fakes of
// test/helpers/fake-node.ts, so nothing leaves this machine). None may end in a usage or
// environment error; dry runs, --stop and --json examples print what they promise.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { binPath } from '../helpers/cli.js';
import { fakeNodes } from '../helpers/fake-node.js';
import { packageRoot } from '../../src/addon/index.js';

function examples(command: string): string[] {
  const r = spawnSync(process.execPath, [binPath, command, '--help'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const after = r.stdout.slice(r.stdout.indexOf('Examples:'));
  return after
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith('spark '));
}

/** Runs one example line (plain words, no shell syntax) as written. */
function run(line: string, env: NodeJS.ProcessEnv) {
  assert.doesNotMatch(line, /["'$|&;<>]/, 'examples are plain words');
  const argv = line.split(/\s+/).slice(1);
  return spawnSync(process.execPath, [binPath, ...argv], {
    encoding: 'utf8',
    cwd: packageRoot(),
    env,
    timeout: 120_000,
  });
}

for (const command of ['preflight', 'launch']) {
  test(`every example of spark ${command} --help runs as written`, () => {
    const lines = examples(command);
    assert.ok(lines.length >= 3, `${command} --help lists its examples`);
    const fake = fakeNodes();
    for (const line of lines) {
      const r = run(line, fake.env({}, { HOME: '/home/spark' }));
      const what = `${line}\nexit ${r.status}\n${r.stderr.slice(-2000)}`;
      // 0: ok; 1: the checks found something (these files on fake nodes); never 2 or 3.
      assert.ok(r.status === 0 || r.status === 1, what);
      if (line.includes('--json')) assert.doesNotThrow(() => JSON.parse(r.stdout), what);
      if (line.includes('--dry-run') || line.includes('--stop')) assert.equal(r.status, 0, what);
      if (command === 'launch' && !line.includes('--dry-run') && !line.includes('--stop')) {
        // A real launch on nodes that lack the recipe's files: preflight stops it before anything starts.
        assert.match(r.stderr, /preflight found \d+ error\(s\), nothing was started/, what);
      }
      if (command === 'preflight') assert.match(r.stdout, /preflight recipes\/|"findings"/, what);
    }
    assert.equal(
      fake.calls().filter((c) => c.prog === 'docker' && c.argv[0] === 'run').length,
      0,
      'no example started a container',
    );
  });
}
