// What the registry says of each serving stack, held against what the stacks themselves read:
// the library's file, image path, ABI symbols and version; the variable naming the node-local
// directory; the layout each reads, the names its files go under, the Mia shard's header,
// offsets and size. A drift in any room's entry fails here, not on a rank at boot.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { abiSymbols } from '../../src/engine-lib/engine-lib.js';
import { LAYOUTS, layoutNamed, stackNamed, stackOfImagePath, STACKS } from '../../src/stacks/registry.js';
import { headerBlock } from '../../src/stacks/packed/pack-format.js';
import {
  packedFileBytes,
  packedFileName,
  packedRowOffset,
  PACK_MANIFEST_NAME,
  type PackedLayer,
} from '../../src/stacks/packed/packed-manifest.js';
import { SPARSE_MANIFEST_NAME } from '../../src/stacks/overlay/sparse-manifest.js';
import type { PreflightContext } from '../../src/preflight-api/types.js';
import { COPY_MANIFESTS } from '../../src/stacks/local-dir.js';
import { probeScript } from '../../src/preflight/facts/probe-sh.js';
import { factsRequest } from '../helpers/facts-request.js';

/** The shard name the Mia reader opens in DSV41_PACKED_DIR. */
const MIA_NAME = /^engram-l\d+-r\d+of\d+\.bin$/;

test("the overlay's library: the file, the image path, ABI version 3 and exactly its 8 symbols", () => {
  const s = stackNamed('overlay');
  assert.equal(s.libraryFile, 'libengram_rows.so');
  assert.equal(s.imagePath, '/opt/dsv41-spark/overlay/libengram_rows.so');
  assert.equal(s.abiVersion, 3);
  assert.equal(s.dirEnv, 'SPARK_ENGRAM_DIR');
  assert.equal(s.layout, 'sparse');
  assert.deepEqual(
    abiSymbols('overlay'),
    [
      'engram_rows_abi_version',
      'engram_rows_close',
      'engram_rows_gather',
      'engram_rows_open',
      'engram_rows_prefetch',
      'engram_rows_release',
      'engram_rows_resident',
      'engram_rows_stats',
    ].sort(),
  );
});

test("the Mia stack's library: the file, the image path, its 6 symbols and the optional DRM one", () => {
  const s = stackNamed('mia');
  assert.equal(s.libraryFile, 'librow_store.so');
  assert.equal(s.imagePath, '/opt/dsv41/adapter/librow_store.so');
  assert.equal(s.abiVersion, undefined);
  assert.equal(s.dirEnv, 'DSV41_PACKED_DIR');
  assert.equal(s.layout, 'dense');
  assert.deepEqual(
    abiSymbols('mia'),
    [
      'row_store_attach_packed',
      'row_store_close',
      'row_store_lookup',
      'row_store_next_cache_on_drm',
      'row_store_open',
      'row_store_range',
      'row_store_stats',
    ].sort(),
  );
});

test('a mount is matched to the stack whose image path it covers, and to no other', () => {
  assert.equal(stackOfImagePath('/opt/dsv41-spark/overlay/libengram_rows.so')?.name, 'overlay');
  assert.equal(stackOfImagePath('/opt/dsv41/adapter//librow_store.so')?.name, 'mia');
  assert.equal(stackOfImagePath('/opt/dsv41/adapter/libengram_rows.so'), undefined);
  assert.equal(new Set(STACKS.map((s) => s.imagePath)).size, STACKS.length);
});

const entry = (layout: 'dense' | 'page', start: number, end: number): PackedLayer => ({
  layer: 14,
  rows: 1000,
  start,
  end,
  file: packedFileName(14, 2, 4, layout),
  rowBytes: 264,
  stride: 264,
  dataOffset: 4096,
  weightDtype: 'F8_E4M3',
  scaleDtype: 'F8_E8M0',
  layout,
  checksum: { algorithm: 'crc32', chunkRows: 1, values: [] },
});

