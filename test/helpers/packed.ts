// Test fixtures for pack and verify: a packed directory's manifest and its rows, read back
// with the format's own rules (docs/packed-format.md), independently of the packer.
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';
import {
  layerGeometry,
  PAGE_BYTES,
  type PackedLayer,
  type PackedManifest,
} from '../../src/stacks/packed/pack-format.js';

export function readManifest(dir: string): PackedManifest {
  return JSON.parse(readFileSync(join(dir, 'spark-pack.json'), 'utf8')) as PackedManifest;
}

/** Row `id` (global) of a packed layer, read with the format's own rules. */
export function readPackedRow(dir: string, e: PackedLayer, id: number): Buffer {
  const g = layerGeometry(e);
  const i = id - e.start;
  const off =
    e.layout === 'page' ? Math.floor(i / g.rowsPerPage) * PAGE_BYTES + (i % g.rowsPerPage) * e.stride : i * e.stride;
  const fd = openSync(join(dir, e.file), 'r');
  try {
    const b = Buffer.alloc(e.rowBytes);
    readSync(fd, b, 0, e.rowBytes, e.dataOffset + off);
    return b;
  } finally {
    closeSync(fd);
  }
}
