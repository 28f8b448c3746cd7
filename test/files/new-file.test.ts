// Every file spark writes for the user goes through new-file.ts: a temporary file beside the
// target, renamed over it. A write that fails, at any step, leaves nothing of its own behind.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bin } from '../helpers/cli.js';
import { makeSnapshot } from '../helpers/synth.js';
import { tempDir } from '../helpers/tmp.js';
import { writeNewFile, writeNewFileWith } from '../../src/files/new-file.js';

const snap = makeSnapshot();

test('a directory where the file goes: each writer fails (exit 2, naming the target) and leaves no temporary file, however often it is tried', () => {
  const cases: { what: string; target: string; argv: (dir: string) => string[] }[] = [
    {
      what: 'engine-lib --copy',
      target: 'libengram_rows.so',
      argv: (dir) => ['engine-lib', '--stack', 'overlay', '--copy', dir],
    },
    {
      what: 'recipe convert --out',
      target: 'recipe.yaml',
      argv: (dir) => [
        'recipe',
        'convert',
        'recipes/dsv41-flash-4x-sglang-aiden16/recipe.toml',
        '--out',
        join(dir, 'recipe.yaml'),
        '--force',
      ],
    },
    {
      what: 'wrapper --emit-sh --out',
      target: 'spark-wrapper.sh',
      argv: (dir) => [
        'wrapper',
        '--emit-sh',
        '--snapshot',
        snap.dir,
        '--world',
        '2',
        '--out',
        join(dir, 'spark-wrapper.sh'),
      ],
    },
  ];
  for (const c of cases) {
    const dir = tempDir();
    mkdirSync(join(dir, c.target));
    for (let attempt = 1; attempt <= 3; attempt++) {
      const r = bin(c.argv(dir));
      assert.equal(r.code, 2, `${c.what}: ${r.stderr}`);
      assert.deepEqual(
        readdirSync(dir),
        [c.target],
        `${c.what}, attempt ${attempt}: the directory holds only what was there`,
      );
      assert.equal(
        r.stderr.trim(),
        `spark: ${join(dir, c.target)}: is a directory where a file is expected (EISDIR on rename)`,
        c.what,
      );
      assert.deepEqual(readdirSync(join(dir, c.target)), [], c.what);
    }
  }
});

test('writeNewFile: replaces a file whole; a fill that fails leaves the old file and no temporary one', () => {
  const dir = tempDir();
  const path = join(dir, 'out.txt');
  writeNewFile(path, 'first\n');
  writeNewFile(path, Buffer.from('second\n'));
  assert.equal(readFileSync(path, 'utf8'), 'second\n');
  assert.throws(
    () =>
      writeNewFileWith(path, 0o644, () => {
        throw new Error('disk on fire');
      }),
    /disk on fire/,
  );
  assert.equal(readFileSync(path, 'utf8'), 'second\n');
  assert.deepEqual(readdirSync(dir), ['out.txt']);
  // An error on the descriptor names the target, not the temporary file (Node names neither).
  writeFileSync(join(dir, 'keep'), 'x');
  const e = (() => {
    try {
      writeNewFileWith(path, 0o644, (fd) => {
        readFileSync(fd); // EBADF: the descriptor is write-only
      });
    } catch (err) {
      return err as NodeJS.ErrnoException;
    }
    return undefined;
  })();
  assert.equal(e?.code, 'EBADF');
  assert.equal(e?.path, path);
  assert.deepEqual(readdirSync(dir).sort(), ['keep', 'out.txt']);
});