test('dense is the Mia shard: its name, the 4096-byte header of six little-endian u64, rows at 4096 + (id - lo) * 264, the exact size', () => {
  assert.equal(stackNamed('mia').layout, 'dense');
  const e = entry('dense', 500, 750);
  assert.equal(e.file, 'engram-l14-r2of4.bin');
  const h = headerBlock({ version: 2, rank: 2, world: 4, split: 'floor' }, e);
  assert.equal(h.length, 4096);
  assert.deepEqual([...h.subarray(0, 8)], [0x44, 0x53, 0x56, 0x31, 0x45, 0x4e, 0x34, 0x31]);
  assert.deepEqual(
    [8, 16, 24, 32, 40].map((o) => h.readBigUInt64LE(o)),
    [14n, 500n, 750n, 1000n, 264n],
  );
  assert.ok(h.subarray(48).every((b) => b === 0));
  assert.equal(packedRowOffset(e, 500), 4096);
  assert.equal(packedRowOffset(e, 749), 4096 + 249 * 264);
  assert.equal(packedFileBytes(e), 4096 + 250 * 264);
});

test('what spark writes for no stack is under a name no stack opens, and each manifest under its own name', () => {
  const page = layoutNamed('page');
  assert.equal(page.stack, undefined);
  assert.doesNotMatch(packedFileName(14, 2, 4, 'page'), MIA_NAME);
  assert.doesNotMatch(packedFileName(14, 2, 4, 'page'), /\.safetensors$/);
  // The overlay takes any engram-local.json for a sparse copy: only the sparse layout writes one.
  assert.equal(SPARSE_MANIFEST_NAME, 'engram-local.json');
  assert.notEqual(PACK_MANIFEST_NAME, SPARSE_MANIFEST_NAME);
  assert.deepEqual(
    LAYOUTS.filter((l) => l.kind === 'sparse').map((l) => l.name),
    ['sparse'],
  );
  // Each stack's layout is read by that stack, and no layout claims a stack that does not read it.
  for (const s of STACKS) assert.equal(layoutNamed(s.layout).stack, s.name);
  for (const l of LAYOUTS) if (l.stack !== undefined) assert.equal(stackNamed(l.stack).layout, l.name);
});

test("preflight asks each node for what the Mia reader opens: DSV41_PACKED_DIR's engram-l{L}-r{R}of{TP}.bin, the header's 48 bytes, identity.json", async () => {
  const { miaPreflight } = await import('../../src/stacks/mia/preflight.js');
  const { globPattern } = await import('../../src/preflight/facts/reader-dir.js');
  const env = new Map([['DSV41_PACKED_DIR', { value: '/engram', file: '.env' }]]);
  const ctx = { env, packDir: '/packs', toHost: () => undefined } as unknown as PreflightContext;
  const asked = miaPreflight.readerDir!(ctx)!;
  assert.deepEqual(asked, { dir: '/packs', glob: asked.glob, headBytes: 48, receipt: 'identity.json' });
  // The header's fields: "DSV41EN1", then layer, lo, hi, N and row bytes as little-endian u64.
  assert.equal(asked.headBytes, 8 + 5 * 8);
  const named = globPattern(asked.glob);
  for (const [l, r, tp] of [
    [1, 0, 4],
    [14, 3, 4],
    [1, 2, 3],
    [14, 0, 1],
  ])
    assert.ok(named.test(`engram-l${l}-r${r}of${tp}.bin`), `${l} ${r} ${tp}`);
  // Every name the glob lists is one the reader could be asked to open, and spark's other files are not.
  for (const other of ['spark-pack.json', 'engram-local.json', 'identity.json', 'engram-l1-r0of4.bin.partial'])
    assert.equal(named.test(other), false, other);
  assert.equal(miaPreflight.readerDir!({ ...ctx, env: new Map() } as unknown as PreflightContext), undefined);
});

test("a node's probe takes a directory for a node-local copy by exactly the overlay's manifest and spark's, never by a Mia pack's identity.json", () => {
  // The overlay reads engram-local.json; spark's packs carry spark-pack.json; the Mia stack's
  // packs have no manifest (identity.json is the sparkrun registry's receipt, not a copy's).
  assert.deepEqual(COPY_MANIFESTS, [SPARSE_MANIFEST_NAME, PACK_MANIFEST_NAME]);
  assert.deepEqual(COPY_MANIFESTS, ['engram-local.json', 'spark-pack.json']);
  const lines = probeScript(factsRequest({ copyDir: '/c' })).split('\n');
  assert.deepEqual(
    lines.filter((l) => l.startsWith('copy_manifests=')),
    ["copy_manifests='engram-local.json spark-pack.json'"],
  );
});
