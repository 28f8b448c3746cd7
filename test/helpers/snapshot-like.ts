// Locates the Engram tensors of a `spark synth` snapshot from its index and shard headers, for
// tests of the row source that must not depend on the snapshot reader.
import { readFileSync, openSync, readSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import type { SnapshotLike, SnapshotTableLike } from '../../src/stacks/row-source.js';

export async function synthSnapshotLike(dir: string): Promise<SnapshotLike> {
  const index = JSON.parse(readFileSync(join(dir, 'model.safetensors.index.json'), 'utf8')) as {
    weight_map: Record<string, string>;
  };
  const tables: SnapshotTableLike[] = [];
  for (const [name, file] of Object.entries(index.weight_map)) {
    const m = /^layers\.(\d+)\.engram\.embed\.weight$/.exec(name);
    if (!m) continue;
    const path = join(dir, file);
    const fd = openSync(path, 'r');
    const len = Buffer.alloc(8);
    readSync(fd, len, 0, 8, 0);
    const n = Number(len.readBigUInt64LE());
    const json = Buffer.alloc(n);
    readSync(fd, json, 0, n, 8);
    closeSync(fd);
    const header = JSON.parse(json.toString('utf8')) as Record<
      string,
      { shape: number[]; data_offsets: [number, number] }
    >;
    const w = header[name];
    const s = header[`layers.${m[1]}.engram.embed.scale`];
    const [rows, dim] = w.shape;
    tables.push({
      layer: Number(m[1]),
      rows,
      dim,
      rowBytes: dim + dim / 32,
      weight: { file: path, fileOffset: 8 + n + w.data_offsets[0] },
      scale: { file: path, fileOffset: 8 + n + s.data_offsets[0] },
    });
  }
  return { dir, engram: tables.sort((a, b) => a.layer - b.layer) };
}
