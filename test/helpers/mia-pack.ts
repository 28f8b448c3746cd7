// A small writer of the Mia stack's packed shards for tests, of the test's own: the layout
// docs/mia-stack.md describes (the 4096-byte header from stacks/mia/mia-shard.ts, then rows
// lo..hi-1 of the floor split, each weight then scale, read straight from a synth snapshot),
// independent of spark's packer. Options damage a shard the ways preflight must catch.
import { closeSync, mkdirSync, openSync, readSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodeMiaHeader, miaShardName, MIA_HEADER_BYTES, MIA_ROW_BYTES } from '../../src/stacks/mia/mia-shard.js';
import { synthSnapshotLike } from './snapshot-like.js';

export interface MiaPackOptions {
  /** The rank and world whose rows the files hold. */
  rank: number;
  world: number;
  /** The rank and world their names say (default: the same). */
  nameRank?: number;
  nameWorld?: number;
  /** Layers to write (default: every Engram layer of the snapshot). */
  layers?: number[];
}

function readAt(file: string, offset: number, length: number): Buffer {
  const fd = openSync(file, 'r');
  try {
    const b = Buffer.alloc(length);
    readSync(fd, b, 0, length, offset);
    return b;
  } finally {
    closeSync(fd);
  }
}

/** Writes the shards into `dir`; returns their paths by layer. */
export async function writeMiaPack(dir: string, snapshot: string, o: MiaPackOptions): Promise<Map<number, string>> {
  mkdirSync(dir, { recursive: true });
  const snap = await synthSnapshotLike(snapshot);
  const out = new Map<number, string>();
  for (const t of snap.engram) {
    if (o.layers && !o.layers.includes(t.layer)) continue;
    if (t.dim + t.dim / 32 !== MIA_ROW_BYTES)
      throw new Error(`layer ${t.layer}: rows of ${t.dim} columns are not the stack's 264 bytes`);
    const lo = Math.floor((t.rows * o.rank) / o.world);
    const hi = Math.floor((t.rows * (o.rank + 1)) / o.world);
    const n = hi - lo;
    const weights = readAt(t.weight.file, t.weight.fileOffset + lo * t.dim, n * t.dim);
    const scales = readAt(t.scale.file, t.scale.fileOffset + (lo * t.dim) / 32, (n * t.dim) / 32);
    const body = Buffer.alloc(n * MIA_ROW_BYTES);
    for (let i = 0; i < n; i++) {
      weights.copy(body, i * MIA_ROW_BYTES, i * t.dim, (i + 1) * t.dim);
      scales.copy(body, i * MIA_ROW_BYTES + t.dim, (i * t.dim) / 32, ((i + 1) * t.dim) / 32);
    }
    const path = join(dir, miaShardName(t.layer, o.nameRank ?? o.rank, o.nameWorld ?? o.world));
    writeFileSync(
      path,
      Buffer.concat([encodeMiaHeader({ layer: t.layer, lo, hi, rows: t.rows, rowBytes: MIA_ROW_BYTES }), body]),
    );
    out.set(t.layer, path);
  }
  return out;
}

/** A version-1 spark pack's `.bin` as the first spark wrote it: its JSON header padded with spaces to 4096 bytes, then rows. */
export function writeVersion1Shard(
  path: string,
  rows: { layer: number; rank: number; world: number; start: number; end: number; total: number },
): void {
  const header = JSON.stringify({
    format: 'spark-engram-packed',
    version: 1,
    rank: rows.rank,
    world: rows.world,
    split: 'floor',
    layer: rows.layer,
    rows: rows.total,
    start: rows.start,
    end: rows.end,
    file: path.slice(path.lastIndexOf('/') + 1),
    rowBytes: MIA_ROW_BYTES,
    stride: MIA_ROW_BYTES,
    dataOffset: MIA_HEADER_BYTES,
    weightDtype: 'F8_E4M3',
    scaleDtype: 'F8_E8M0',
    layout: 'dense',
    checksum: { algorithm: 'crc32', chunkRows: 63488 },
  });
  const block = Buffer.alloc(MIA_HEADER_BYTES, 0x20);
  block.write(header, 0, 'utf8');
  writeFileSync(path, Buffer.concat([block, Buffer.alloc((rows.end - rows.start) * MIA_ROW_BYTES)]));
}
