// The built engine libraries load in the stacks' images: native/engine-libs/check-lib.sh on each
// (ELF machine, exactly the ABI's symbols, only the C library needed, glibc <= 2.35). The
// aarch64 builds are checked by npm run test:arm64.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { packageRoot } from '../../src/addon/index.js';
import { LIBRARIES } from '../helpers/engine-lib.js';
import { needs } from '../helpers/external-tool.js';

const checker = join(packageRoot(), 'native', 'engine-libs', 'check-lib.sh');
const check = (file: string, stack: string) => spawnSync('bash', [checker, file, stack], { encoding: 'utf8' });

for (const [stack, file] of Object.entries(LIBRARIES)) {
  test(`${stack}: the built library passes the image-load check`, (t) => {
    if (!needs(t, 'binutils')) return;
    const r = check(file, stack);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /: ok \(/);
  });
}

test('the check refuses a library of the other stack and a file that needs the C++ runtime', (t) => {
  if (!needs(t, 'binutils')) return;
  const wrong = check(LIBRARIES.mia, 'overlay');
  assert.equal(wrong.status, 1);
  assert.match(wrong.stderr, /does not export engram_rows_abi_version/);
  const addon = check(join(packageRoot(), 'build', 'Release', 'spark.node'), 'mia');
  assert.equal(addon.status, 1);
  assert.match(addon.stderr, /needs libstdc\+\+\.so\.6/);
});
