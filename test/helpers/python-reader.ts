// Shared by test/python/python-reader.test.ts and test/long/python-reader-copies.test.ts: the
// Python reader run as a process, the dequantizer it must match, a floor pack of rank 1 of 3, and
// the checks both files run, on fewer layers in npm test.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { packEngram } from '../../src/stacks/pack-engram.js';
import { packRanges } from '../../src/pack/pack-ranges.js';
import { packageRoot } from '../../src/addon/index.js';
import type { EngramTable } from '../../src/engram/snapshot.js';
import { tempDir } from './tmp.js';
import { synthRow } from '../../src/synth/synth-rows.js';
import { cli } from './cli.js';
import { readManifest } from './packed.js';
import { floorRange, writeSparseCopy } from './sparse-copy.js';
import type { makeSnapshot } from './synth.js';
import { python3 } from './python3.js';

type Snapshot = ReturnType<typeof makeSnapshot>;

const reader = join(packageRoot(), 'python', 'spark_engram_reader.py');

/** spark's Python reader as a process: its exit code and output. */
export function python(args: string[]): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(python3(), [reader, ...args], { encoding: 'utf8' });
  if (r.error) throw r.error;
  return { code: r.status ?? 128, stdout: r.stdout, stderr: r.stderr };
}

/** F8_E4M3 (e4m3fn) times 2^(e - 127): the reference the Python dequantizer must match. */
export function dequant(row: Buffer, dim: number): number[] {
  const out: number[] = [];
  for (let c = 0; c < dim; c++) {
    const b = row[c];
    const e = (b >> 3) & 15;
    const m = b & 7;
    const mag = e === 0 ? (m / 8) * 2 ** -6 : (1 + m / 8) * 2 ** (e - 7);
    out.push((b & 0x80 ? -mag : mag) * 2 ** (row[dim + (c >> 5)] - 127));
  }
  return out;
}

/** Rank 1 of 3's floor pack of `tables` from the snapshot at `snapshotDir`. */
export async function packed(snapshotDir: string, tables: EngramTable[], layout: 'dense' | 'page'): Promise<string> {
  const out = join(tempDir(), 'pack');
  await packEngram({
    snapshotDir,
    tables,
    out,
    rank: 1,
    world: 3,
    split: 'floor',
    ranges: packRanges(tables, undefined, 1, 3, 'floor'),
    layout,
    threads: 2,
    chunkRows: layout === 'page' ? 15 * 64 : 1024,
  });
  return out;
}

/**
 * The first `layers` layers of the pack at `out` read by the Python reader (ids at its edges and
 * within), byte for byte and dequantized as spark reads them, an id past its range refused, and
 * the whole pack verified.
 */
export async function checkPackedRows(out: string, layers: number): Promise<void> {
  for (const e of readManifest(out).layers.slice(0, layers)) {
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
}

/**
 * A sparse copy of `flavour` (rank 2 of 3) read by the Python reader from layer index `from` on,
 * refusing the first `outsides` of the ids just below and just past each range, then verified:
 * spark's checksums name a changed byte's chunk, the overlay tool's copy has none.
 */
export function checkSparseCopy(snap: Snapshot, flavour: 'overlay' | 'spark', from: number, outsides: 1 | 2): void {
  const dir = join(tempDir(), 'copy');
  mkdirSync(dir);
  const ranges = snap.layers.map((l) => floorRange(l.layer, l.rows, 2, 3));
  const copy = writeSparseCopy(snap.dir, dir, { flavour, ranges, rank: 2, world: 3, chunkRows: 500 });
  for (const r of ranges.slice(from)) {
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
    for (const outside of [r.start - 1, r.end].slice(0, outsides)) {
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
}
