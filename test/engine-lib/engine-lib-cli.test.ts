// spark engine-lib: the built library's path, its facts, a copy that a recipe mounts, and the
// recipe that mounts it over the overlay image's file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { cli } from '../helpers/cli.js';
import { LIBRARIES } from '../helpers/engine-lib.js';
import { tempDir } from '../helpers/tmp.js';
import { readRecipe } from '../../src/recipes/index.js';

test('engine-lib prints the built library of each stack, with its mount target and digest in --json', async () => {
  for (const [stack, file] of Object.entries(LIBRARIES)) {
    const plain = await cli(['engine-lib', '--stack', stack]);
    assert.equal(plain.code, 0, plain.stderr);
    assert.equal(plain.stdout.trim(), file);
    const r = await cli(['engine-lib', '--stack', stack, '--json']);
    const j = JSON.parse(r.stdout) as Record<string, unknown>;
    assert.equal(j.library, file);
    assert.equal(j.machine, process.arch === 'arm64' ? 'aarch64' : 'x86_64');
    assert.equal(j.bytes, statSync(file).size);
    assert.match(String(j.sha256), /^[0-9a-f]{64}$/);
    assert.equal(
      j.imagePath,
      stack === 'overlay' ? '/opt/dsv41-spark/overlay/libengram_rows.so' : '/opt/dsv41/adapter/librow_store.so',
    );
  }
});

test('engine-lib --copy writes the same bytes into an existing directory, never through a link', async () => {
  const dir = tempDir();
  const r = await cli(['engine-lib', '--stack', 'mia', '--copy', dir]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout.trim(), join(dir, 'librow_store.so'));
  assert.ok(readFileSync(join(dir, 'librow_store.so')).equals(readFileSync(LIBRARIES.mia)));
  const again = await cli(['engine-lib', '--stack', 'mia', '--copy', dir]); // replaces the copy
  assert.equal(again.code, 0, again.stderr);
  const real = join(dir, 'real');
  mkdirSync(real);
  const link = join(dir, 'link');
  symlinkSync(real, link);
  const viaLink = await cli(['engine-lib', '--stack', 'overlay', '--copy', link]);
  assert.equal(viaLink.code, 2);
  assert.match(viaLink.stderr, /not a directory \(a symlink is not followed\)/);
  const missing = await cli(['engine-lib', '--stack', 'overlay', '--copy', join(dir, 'nope')]);
  assert.equal(missing.code, 2);
});

test('engine-lib refuses an unknown stack with a usage error', async () => {
  const r = await cli(['engine-lib', '--stack', 'vllm']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--stack must be overlay .* or mia/);
});

test("the sparklib recipe mounts spark's library read-only over the overlay image's file", async () => {
  const { recipe } = await readRecipe('recipes/dsv41-flash-4x-sglang-sparklib/recipe.toml');
  const m = recipe.extraMounts.find((x) => x.container === '/opt/dsv41-spark/overlay/libengram_rows.so');
  assert.ok(m, 'no mount over the overlay library');
  assert.equal(m.readOnly, true);
  assert.equal(m.host, '/var/lib/spark/lib/libengram_rows.so');
});
