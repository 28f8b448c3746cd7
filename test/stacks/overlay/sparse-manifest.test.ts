import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readLocalDir, PACK_MANIFEST_NAME } from '../../../src/stacks/local-dir.js';
import {
  parseSparseManifest,
  sparseManifestText,
  type SparseManifest,
} from '../../../src/stacks/overlay/sparse-manifest.js';
import { writePackDir } from '../../helpers/engram-files.js';
import { tempDir } from '../../helpers/tmp.js';

// What the overlay's own tool writes: no spark key.
const overlayText = JSON.stringify({
  source: '/nfs/dsv41',
  layers: { '14': [96004170, 192008341], '1': [96001542, 192003084] },
  quant: 'fp8',
  created: '2026-11-30T10:00:00Z',
  note: 'sparse copy',
});

function sparkManifest(): SparseManifest {
  return {
    source: '/snap',
    layers: [{ layer: 1, start: 100, end: 300 }],
    spark: {
      format: 'spark-engram-sparse',
      version: 1,
      rank: 1,
      world: 2,
      split: 'floor',
      source: { snapshot: '/snap', files: [{ name: 'model-00001-of-00001.safetensors', bytes: 1000000, mtimeMs: 1 }] },
      index: { name: 'model.safetensors.index.json', bytes: 120, crc32: '0000abcd' },
      shards: [{ name: 'model-00001-of-00001.safetensors', bytes: 1000000, headerBytes: 700, headerCrc32: '12345678' }],
      tables: [
        {
          layer: 1,
          rows: 400,
          dim: 256,
          shard: 'model-00001-of-00001.safetensors',
          weightOffset: 700,
          scaleOffset: 700 + 400 * 256,
          checksum: { algorithm: 'crc32', chunkRows: 64, values: ['00000001', '00000002', '00000003', '00000004'] },
        },
      ],
    },
  };
}

test("the overlay tool's manifest reads as a sparse copy without spark metadata, layers ascending", () => {
  const m = parseSparseManifest(overlayText);
  assert.deepEqual(m.layers, [
    { layer: 1, start: 96001542, end: 192003084 },
    { layer: 14, start: 96004170, end: 192008341 },
  ]);
  assert.equal(m.spark, undefined);
  assert.equal(m.source, '/nfs/dsv41');
});

test("spark's manifest round-trips and keeps the overlay's layers object", () => {
  const text = sparseManifestText(sparkManifest());
  const doc = JSON.parse(text) as Record<string, unknown>;
  assert.deepEqual(doc.layers, { '1': [100, 300] });
  assert.deepEqual(Object.keys(doc), ['source', 'layers', 'quant', 'created', 'note', 'spark']);
  assert.deepEqual(parseSparseManifest(text).spark, sparkManifest().spark);
});

test('malformed sparse manifests fail naming the key', () => {
  const cases: [unknown, RegExp][] = [
    [{ layers: {} }, /layers is empty/],
    [{ layers: { one: [0, 1] } }, /layers\.one must be keyed by a layer number/],
    [{ layers: { '1': [5, 2] } }, /layers\.1 \[5, 2\) has lo > hi/],
    [{ layers: { '1': [0, 2 ** 60] } }, /layers\.1\[1\] is larger than 2\^53 - 1/],
    [{ layers: { '1': [0, '9'] } }, /layers\.1\[1\] must be a whole number/],
  ];
  for (const [doc, re] of cases) assert.throws(() => parseSparseManifest(JSON.stringify(doc), 'm.json'), re);
  const m = sparkManifest();
  m.spark!.tables[0].checksum.values.pop();
  assert.throws(
    () => parseSparseManifest(sparseManifestText(m)),
    /checksum\.values has 3 entries; 200 rows in chunks of 64 need 4/,
  );
  const n = sparkManifest();
  n.layers[0].end = 500;
  assert.throws(
    () => parseSparseManifest(sparseManifestText(n)),
    /layers\.1 \[100, 500\) is not inside the table \[0, 400\)/,
  );
  const o = sparkManifest();
  o.spark!.shards[0].name = '../etc/passwd';
  assert.throws(() => parseSparseManifest(sparseManifestText(o)), /must be a plain file name/);
});

test('readLocalDir tells sparse copies, packs (both manifest names) and snapshots apart', async () => {
  const root = tempDir();
  const sparse = join(root, 'sparse');
  mkdirSync(sparse);
  writeFileSync(join(sparse, 'engram-local.json'), overlayText);
  assert.equal((await readLocalDir(sparse)).kind, 'sparse');

  const legacy = join(root, 'legacy');
  mkdirSync(legacy);
  writePackDir(legacy, {
    rank: 0,
    world: 2,
    layout: 'dense',
    dim: 256,
    layers: [{ layer: 1, rows: 100, start: 0, end: 50 }],
  });
  const l = await readLocalDir(legacy);
  assert.equal(l.kind, 'packed');

  const renamed = join(root, 'renamed');
  mkdirSync(renamed);
  writePackDir(renamed, {
    rank: 0,
    world: 2,
    layout: 'page',
    dim: 256,
    layers: [{ layer: 1, rows: 100, start: 0, end: 50 }],
  });
  renameSync(join(renamed, 'engram-local.json'), join(renamed, PACK_MANIFEST_NAME));
  const r = await readLocalDir(renamed);
  assert.equal(r.kind, 'packed');
  assert.equal(r.kind === 'packed' && r.manifest.layers[0].layout, 'page');

  assert.equal((await readLocalDir(root)).kind, 'none');

  const odd = join(root, 'odd');
  mkdirSync(odd);
  writeFileSync(join(odd, 'engram-local.json'), '{"layers": 5}');
  await assert.rejects(readLocalDir(odd), /layers must be an object of "L": \[lo, hi\]/);
});
