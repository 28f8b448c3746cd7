// One table of engram-local.json texts (test/fixtures/manifest-grammar.json), run against every
// reader of a node-local copy: `spark wrapper` (Node), the --emit-sh script (under dash here,
// bash and any other /bin/sh in test/long/manifest-grammar-shells.test.ts) and the Python
// reader. Each must accept exactly the cases marked ok, export the same ranges, and refuse the
// others as bad input (exit 2).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runEmitSh } from '../../src/commands/wrapper.js';
import { copyDir, grammarVerdicts, io, SHELLS, viaNode, viaSh } from '../helpers/manifest-grammar.js';
import { needs } from '../helpers/external-tool.js';
import { tempDir } from '../helpers/tmp.js';

test('every reader of a copy gives the same verdict on each case of the manifest grammar table', async (t) => {
  if (!needs(t, 'dash', 'numpy')) return;
  // Node, Python and the script under dash; under the other shells: test/long/manifest-grammar-shells.test.ts.
  assert.deepEqual(await grammarVerdicts(SHELLS.slice(0, 1), true), []);
});

test('the sh reader refuses 2,000 and 18,000 bogus layer keys at the first one, as Node does, exporting none', async (t) => {
  if (!needs(t, 'dash')) return;
  const dir = copyDir();
  const script = join(tempDir(), 'spark-wrapper.sh');
  writeFileSync(join(dir, 'engram-local.json'), '{"layers": {"1": [250, 500], "14": [252, 505]}}\n');
  await runEmitSh({ snapshot: dir, world: '4', out: script }, io());
  for (const n of [2000, 18000]) {
    const bogus = Array.from({ length: n }, (_, i) => `"${i + 100}": [0, 1]`).join(',\n  ');
    writeFileSync(
      join(dir, 'engram-local.json'),
      `{"layers": {\n  "1": [250, 500],\n  "14": [252, 505],\n  ${bogus}\n}}\n`,
    );
    const sh = viaSh('/usr/bin/dash', script, dir);
    assert.equal(sh.code, 2, sh.message);
    assert.match(
      sh.message,
      /engram-local\.json: layers names layer 100, but the snapshot this script was made from has no Engram table for it \(its tables: 1:1000 14:1010\)/,
    );
    const node = await viaNode(dir);
    assert.equal(node.code, 2);
    assert.match(node.message!, /engram-local\.json: layers has more than 1024 keys/);
  }
});
