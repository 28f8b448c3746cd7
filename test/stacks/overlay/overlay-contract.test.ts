import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  closeSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { packRanges } from '../../../src/pack/pack-ranges.js';
import { INDEX_FILE, openSnapshot } from '../../../src/engram/snapshot.js';
import { synthRow } from '../../../src/synth/synth-rows.js';
import type { PackTable } from '../../../src/pack/pack-io.js';
import { checkTiling, openOverlayView, parseEngramRows, type Ranges } from '../../helpers/overlay-view.js';
import { makeSnapshot } from '../../helpers/synth.js';
import { writeSparseCopy } from '../../helpers/sparse-copy.js';
import { openRowSource } from '../../../src/stacks/local-copy.js';
import { tempDir } from '../../helpers/tmp.js';
import { checkCopy, packCopy, rowsValue, SPLITS, sweepWorlds } from '../../helpers/overlay-sweep.js';

// spark pack's sparse copies, read the way the serving overlay reads SPARK_ENGRAM_DIR
// (helpers/overlay-view.ts, written from docs/serving-stacks.md): every rank of a world under
// every split (helpers/overlay-sweep.ts), rows byte-exact against the snapshot, unowned ids
// zero, the ranges tiling.
const snap = makeSnapshot();
const opened = await openSnapshot(snap.dir);
const pack = (
  snapshotDir: string,
  tables: PackTable[],
  rank: number,
  world: number,
  split: (typeof SPLITS)[number],
  layout = 'sparse',
): Promise<string> => packCopy(snapshotDir, opened, tables, rank, world, split, layout);

// World 3 (ranges that do not divide evenly); worlds 2 and 4 are in test/long/overlay-contract-worlds.test.ts.
test('sparse copies of every rank of world 3, every split: the overlay reads the snapshot rows, zeros elsewhere, ranges that tile', async () => {
  await sweepWorlds(snap, opened, [3]);
});

test("the overlay's grammar and tiling check refuse what they should", () => {
  assert.throws(() => parseEngramRows('1:0-96001542'), /expected LAYER:LO:HI entries/);
  assert.throws(() => parseEngramRows('1:0:5,1:5:9'), /bad entry/);
  const rows = new Map([[1, 10]]);
  assert.throws(() => checkTiling([parseEngramRows('1:0:4'), parseEngramRows('1:5:10')], rows), /gap at row 4/);
  assert.throws(() => checkTiling([parseEngramRows('1:0:6'), parseEngramRows('1:5:10')], rows), /overlap at row 6/);
  assert.throws(() => checkTiling([parseEngramRows('1:0:4'), parseEngramRows('1:4:9')], rows), /end at 9/);
  checkTiling([parseEngramRows('1:0:4'), parseEngramRows('1:4:10')], rows);
});

test('a dense or page pack, and a version 1 pack, are not sparse copies to the overlay: it fails clearly', async () => {
  for (const layout of ['dense', 'page'] as const) {
    const dir = await pack(snap.dir, opened.engram, 1, 2, 'floor', layout);
    assert.deepEqual(
      readdirSync(dir).filter((n) => n.endsWith('.json')),
      ['spark-pack.json'],
    );
    assert.throws(() => openOverlayView(dir), /no model\.safetensors\.index\.json/);
    // Even with an index beside it, its manifest name is not the overlay's: no ranges, no shards.
    writeFileSync(join(dir, INDEX_FILE), readFileSync(join(snap.dir, INDEX_FILE)));
    assert.throws(() => openOverlayView(dir), /ENOENT.*model-0000[23]-of-00003\.safetensors/);
    // A version 1 pack as first shipped: engram-local.json with `layers` an array.
    writeFileSync(join(dir, 'engram-local.json'), readFileSync(join(dir, 'spark-pack.json')));
    assert.throws(() => openOverlayView(dir), /layers must be an object of "L": \[lo, hi\]/);
  }
});

/**
 * A sparse copy written the plain way, independently of spark's packer: for each shard, a
 * file truncated to the shard's size, its header bytes, then each layer's rows [lo, hi) of
 * the weight and of the scale at their original offsets; the index copied; a manifest with
 * the overlay's keys only.
 */
function plainCopy(
  snapshotDir: string,
  tables: PackTable[],
  ranges: { layer: number; start: number; end: number }[],
): string {
  const out = join(tempDir(), 'plain');
  mkdirSync(out);
  const byShard = new Map<string, { table: PackTable; start: number; end: number }[]>();
  for (const r of ranges) {
    const table = tables.find((t) => t.layer === r.layer)!;
    byShard.set(table.weight.fileName, [...(byShard.get(table.weight.fileName) ?? []), { table, ...r }]);
  }
  for (const [name, parts] of byShard) {
    const src = readFileSync(join(snapshotDir, name));
    const fd = openSync(join(out, name), 'w');
    ftruncateSync(fd, src.length);
    writeSync(fd, src, 0, 8 + Number(src.readBigUInt64LE(0)), 0);
    for (const { table: t, start, end } of parts) {
      const sb = t.dim / 32;
      writeSync(
        fd,
        src,
        t.weight.fileOffset + start * t.dim,
        (end - start) * t.dim,
        t.weight.fileOffset + start * t.dim,
      );
      writeSync(fd, src, t.scale.fileOffset + start * sb, (end - start) * sb, t.scale.fileOffset + start * sb);
    }
    closeSync(fd);
  }
  writeFileSync(join(out, INDEX_FILE), readFileSync(join(snapshotDir, INDEX_FILE)));
  const layers = Object.fromEntries(ranges.map((r) => [String(r.layer), [r.start, r.end]]));
  writeFileSync(
    join(out, 'engram-local.json'),
    JSON.stringify({ source: snapshotDir, layers, quant: 'fp8', created: 'now', note: 'plain' }),
  );
  return out;
}

