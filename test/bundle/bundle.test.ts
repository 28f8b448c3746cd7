// spark bundle's refusals: a native file of another machine or a newer glibc, a bad --arch or
// --commit. The x64 bundle itself, built twice and unpacked (seconds):
// test/long/bundle-x64.test.ts; npm test installs one on fake nodes (fanout-install.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../helpers/tmp.js';
import { bin } from '../helpers/cli.js';
import { checkNative } from '../../src/bundle/build.js';

test('a native file of another machine, or one that needs a newer glibc, is refused', () => {
  const dir = tempDir('spark-bundle-elf-');
  const wrong = join(dir, 'x.so');
  writeFileSync(wrong, 'not elf');
  assert.throws(() => checkNative(wrong, 'x64'), /not an ELF file/);
  if (process.arch === 'x64') {
    assert.throws(
      () => checkNative(join(process.cwd(), 'build', 'Release', 'librow_store.so'), 'arm64'),
      /built for x86_64, not aarch64/,
    );
  }
});

test('spark bundle: a bad --arch or --commit is a usage error', () => {
  const out = join(tempDir('spark-bundle-bad-'), 'b.tgz');
  const arch = bin(['bundle', '--arch', 'riscv', '--out', out]);
  assert.equal(arch.code, 2);
  assert.match(arch.stderr, /--arch must be x64 or arm64/);
  const commit = bin(['bundle', '--commit', 'a b', '--out', out]);
  assert.equal(commit.code, 2, commit.stderr);
  assert.match(commit.stderr, /--commit a b: letters, digits and - only/);
});
