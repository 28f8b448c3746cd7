// The largest engine-library file preflight reads through the sh command on a node without
// spark: 64 MiB, sent whole through od (about half a minute on 2 cores).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { collectEngineLibs, ENGINE_LIB_MAX_BYTES } from '../../src/preflight/facts/engine-lib.js';
import { engineLibAnswer, engineLibVerdicts, randomFile } from '../helpers/engine-lib-answer.js';
import { tempDir } from '../helpers/tmp.js';

test('the library command sends a file of exactly the limit (64 MiB) whole, read as spark reads it', () => {
  const limit = randomFile(join(tempDir(), 'limit.so'), ENGINE_LIB_MAX_BYTES);
  const sh = engineLibAnswer([limit], 'sh');
  assert.deepEqual(sh, collectEngineLibs([limit]));
  assert.deepEqual(engineLibVerdicts(sh.files), [['file', ENGINE_LIB_MAX_BYTES, 'not an ELF file']]);
});
