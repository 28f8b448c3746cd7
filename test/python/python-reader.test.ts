// spark's Python reader against spark's own packs and copies: one layer of a dense pack and of
// spark's sparse copy here, checksums named; every layer of both layouts and both sparse-copy
// flavours in test/long/python-reader-copies.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeSnapshot } from '../helpers/synth.js';
import { openSnapshot } from '../../src/engram/snapshot.js';
import { readManifest } from '../helpers/packed.js';
import { needs } from '../helpers/external-tool.js';
import { checkPackedRows, checkSparseCopy, packed as packedOf, python } from '../helpers/python-reader.js';

const snap = makeSnapshot({ seed: 3 });
const tables = (await openSnapshot(snap.dir)).engram;
const packed = (layout: 'dense' | 'page'): Promise<string> => packedOf(snap.dir, tables, layout);

test('the Python reader returns the packed rows of one layer byte for byte (dense)', async (t) => {
  if (!needs(t, 'numpy')) return;
  await checkPackedRows(await packed('dense'), 1);
});

test('the Python reader verifies checksums with zlib.crc32 and names the bad chunk', async (ctx) => {
  if (!needs(ctx, 'numpy')) return;
  const out = await packed('dense');
  const e = readManifest(out).layers[0];
  const path = join(out, e.file);
  const bytes = readFileSync(path);
  bytes[4096 + 2 * 1024 * 264 + 77] ^= 0x10;
  writeFileSync(path, bytes);
  const r = python([out, '--verify']);
  assert.equal(r.code, 1);
  assert.match(r.stderr, new RegExp(`${e.file}: layer ${e.layer}: chunk 2 fails its checksum`));
  writeFileSync(path, bytes.subarray(0, bytes.length - 1));
  const t = python([out, '--layer', String(e.layer), '--ids', String(e.start)]);
  assert.equal(t.code, 2);
  assert.match(t.stderr, /the layout implies/);
});

test("the Python reader reads one layer of a sparse copy (spark's, with checksums) byte for byte", (ctx) => {
  if (!needs(ctx, 'numpy')) return;
  checkSparseCopy(snap, 'spark', 1, 1);
});