test("spark's sparse shards equal, byte for byte, a copy written the plain way", async () => {
  const ranges = packRanges(opened.engram, opened.config, 2, 3, 'floor');
  const copy = await pack(snap.dir, opened.engram, 2, 3, 'floor');
  const plain = plainCopy(snap.dir, opened.engram, ranges);
  for (const name of ['model-00002-of-00003.safetensors', 'model-00003-of-00003.safetensors', INDEX_FILE]) {
    assert.ok(readFileSync(join(copy, name)).equals(readFileSync(join(plain, name))), name);
  }
  const view = openOverlayView(plain);
  checkCopy(view, openOverlayView(snap.dir), ranges, 'the plain copy');
  view.close();
});

/** A snapshot whose one shard holds both layers (weight and scale of each), copied from `snap`. */
function oneShardSnapshot(): string {
  const dir = join(tempDir(), 'one-shard');
  mkdirSync(dir);
  const shard = 'model-00001-of-00001.safetensors';
  const parts = opened.engram.flatMap((t) => [
    {
      name: `layers.${t.layer}.engram.embed.weight`,
      dtype: 'F8_E4M3',
      shape: [t.rows, t.dim],
      from: t.weight.file,
      at: t.weight.fileOffset,
      bytes: t.rows * t.dim,
    },
    {
      name: `layers.${t.layer}.engram.embed.scale`,
      dtype: 'F8_E8M0',
      shape: [t.rows, t.dim / 32],
      from: t.scale.file,
      at: t.scale.fileOffset,
      bytes: (t.rows * t.dim) / 32,
    },
  ]);
  const header: Record<string, unknown> = {};
  let offset = 0;
  for (const p of parts) {
    header[p.name] = { dtype: p.dtype, shape: p.shape, data_offsets: [offset, offset + p.bytes] };
    offset += p.bytes;
  }
  const json = Buffer.from(JSON.stringify(header) + ' '.repeat(37)); // data not 8- or 4096-aligned
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  writeFileSync(
    join(dir, shard),
    Buffer.concat([len, json, ...parts.map((p) => readFileSync(p.from).subarray(p.at, p.at + p.bytes))]),
  );
  writeFileSync(
    join(dir, INDEX_FILE),
    JSON.stringify({ metadata: {}, weight_map: Object.fromEntries(parts.map((p) => [p.name, shard])) }),
  );
  writeFileSync(join(dir, 'config.json'), readFileSync(join(snap.dir, 'config.json')));
  return dir;
}

test('a shard holding two Engram layers: one sparse file with both layers rows, for every rank of world 3', async () => {
  const dir = oneShardSnapshot();
  const one = await openSnapshot(dir);
  assert.equal(new Set(one.engram.flatMap((t) => [t.weight.fileName, t.scale.fileName])).size, 1);
  const source = openOverlayView(dir);
  const perRank: Ranges[] = [];
  for (let rank = 0; rank < 3; rank++) {
    const copy = await pack(dir, one.engram, rank, 3, 'front');
    assert.deepEqual(
      readdirSync(copy).sort(),
      ['engram-local.json', INDEX_FILE, 'model-00001-of-00001.safetensors'].sort(),
    );
    const view = openOverlayView(copy);
    checkCopy(view, source, packRanges(one.engram, one.config, rank, 3, 'front'), `one shard, rank ${rank}`);
    view.close();
    perRank.push(parseEngramRows(rowsValue(copy)));
  }
  checkTiling(perRank, new Map(one.engram.map((t) => [t.layer, t.rows])));
  source.close();
});

test("a copy laid out as the overlay's own tool lays it out reads the same way, in the overlay's view and in spark's", async () => {
  const source = openOverlayView(snap.dir);
  try {
    for (const rank of [0, 1]) {
      const ranges = packRanges(opened.engram, opened.config, rank, 2, 'floor');
      const dir = join(tempDir(), `tool-r${rank}`);
      mkdirSync(dir);
      writeSparseCopy(snap.dir, dir, { flavour: 'overlay', ranges });
      const view = openOverlayView(dir);
      try {
        checkCopy(view, source, ranges, `the tool's copy of rank ${rank} of 2`);
      } finally {
        view.close();
      }
      // spark reads the same rows from it, and refuses (never zeros) an id it does not hold.
      const src = await openRowSource(dir);
      try {
        for (const r of ranges) {
          const got = await src.store.gather(r.layer, new Uint32Array([r.start, r.end - 1]));
          const t = opened.engram.find((e) => e.layer === r.layer)!;
          assert.ok(
            Buffer.from(got).equals(
              Buffer.concat([synthRow(r.layer, r.start, t.dim), synthRow(r.layer, r.end - 1, t.dim)]),
            ),
          );
          const outside = r.start > 0 ? r.start - 1 : r.end;
          await assert.rejects(src.store.gather(r.layer, new Uint32Array([outside])), /outside|range/);
        }
      } finally {
        await src.close();
      }
    }
  } finally {
    source.close();
  }
});
