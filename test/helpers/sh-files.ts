// shellcheck and dash -n over sh programs, for the checks of src/**/*.sh and of the scripts
// spark makes of them (test/remote/sh-files.test.ts, test/long/sh-files-variants.test.ts).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './tmp.js';

const SHELLCHECK = 'shellcheck';
const DASH = '/usr/bin/dash';

/** shellcheck at every severity (style and up), POSIX sh; its findings as one string, '' when clean. */
export function shellcheck(args: string[], cwd: string): string {
  const r = spawnSync(SHELLCHECK, ['--shell=sh', '--severity=style', '--format=gcc', ...args], {
    encoding: 'utf8',
    cwd,
  });
  return r.stdout + r.stderr;
}

export function dashN(path: string): string {
  const r = spawnSync(DASH, ['-n', path], { encoding: 'utf8' });
  return r.status === 0 ? '' : r.stderr || `exit ${r.status}`;
}

/** Two Engram tables (layer and rows) to make the entrypoint of. */
export const LAYERS = [
  { layer: 1, rows: 384006168 },
  { layer: 14, rows: 384016682 },
];

/** Each made script (what it is made of -> its text) passes dash -n and shellcheck, with no placeholder or include left. */
export function checkMade(made: Record<string, string>): void {
  const dir = tempDir('spark-made-sh-');
  for (const [what, text] of Object.entries(made)) {
    const path = join(dir, 'made.sh');
    writeFileSync(path, text);
    assert.equal(dashN(path), '', `${what}: dash -n`);
    assert.equal(shellcheck([path], dir), '', `${what}: shellcheck`);
    assert.doesNotMatch(text, /@[A-Z][A-Z0-9_]*@/, `${what}: a placeholder left`);
    assert.doesNotMatch(text, /^\. \.\//m, `${what}: an include left`);
  }
}
