import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  packedFileBytes,
  packedFileName,
  packedRowOffset,
  parsePackedManifest,
  readPackedManifest,
} from '../../../src/stacks/packed/packed-manifest.js';
import { writePackDir } from '../../helpers/engram-files.js';
import { tempDir } from '../../helpers/tmp.js';

function sample(): Record<string, unknown> {
  const dir = join(tempDir(), 'pack');
  mkdirSync(dir);
  return writePackDir(dir, {
    rank: 1,
    world: 4,
    layout: 'page',
    dim: 256,
    layers: [
      { layer: 1, rows: 10000, start: 2500, end: 5000 },
      { layer: 14, rows: 10001, start: 2500, end: 5000 },
    ],
  });
}

test('a manifest written to the contract reads back with every field', async () => {
  const dir = join(tempDir(), 'pack');
  mkdirSync(dir);
  writePackDir(dir, {
    rank: 1,
    world: 4,
    layout: 'dense',
    dim: 256,
    layers: [{ layer: 1, rows: 10000, start: 2500, end: 5000 }],
  });
  const m = await readPackedManifest(dir);
  assert.equal(m.rank, 1);
  assert.equal(m.world, 4);
  assert.equal(m.split, 'floor');
  assert.equal(m.layers[0].file, packedFileName(1, 1, 4, 'dense'));
  assert.equal(m.layers[0].file, 'engram-l1-r1of4.bin');
  assert.equal(m.layers[0].checksum.values.length, 3);
  assert.equal(packedRowOffset(m.layers[0], 2501), 4096 + 264);
  assert.equal(packedFileBytes(m.layers[0]), 4096 + 2500 * 264);
});

test('page layout: 15 rows of 264 bytes per 4 KiB page, no row crosses a page', () => {
  const m = parsePackedManifest(JSON.stringify(sample()));
  const l = m.layers[0];
  assert.equal(packedRowOffset(l, 2500 + 14), 4096 + 14 * 264);
  assert.equal(packedRowOffset(l, 2500 + 15), 8192);
  assert.equal(packedFileBytes(l), 4096 + Math.ceil(2500 / 15) * 4096);
});

test('every broken field is an E_PACK_MANIFEST error naming its key', async () => {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- mutating arbitrary JSON
  const cases: [(m: any) => void, RegExp][] = [
    [(m) => (m.format = 'other'), /format must be "spark-engram-packed"/],
    [(m) => (m.version = 3), /version is 3; this spark reads versions 1 and 2/],
    [(m) => (m.rank = 4), /rank is 4 but world is 4/],
    [(m) => (m.split = 'even'), /split must be floor, front or heads/],
    [(m) => delete m.source.snapshot, /source\.snapshot must be a non-empty string/],
    [(m) => (m.layers = []), /layers is empty/],
    [(m) => (m.layers[1].layer = 1), /layers\[1\]\.layer layers must be ascending and unique/],
    [(m) => (m.layers[0].end = 10001), /layers\[0\] range \[2500, 10001\) is not inside the table \[0, 10000\)/],
    [(m) => (m.layers[0].file = '../x.bin'), /layers\[0\]\.file '\.\.\/x\.bin' must be a plain \.bin file name/],
    [(m) => (m.layers[0].rowBytes = 265), /rowBytes 265 is not D \+ D\/32/],
    [(m) => (m.layers[0].stride = 4096), /stride must equal rowBytes \(264\)/],
    [(m) => (m.layers[0].dataOffset = 0), /dataOffset must be 4096/],
    [(m) => (m.layers[0].layout = 'sparse'), /layout must be dense or page/],
    [(m) => (m.layers[0].weightDtype = 'BF16'), /weightDtype must be F8_E4M3/],
    [(m) => (m.layers[0].start = 2.5), /start must be a whole number/],
    [(m) => m.layers[0].checksum.values.pop(), /checksum\.values has 2 entries; 2500 rows in chunks of 1024 need 3/],
  ];
  for (const [mutate, re] of cases) {
    const m = sample();
    mutate(m);
    assert.throws(
      () => parsePackedManifest(JSON.stringify(m), '/p/engram-local.json'),
      (e: Error & { code?: string }) => {
        assert.equal(e.code, 'E_PACK_MANIFEST');
        assert.match(e.message, /^\/p\/engram-local\.json: /);
        assert.match(e.message, re);
        return true;
      },
    );
  }
  assert.throws(() => parsePackedManifest('{', 'x.json'), /x\.json is not valid JSON/);
  await assert.rejects(readPackedManifest(tempDir()), { code: 'E_FILE_NOT_FOUND' });
});
