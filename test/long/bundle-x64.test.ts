// spark bundle for this machine (x64): what the file holds (every file as its manifest says, the
// native files x86-64 with glibc <= 2.35, under 8 MiB), that the unpacked tree runs as spark with
// no checkout around it, and that a second bundle of the same build holds the same bytes. A long
// trial (npm run test:long): two bundles of the whole tree.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { checkBundle, makeBundle } from '../helpers/bundle.js';
import { tempDir } from '../helpers/tmp.js';

const COMMIT = 'c0ffee00112233445566778899aabbccddeeff00';

test('the x64 bundle: every file as its manifest says, the native files x86-64 with glibc <= 2.35, under 8 MiB', (t) => {
  if (process.arch !== 'x64') return t.skip('builds the x64 bundle on an x64 machine');
  const file = makeBundle('x64', ['--commit', COMMIT]);
  const bytes = statSync(file).size;
  assert.ok(bytes > 200_000 && bytes < 8 << 20, `${bytes} bytes`);
  const { dir, manifest } = checkBundle(file, 'x64');
  assert.equal(manifest.commit, COMMIT);
  assert.ok(manifest.files.some((f) => f.path === 'node_modules/commander/package.json'));
  assert.ok(manifest.files.some((f) => f.path === 'src/bundle/install.sh'));
  assert.ok(!manifest.files.some((f) => f.path.startsWith('node_modules/typescript/')), 'no dev dependency');
  // The unpacked tree is spark: its version names the commit, its addon loads.
  const run = (args: string[]) =>
    spawnSync(process.execPath, [join(dir, 'dist', 'src', 'bin.js'), ...args], { encoding: 'utf8', cwd: dir });
  assert.equal(run(['--version']).stdout.trim(), `0.1.0+${COMMIT.slice(0, 12)}`);
  const lib = run(['engine-lib', '--stack', 'mia']);
  assert.equal(lib.status, 0, lib.stderr);
  assert.equal(lib.stdout.trim(), join(dir, 'build', 'Release', 'librow_store.so'));
  const snap = tempDir('spark-bundle-snap-');
  assert.equal(run(['synth', snap]).status, 0);
  const inspect = run(['inspect', snap, '--json']);
  assert.equal(inspect.status, 0, inspect.stderr);
  // A second bundle of the same build holds the same bytes.
  const again = makeBundle('x64', ['--commit', COMMIT]);
  assert.equal(statSync(again).size, bytes);
});
