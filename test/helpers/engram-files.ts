// Engram table files written at test time: raw snapshot-like tensors at unaligned offsets,
// real safetensors shards (sparse where large), and packed data files in both layouts.
// Row bytes are a fixed function of (layer, id, column) so any read can be checked.
import { openSync, writeSync, closeSync, ftruncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PackedTableSpec, SnapshotTableSpec } from '../../src/domain/table-spec.js';

/** Deterministic row: D weight bytes then D/32 scale bytes. */
export function testRow(layer: number, id: number, dim: number): Buffer {
  const out = Buffer.alloc(dim + dim / 32);
  let x = (Math.imul(id >>> 0, 0x9e3779b1) ^ Math.imul(Math.floor(id / 2 ** 32) + layer * 7919, 0x85ebca6b)) >>> 0;
  for (let c = 0; c < out.length; c++) {
    x = (Math.imul(x ^ (x >>> 15), 0x2c1b3c6d) + c) >>> 0;
    out[c] = x >>> 24;
  }
  return out;
}

export interface RawSnapshot {
  path: string;
  rows: number;
  dim: number;
  weightOffset: number;
  scaleOffset: number;
}

/** header bytes of padding, weight [rows, dim], scale [rows, dim/32], all rows written. */
export function writeRawSnapshot(path: string, layer: number, rows: number, dim: number, header = 664): RawSnapshot {
  const sb = dim / 32;
  const buf = Buffer.alloc(header + rows * (dim + sb), 0x20);
  for (let id = 0; id < rows; id++) {
    const row = testRow(layer, id, dim);
    row.copy(buf, header + id * dim, 0, dim);
    row.copy(buf, header + rows * dim + id * sb, dim);
  }
  const fd = openSync(path, 'w');
  writeSync(fd, buf);
  closeSync(fd);
  return { path, rows, dim, weightOffset: header, scaleOffset: header + rows * dim };
}

/** The row store's description of a snapshot written by writeRawSnapshot. */
export function rawSnapshotTable(snap: RawSnapshot, layer: number): SnapshotTableSpec {
  return {
    kind: 'snapshot',
    layer,
    rows: snap.rows,
    dim: snap.dim,
    weight: { path: snap.path, offset: snap.weightOffset },
    scale: { path: snap.path, offset: snap.scaleOffset },
  };
}

/** A packed data file: 4096-byte JSON header block, rows [start, end) from dataOffset 4096. */
export function writePacked(
  path: string,
  layer: number,
  start: number,
  end: number,
  dim: number,
  layout: 'dense' | 'page',
  rowFn: (layer: number, id: number, dim: number) => Buffer = testRow,
): void {
  const rb = dim + dim / 32;
  const perPage = Math.floor(4096 / rb);
  const n = end - start;
  const dataBytes = layout === 'dense' ? n * rb : Math.ceil(n / perPage) * 4096;
  const buf = Buffer.alloc(4096 + dataBytes, 0);
  buf.fill(0x20, 0, 4096);
  buf.write(JSON.stringify({ layer, start, end, rowBytes: rb, stride: rb, dataOffset: 4096, layout }), 0);
  for (let i = 0; i < n; i++) {
    const off = layout === 'dense' ? 4096 + i * rb : 4096 + Math.floor(i / perPage) * 4096 + (i % perPage) * rb;
    rowFn(layer, start + i, dim).copy(buf, off);
  }
  const fd = openSync(path, 'w');
  writeSync(fd, buf);
  closeSync(fd);
}

/** The table spec of a file writePacked wrote. */
export function packedTable(
  path: string,
  layer: number,
  start: number,
  end: number,
  dim: number,
  layout: 'dense' | 'page',
  direct = false,
): PackedTableSpec {
  const rb = dim + dim / 32;
  return { kind: 'packed', layer, path, start, end, dataOffset: 4096, stride: rb, rowBytes: rb, layout, direct };
}

export interface ShardTable {
  layer: number;
  rows: number;
  dim: number;
}

