// Checks a sparse copy made by `spark pack` without spark's own reader or verifier: the
// overlay's view of it (overlay-view.ts) against the snapshot's, row for row, and every chunk
// checksum in its manifest recomputed from the copy's bytes (CRC-32 of the chunk's weight
// bytes, then its scale bytes: src/stacks/overlay/sparse-manifest.ts).
import assert from 'node:assert/strict';
import { closeSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseSparseManifest } from '../../src/stacks/overlay/sparse-manifest.js';
import { crc32 } from '../../src/addon/pack.js';
import { openOverlayView } from './overlay-view.js';

function readAt(fd: number, at: number, bytes: number): Buffer {
  const b = Buffer.alloc(bytes);
  let got = 0;
  while (got < bytes) {
    const n = readSync(fd, b, got, bytes - got, at + got);
    if (n === 0) break;
    got += n;
  }
  return b;
}

/** The 8 + N header bytes of a .safetensors file (the bytes a sparse copy keeps verbatim). */
export function safetensorsHeader(path: string): Buffer {
  const fd = openSync(path, 'r');
  try {
    const len = readAt(fd, 0, 8);
    return readAt(fd, 0, 8 + Number(len.readBigUInt64LE(0)));
  } finally {
    closeSync(fd);
  }
}

/** Fails the test unless `copy` is a complete, byte-exact sparse copy of `snapshot`'s rows. */
export function checkSparseCopy(copy: string, snapshot: string): { rows: number; chunks: number } {
  const m = parseSparseManifest(readFileSync(join(copy, 'engram-local.json'), 'utf8'));
  assert.ok(m.spark, 'spark made it: its manifest has the spark key');
  const view = openOverlayView(copy);
  const source = openOverlayView(snapshot);
  let rows = 0;
  let chunks = 0;
  try {
    for (const r of m.layers) {
      const got = view.run(r.layer, r.start, r.end);
      const want = source.run(r.layer, r.start, r.end);
      assert.ok(
        got.weight.equals(want.weight) && got.scale.equals(want.scale),
        `layer ${r.layer}: rows differ from the snapshot`,
      );
      rows += r.end - r.start;
    }
    for (const s of m.spark.shards) {
      assert.equal(statSync(join(copy, s.name)).size, s.bytes, `${s.name}: apparent size`);
      const head = safetensorsHeader(join(snapshot, s.name));
      assert.equal(head.length, s.headerBytes, `${s.name}: header length`);
      assert.ok(safetensorsHeader(join(copy, s.name)).equals(head), `${s.name}: header bytes`);
    }
    for (const t of m.spark.tables) {
      const r = m.layers.find((l) => l.layer === t.layer)!;
      const fd = openSync(join(copy, t.shard), 'r');
      try {
        t.checksum.values.forEach((v, k) => {
          const a = r.start + k * t.checksum.chunkRows;
          const n = Math.min(r.end, a + t.checksum.chunkRows) - a;
          const w = readAt(fd, t.weightOffset + a * t.dim, n * t.dim);
          const s = readAt(fd, t.scaleOffset + a * (t.dim / 32), n * (t.dim / 32));
          assert.equal(v, crc32(s, crc32(w)).toString(16).padStart(8, '0'), `layer ${t.layer}: chunk ${k} checksum`);
          chunks++;
        });
      } finally {
        closeSync(fd);
      }
    }
  } finally {
    view.close();
    source.close();
  }
  return { rows, chunks };
}
