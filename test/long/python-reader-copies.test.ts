// spark's Python reader on every layer of a dense and a page pack and of both sparse-copy
// flavours, byte for byte (test/python/python-reader.test.ts keeps one layer of a dense pack and
// of spark's sparse copy in npm test). A long trial (npm run test:long): about twenty Python
// processes, each importing numpy.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { synthRow } from '../../src/synth/synth-rows.js';
import { cli } from '../helpers/cli.js';
import { makeSnapshot } from '../helpers/synth.js';
import { tempDir } from '../helpers/tmp.js';
import { openSnapshot } from '../../src/engram/snapshot.js';
import { readManifest } from '../helpers/packed.js';
import { floorRange, writeSparseCopy } from '../helpers/sparse-copy.js';
import { needs } from '../helpers/external-tool.js';
import { dequant, packed as packedOf, python } from '../helpers/python-reader.js';

const snap = makeSnapshot({ seed: 3 });
const tables = (await openSnapshot(snap.dir)).engram;
const packed = (layout: 'dense' | 'page'): Promise<string> => packedOf(snap.dir, tables, layout);

for (const layout of ['dense', 'page'] as const) {
  test(`the Python reader returns the packed rows byte for byte (${layout})`, async (t) => {
    if (!needs(t, 'numpy')) return;
    const out = await packed(layout);
    for (const e of readManifest(out).layers) {
      const ids = [
        e.start,
        e.start + 1,
        e.start + 14,
        e.start + 15,
        e.start + 16,
        Math.floor((e.start + e.end) / 2),
        e.end - 1,
      ];
      const r = python([out, '--layer', String(e.layer), '--ids', ids.join(','), '--dequant']);
      assert.equal(r.code, 0, r.stderr);
      const doc = JSON.parse(r.stdout) as {
        layer: number;
        rows: { id: number; weight: string; scale: string; values: number[] }[];
      };
      assert.equal(doc.layer, e.layer);
      assert.deepEqual(
        doc.rows.map((x) => x.id),
        ids,
      );
      for (const row of doc.rows) {
        const want = synthRow(e.layer, row.id, 256, 3);
        assert.equal(row.weight + row.scale, want.toString('hex'), `layer ${e.layer} row ${row.id}`);
        assert.deepEqual(row.values, dequant(want, 256));
      }
      // The same ids through spark's row store, reading the same pack.
      const viaSpark = await cli([
        'rows',
        out,
        '--layer',
        String(e.layer),
        '--ids',
        ids.join(','),
        '--json',
        '--dequant',
      ]);
      assert.equal(viaSpark.code, 0, viaSpark.stderr);
      const sparkRows = (
        JSON.parse(viaSpark.stdout) as { rows: { id: number; weight: string; scale: string; values: number[] }[] }
      ).rows;
      assert.deepEqual(
        sparkRows.map((x) => [x.id, x.weight, x.scale]),
        doc.rows.map((x) => [x.id, x.weight, x.scale]),
      );
      // Numerically equal (the F8_E4M3 byte 0x80 is -0: JSON writers differ on its sign).
      sparkRows.forEach((x, i) =>
        assert.ok(
          x.values.every((v, c) => v === doc.rows[i].values[c]),
          `row ${x.id} values`,
        ),
      );
      const outside = python([out, '--layer', String(e.layer), '--ids', String(e.end)]);
      assert.equal(outside.code, 2);
      assert.match(
        outside.stderr,
        new RegExp(`^spark_engram_reader: .*id ${e.end} is outside this copy.s range \\[${e.start}, ${e.end}\\)\n$`),
      );
    }
    const ok = python([out, '--verify']);
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(JSON.parse(ok.stdout).ok, true);
  });
}

for (const flavour of ['overlay', 'spark'] as const) {
  test(`the Python reader reads a sparse copy (${flavour === 'overlay' ? "the overlay tool's layout" : "spark's, with checksums"}) byte for byte`, async (ctx) => {
    if (!needs(ctx, 'numpy')) return;
    const dir = join(tempDir(), 'copy');
    mkdirSync(dir);
    const ranges = snap.layers.map((l) => floorRange(l.layer, l.rows, 2, 3));
    const copy = writeSparseCopy(snap.dir, dir, { flavour, ranges, rank: 2, world: 3, chunkRows: 500 });
    for (const r of ranges) {
      const ids = [r.start, r.start + 1, Math.floor((r.start + r.end) / 2), r.end - 1, r.start];
      const py = python([dir, '--layer', String(r.layer), '--ids', ids.join(','), '--dequant']);
      assert.equal(py.code, 0, py.stderr);
      const doc = JSON.parse(py.stdout) as {
        source: string;
        rows: { id: number; weight: string; scale: string; values: number[] }[];
      };
      assert.equal(doc.source, 'sparse');
      doc.rows.forEach((row, i) => {
        assert.equal(row.id, ids[i]);
        const want = synthRow(r.layer, row.id, 256, 3);
        assert.equal(row.weight + row.scale, want.toString('hex'), `layer ${r.layer} row ${row.id}`);
        assert.deepEqual(row.values, dequant(want, 256));
      });
      for (const outside of [r.start - 1, r.end]) {
        const o = python([dir, '--layer', String(r.layer), '--ids', String(outside)]);
        assert.equal(o.code, 2);
        assert.match(o.stderr, new RegExp(`id ${outside} is outside this copy's range \\[${r.start}, ${r.end}\\)`));
      }
    }
    const v = python([dir, '--verify']);
    assert.equal(v.code, 0, v.stderr);
    assert.equal(JSON.parse(v.stdout).checksums, flavour === 'spark');
    // A changed weight byte: spark's checksums catch it, names the chunk; the overlay's copy has none.
    const t = copy.tables[1];
    const at = t.weightOffset + (ranges[1].start + 1234) * 256 + 9;
    const bytes = readFileSync(join(dir, t.shard));
    bytes[at] ^= 0x40;
    writeFileSync(join(dir, t.shard), bytes);
    const bad = python([dir, '--verify']);
    if (flavour === 'spark') {
      assert.equal(bad.code, 1);
      assert.match(bad.stderr, new RegExp(`${t.shard}: layer 14: chunk 2 fails its checksum`));
    } else {
      assert.equal(bad.code, 0);
      assert.match(JSON.parse(bad.stdout).note, /no checksums/);
    }
  });
}