export interface WrittenShard {
  path: string;
  dataStart: number;
  tables: { layer: number; rows: number; dim: number; weightOffset: number; scaleOffset: number }[];
}

/**
 * A real safetensors file holding the Engram tables of the given layers, F8_E4M3 weight then
 * F8_E8M0 scale per layer. Sparse: only the rows at `ids` are written, so full-size tables
 * (offsets far past 2^32) cost a few pages of disk.
 */
export function writeSparseShard(path: string, tables: ShardTable[], ids: Map<number, number[]>): WrittenShard {
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  let at = 0;
  const placed = tables.map((t) => {
    const w = at;
    at += t.rows * t.dim;
    const s = at;
    at += (t.rows * t.dim) / 32;
    header[`layers.${t.layer}.engram.embed.weight`] = {
      dtype: 'F8_E4M3',
      shape: [t.rows, t.dim],
      data_offsets: [w, s],
    };
    header[`layers.${t.layer}.engram.embed.scale`] = {
      dtype: 'F8_E8M0',
      shape: [t.rows, t.dim / 32],
      data_offsets: [s, at],
    };
    return { ...t, w, s };
  });
  // Pad the JSON so the data starts at an offset that is not page aligned (like real shards).
  let json = JSON.stringify(header);
  const dataStart = 8 + json.length;
  const pad = (dataStart % 4096 === 0 ? 1 : 0) + ((8 - (dataStart % 8)) % 8);
  json += ' '.repeat(pad);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  const fd = openSync(path, 'w');
  writeSync(fd, len, 0, 8, 0);
  writeSync(fd, Buffer.from(json), 0, json.length, 8);
  const base = 8 + json.length;
  ftruncateSync(fd, base + at);
  for (const t of placed) {
    const sb = t.dim / 32;
    for (const id of ids.get(t.layer) ?? []) {
      const row = testRow(t.layer, id, t.dim);
      writeSync(fd, row, 0, t.dim, base + t.w + id * t.dim);
      writeSync(fd, row, t.dim, sb, base + t.s + id * sb);
    }
  }
  closeSync(fd);
  return {
    path,
    dataStart: base,
    tables: placed.map((t) => ({
      layer: t.layer,
      rows: t.rows,
      dim: t.dim,
      weightOffset: base + t.w,
      scaleOffset: base + t.s,
    })),
  };
}

export interface PackLayerSpec {
  layer: number;
  rows: number;
  start: number;
  end: number;
}

/** A packed directory as docs/packed-format.md describes it (format version 1): data files, then engram-local.json. */
export function writePackDir(
  dir: string,
  o: { rank: number; world: number; layout: 'dense' | 'page'; dim: number; layers: PackLayerSpec[] },
  rowFn: (layer: number, id: number, dim: number) => Buffer = testRow,
): Record<string, unknown> {
  const rb = o.dim + o.dim / 32;
  const layers = o.layers.map((l) => {
    const file = `engram-l${l.layer}-r${o.rank}of${o.world}.bin`;
    writePacked(join(dir, file), l.layer, l.start, l.end, o.dim, o.layout, rowFn);
    const chunkRows = 1024;
    const values = Array.from({ length: Math.ceil((l.end - l.start) / chunkRows) }, (_, i) => `00000000${i}`);
    return {
      ...l,
      file,
      rowBytes: rb,
      stride: rb,
      dataOffset: 4096,
      weightDtype: 'F8_E4M3',
      scaleDtype: 'F8_E8M0',
      layout: o.layout,
      checksum: { algorithm: 'xxh64', chunkRows, values },
    };
  });
  const manifest = {
    format: 'spark-engram-packed',
    version: 1,
    rank: o.rank,
    world: o.world,
    split: 'floor',
    source: { snapshot: '/models/dsv41', files: [{ name: 'model-00047-of-00048.safetensors', bytes: 1, mtimeMs: 0 }] },
    layers,
  };
  writeFileSync(join(dir, 'engram-local.json'), JSON.stringify(manifest, null, 2));
  return manifest;
}
