// Test fixtures for pack and verify: the Engram tables of a synthetic snapshot (file offsets
// read from the shard headers) and reading rows back out of a packed file.
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';
import type { PackTable } from '../../src/engram/pack-io.js';
import { layerGeometry, PAGE_BYTES, type PackedLayerEntry, type PackedManifestDoc } from '../../src/engram/pack-format.js';

function shardHeader(path: string): { dataStart: number; tensors: Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }> } {
  const fd = openSync(path, 'r');
  try {
    const len = Buffer.alloc(8);
    readSync(fd, len, 0, 8, 0);
    const n = Number(len.readBigUInt64LE(0));
    const json = Buffer.alloc(n);
    readSync(fd, json, 0, n, 8);
    return { dataStart: 8 + n, tensors: JSON.parse(json.toString('utf8')) };
  } finally {
    closeSync(fd);
  }
}

export function engramTables(dir: string): PackTable[] {
  const index = JSON.parse(readFileSync(join(dir, 'model.safetensors.index.json'), 'utf8')) as { weight_map: Record<string, string> };
  const tables: PackTable[] = [];
  for (const [name, fileName] of Object.entries(index.weight_map)) {
    const m = /^layers\.(\d+)\.engram\.embed\.weight$/.exec(name);
    if (!m) continue;
    const file = join(dir, fileName);
    const h = shardHeader(file);
    const w = h.tensors[name];
    const s = h.tensors[`layers.${m[1]}.engram.embed.scale`];
    tables.push({
      layer: Number(m[1]),
      rows: w.shape[0],
      dim: w.shape[1],
      weight: { file, fileName, fileOffset: h.dataStart + w.data_offsets[0], dtype: w.dtype },
      scale: { file, fileName, fileOffset: h.dataStart + s.data_offsets[0], dtype: s.dtype },
    });
  }
  return tables.sort((a, b) => a.layer - b.layer);
}

export function readManifest(dir: string): PackedManifestDoc {
  return JSON.parse(readFileSync(join(dir, 'engram-local.json'), 'utf8')) as PackedManifestDoc;
}

/** Row `id` (global) of a packed layer, read with the format's own rules. */
export function readPackedRow(dir: string, e: PackedLayerEntry, id: number): Buffer {
  const g = layerGeometry(e);
  const i = id - e.start;
  const off = e.layout === 'page' ? Math.floor(i / g.rowsPerPage) * PAGE_BYTES + (i % g.rowsPerPage) * e.stride : i * e.stride;
  const fd = openSync(join(dir, e.file), 'r');
  try {
    const b = Buffer.alloc(e.rowBytes);
    readSync(fd, b, 0, e.rowBytes, e.dataOffset + off);
    return b;
  } finally {
    closeSync(fd);
  }
}
