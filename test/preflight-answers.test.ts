// Preflight's answers to broken recipes: each finding's fix must be the right one for the case
// (not the mistake repeated), and every command in it must survive being pasted into a shell.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { edit, preflight, world } from './helpers/preflight.js';

/** The words sh makes of a pasted command (printf in place of the program). */
function pasted(command: string): string[] {
  const r = spawnSync('/bin/sh', ['-c', `printf '%s\\0' ${command}`], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.split('\0').slice(0, -1);
}

test('a fix line\'s command keeps a hostile path as one word when pasted (mounts.file-is-directory)', async () => {
  const w = await world();
  const dir = join(w.root, "docker made $(id) it's", 'aiden4x-launch.sh');
  mkdirSync(dir, { recursive: true });
  const r = await preflight({ ...w.options(w.recipe(edit(w.dsv41Text, join(w.root, 'aiden4x-launch.sh'), dir))), only: ['mounts.file-is-directory'] });
  const fix = r.findings[0]!.fix;
  const command = /\((sudo rmdir .*)\) and copy the file there$/.exec(fix)?.[1];
  assert.ok(command, fix);
  assert.deepEqual(pasted(command), ['sudo', 'rmdir', dir]);
});
