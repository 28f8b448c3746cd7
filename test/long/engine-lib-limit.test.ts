// The largest engine-library file preflight reads through the sh command on a node without
// spark: 64 MiB, sent whole through od (about half a minute on 2 cores); and one of a library's
// size, 5 MiB, under dash and bash (npm test sends 256 KiB: test/preflight/node-facts.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { collectEngineLibs, ENGINE_LIB_MAX_BYTES } from '../../src/preflight/facts/engine-lib.js';
import { engineLibAnswer, engineLibVerdicts, randomFile } from '../helpers/engine-lib-answer.js';
import { needs } from '../helpers/external-tool.js';
import { tempDir } from '../helpers/tmp.js';

test('the library command sends a file of exactly the limit (64 MiB) whole, read as spark reads it', () => {
  const limit = randomFile(join(tempDir(), 'limit.so'), ENGINE_LIB_MAX_BYTES);
  const sh = engineLibAnswer([limit], 'sh');
  assert.deepEqual(sh, collectEngineLibs([limit]));
  assert.deepEqual(engineLibVerdicts(sh.files), [['file', ENGINE_LIB_MAX_BYTES, 'not an ELF file']]);
});

test('the library command sends a file of 5 MiB whole, read as spark reads it; one byte over the limit is not sent', (t) => {
  if (!needs(t, 'dash')) return;
  const dir = tempDir();
  const five = randomFile(join(dir, 'five.so'), 5 << 20);
  const over = join(dir, 'over.so');
  writeFileSync(over, '');
  truncateSync(over, ENGINE_LIB_MAX_BYTES + 1);
  for (const shell of ['dash', 'bash']) {
    const sh = engineLibAnswer([five, over], shell);
    assert.deepEqual(sh, collectEngineLibs([five, over]), shell);
    assert.deepEqual(engineLibVerdicts(sh.files), [
      ['file', 5 << 20, 'not an ELF file'],
      ['file', ENGINE_LIB_MAX_BYTES + 1, `larger than ${ENGINE_LIB_MAX_BYTES} bytes`],
    ]);
  }
});
