// The manifest grammar table (test/fixtures/manifest-grammar.json) against the --emit-sh
// script under bash, and /bin/sh when it is neither dash nor bash: each accepts exactly the
// cases marked ok, exports the same ranges and refuses the others in one line naming the file.
// Node, Python and dash read the same table in test/engram/manifest-grammar.test.ts. And
// Node on a manifest of almost 16 MiB.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MAX_MANIFEST_BYTES } from '../../src/engram/manifest-lexicon.js';
import { copyDir, grammarVerdicts, ROWS, SHELLS, viaNode } from '../helpers/manifest-grammar.js';

test('the --emit-sh script under every other shell gives the same verdict on each case of the manifest grammar table', async () => {
  assert.ok(SHELLS.slice(1).includes('/bin/bash'), SHELLS.join(' '));
  assert.deepEqual(await grammarVerdicts(SHELLS.slice(1), false), []);
});

test('a manifest of almost 16 MiB, its bulk one string: read, and a digit escaped at the end of a 16 MiB key found', async () => {
  const dir = copyDir();
  const manifest = join(dir, 'engram-local.json');
  const layers = '"layers": {"1": [250, 500], "14": [252, 505]}';
  // Plain characters and escapes: a pattern with a repeated group recursed once per character.
  const long = 'x'.repeat(MAX_MANIFEST_BYTES - 1000) + '\\n'.repeat(100);
  writeFileSync(manifest, `{${layers}, "pad": "${long}"}\n`);
  assert.deepEqual(await viaNode(dir), { code: 0, rows: ROWS });
  writeFileSync(manifest, `{${layers}, "${long}\\u0031": 1}\n`);
  const bad = await viaNode(dir);
  assert.equal(bad.code, 2);
  assert.ok(bad.message!.length < 500, `${bad.message!.length} characters: ${bad.message!.slice(0, 300)}`);
  assert.match(bad.message!, /engram-local\.json has the key "x{56}…", a digit written with an escape; /);
});
