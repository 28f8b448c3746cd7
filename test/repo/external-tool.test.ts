// The one rule for a test whose external tool is missing (helpers/external-tool.ts), run as
// node --test runs it: skipped with one line naming the tool and its apt line on a developer's
// machine, a failure under CI=true, and a plain run when the tool is there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { packageRoot } from '../../src/addon/index.js';
import { missingLine, needs, TOOLS, type ExternalTool } from '../helpers/external-tool.js';
import { tempDir } from '../helpers/tmp.js';

const GHOST: ExternalTool = {
  name: 'spark-ghost-tool',
  checks: 'checks nothing here',
  apt: 'spark-ghost-tool',
  probe: ['spark-ghost-tool-that-is-not-installed', '--version'],
};
const NODE: ExternalTool = {
  name: 'node',
  checks: 'runs this test',
  apt: 'nodejs',
  probe: [process.execPath, '-e', '0'],
};

/** `node --test` (TAP) on one test that needs `tool`, with CI set as given; its exit code and output. */
function runNeeding(tool: ExternalTool, ci: string | undefined): { code: number | null; out: string } {
  const helper = pathToFileURL(join(packageRoot(), 'dist', 'test', 'helpers', 'external-tool.js')).href;
  const file = join(tempDir('spark-tool-'), 'needs.test.mjs');
  writeFileSync(
    file,
    `import { test } from 'node:test';
import { needs } from ${JSON.stringify(helper)};
test('a test that runs the tool', (t) => {
  if (!needs(t, ${JSON.stringify(tool)})) return;
  console.log('RAN');
});
`,
  );
  const env = { ...process.env };
  // Not a subtest of this run: a child that inherits the runner's context skips its files.
  delete env.NODE_TEST_CONTEXT;
  delete env.CI;
  if (ci !== undefined) env.CI = ci;
  const r = spawnSync(process.execPath, ['--test', '--test-reporter=tap', file], { encoding: 'utf8', env });
  return { code: r.status, out: r.stdout + r.stderr };
}

test('a missing tool with CI unset: the test is skipped with one line naming it and its apt line', () => {
  const r = runNeeding(GHOST, undefined);
  assert.equal(r.code, 0, r.out);
  const line = 'spark-ghost-tool is not installed (it checks nothing here): sudo apt-get install -y spark-ghost-tool';
  assert.equal(missingLine(GHOST), line);
  assert.ok(r.out.includes(`ok 1 - a test that runs the tool # SKIP ${line}\n`), r.out);
  assert.match(r.out, /^# skipped 1$/m);
  assert.doesNotMatch(r.out, /RAN/);
});

test('a missing tool with CI=true: the test fails, naming the tool and that CI must install it', () => {
  const r = runNeeding(GHOST, 'true');
  assert.equal(r.code, 1, r.out);
  assert.match(r.out, /^not ok 1 - a test that runs the tool$/m);
  assert.ok(
    r.out.includes(
      "error: 'spark-ghost-tool is not installed (it checks nothing here): sudo apt-get install -y spark-ghost-tool (CI=true: CI must install it, as .ci/run does)'",
    ),
    r.out,
  );
  assert.match(r.out, /^# fail 1$/m);
});

test('a tool that is there: the test runs, with CI set or not', () => {
  for (const ci of [undefined, 'true']) {
    const r = runNeeding(NODE, ci);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /RAN/);
    assert.match(r.out, /^# pass 1$/m);
  }
});

test('needs: every missing tool in the one skip line; true without a skip when all are there', () => {
  const skips: (string | undefined)[] = [];
  const t = { skip: (m?: string) => void skips.push(m) };
  const ci = process.env.CI;
  delete process.env.CI;
  try {
    assert.equal(needs(t, NODE), true);
    assert.equal(needs(t, GHOST, NODE, { ...GHOST, name: 'another', apt: 'another-pkg' }), false);
  } finally {
    if (ci !== undefined) process.env.CI = ci;
  }
  assert.equal(skips.length, 1);
  assert.match(skips[0]!, /^spark-ghost-tool is not installed .*; another is not installed .*another-pkg$/);
  // Every tool the suite names says what it checks and how to install it.
  for (const tool of Object.values(TOOLS)) assert.ok(tool.checks.length > 10 && /^[a-z0-9.+-]+$/.test(tool.apt));
});
