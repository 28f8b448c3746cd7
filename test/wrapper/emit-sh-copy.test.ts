// The --emit-sh script and `spark wrapper` agree on node-local copies in SPARK_ENGRAM_DIR: the
// same exported SPARK_ENGRAM_ROWS (the manifest's), the same refusals with the same exit codes,
// for spark's sparse copies, the overlay tool's (rank and world inferred), packs, and broken
// manifests (helpers/emit-sh-copy.ts). The script runs under dash; the Node wrapper reads the
// same directories. Every rank of every copy: test/long/emit-sh-copy-ranks.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeTablesDir } from '../helpers/sparse-copy.js';
import { broken, buildCopies, compare, dir, root, script, TABLES, viaNode, viaSh } from '../helpers/emit-sh-copy.js';
import { needs } from '../helpers/external-tool.js';

test("sh and Node agree on every copy, at two ranks of each, and preset: the manifest's ranges, or the same refusal", async (t) => {
  if (!needs(t, 'dash')) return;
  const sh = await script();
  const copies = buildCopies();
  // Two ranks a copy, turning with the copy's place (every rank of every copy: test/long).
  const compared = await compare(sh, copies, (i) => [String(i % 4), String((i + 2) % 4)]);
  assert.ok(compared > 75, `${compared} cases`);
  // The exported values are the manifests' (not the baked ones) and the refusals say why.
  assert.equal(viaSh(sh, { SPARK_ENGRAM_DIR: copies.custom!, NODE_RANK: '2' }).rows, '1:0:10,14:0:700');
  assert.equal(viaSh(sh, { SPARK_ENGRAM_DIR: copies['overlay-r3']!, NODE_RANK: '3' }).rows, '1:750:1000,14:757:1010');
  const wrong = viaSh(sh, { SPARK_ENGRAM_DIR: copies['overlay-r1']!, NODE_RANK: '2' });
  assert.equal(
    wrong.stderr,
    `spark wrapper: ${copies['overlay-r1']} holds the rows of rank 1 of 4 (inferred from the ranges in engram-local.json), not rank 2 of 4's: mount this node's copy, or make it with spark pack --rank 2 --world 4\n`,
  );
  const world = viaSh(sh, { SPARK_ENGRAM_DIR: copies['spark-r1of2']!, NODE_RANK: '1' });
  assert.match(world.stderr, /holds the rows of rank 1 of 2 \(engram-local\.json\), not rank 1 of 4's/);
  const preset = viaSh(sh, {
    SPARK_ENGRAM_DIR: copies['spark-r1']!,
    NODE_RANK: '1',
    SPARK_ENGRAM_ROWS: '1:250:500,14:252:504',
  });
  assert.match(
    preset.stderr,
    /SPARK_ENGRAM_ROWS='1:250:500,14:252:504' disagrees with .*\/spark-r1\/engram-local\.json, which gives 1:250:500,14:252:505/,
  );
  const ok = viaSh(sh, {
    SPARK_ENGRAM_DIR: copies['spark-r1']!,
    NODE_RANK: '1',
    SPARK_ENGRAM_ROWS: '1:250-500,14:252-505',
  });
  assert.equal(ok.rows, '1:250:500,14:252:505');
  assert.match(
    ok.stderr,
    /SPARK_ENGRAM_ROWS=1:250:500,14:252:505 checked and rewritten in the overlay's grammar \(from the manifest of the sparse copy .*spark-r1, rank 1 of 4 \(engram-local\.json\)\)/,
  );
});

test('the sh reader: escaped quotes and brackets in strings, CRLF lines, and what it refuses on its own', async (t) => {
  if (!needs(t, 'dash')) return;
  const sh = await script();
  const d = dir('tricky');
  writeTablesDir(d, TABLES);
  const text =
    '{"note": "a \\"layers\\": {\\"1\\": [0, 1]} \\\\", "spark\\"": {"rank": 3},\r\n "layers": {"14": [252, 505],\r\n "1": [250, 500]}, "zz": [{"layers": [1]}]}\r\n';
  writeFileSync(join(d, 'engram-local.json'), text);
  assert.deepEqual(JSON.parse(text).layers, { '14': [252, 505], '1': [250, 500] });
  assert.deepEqual(
    { ...viaSh(sh, { SPARK_ENGRAM_DIR: d, NODE_RANK: '1' }), stderr: '' },
    { code: 0, rows: '1:250:500,14:252:505', stderr: '' },
  );
  assert.equal((await viaNode({ SPARK_ENGRAM_DIR: d, NODE_RANK: '1' })).rows, '1:250:500,14:252:505');
  // A string that does not end on its line cannot be JSON: refused, not guessed.
  const open = broken('open-string', '{"layers": {"1": [250, 500]}, "note": "a\n b"}');
  const r = viaSh(sh, { SPARK_ENGRAM_DIR: open, NODE_RANK: '1' });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /engram-local\.json: a string does not end on its line; re-make the copy/);
  // A layer named twice: the overlay would keep the last silently; sh and Node refuse.
  const twice = broken('twice', '{"layers": {"1": [250, 500], "1": [0, 250]}}');
  assert.match(
    viaSh(sh, { SPARK_ENGRAM_DIR: twice, NODE_RANK: '1' }).stderr,
    /engram-local\.json: an object has the key "1" twice/,
  );
  assert.equal((await viaNode({ SPARK_ENGRAM_DIR: twice, NODE_RANK: '1' })).code, 2);
  // The manifest must be a regular file; a missing SPARK_ENGRAM_DIR is refused like the Node wrapper does.
  const notFile = dir('not-a-file');
  mkdirSync(join(notFile, 'engram-local.json'));
  assert.equal(viaSh(sh, { SPARK_ENGRAM_DIR: notFile, NODE_RANK: '1' }).code, 2);
  assert.equal(viaSh(sh, { SPARK_ENGRAM_DIR: join(root, 'nowhere'), NODE_RANK: '1' }).code, 2);
  assert.equal((await viaNode({ SPARK_ENGRAM_DIR: join(root, 'nowhere'), NODE_RANK: '1' })).code, 2);
  rmSync(join(notFile, 'engram-local.json'), { recursive: true });
});
