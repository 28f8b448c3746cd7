// The packed directory format (docs/packed-format.md), versions 2 (written) and 1 (read): file
// names, the layer geometry, each data file's 4096-byte header block and the manifest JSON
// text. The strict reader of the manifest is stacks/packed/packed-manifest.ts; the Mia stack's shard
// header is stacks/mia/mia-shard.ts's.
import {
  MANIFEST_FORMAT,
  MANIFEST_VERSION,
  PACK_HEADER_BYTES,
  PAGE_BYTES,
  dimOfRowBytes,
  packedFileName,
  type PackedLayer,
  type PackedManifest,
} from './packed-manifest.js';
import type { PackLayout } from '../../domain/pack-layout.js';
import { encodeMiaHeader } from '../mia/mia-shard.js';

export { MANIFEST_FORMAT, MANIFEST_VERSION, PACK_HEADER_BYTES, PAGE_BYTES, packedFileName };
export type { PackedLayer, PackedManifest, PackedSourceFile } from './packed-manifest.js';
export { CHECKSUM_ALGORITHM, checksumHex } from '../../pack/pack-io.js';

/** Sizes that follow from an entry: see native/core/pack/pack_format.h for the same rules. */
export interface LayerGeometry {
  count: number;
  dim: number;
  rowsPerPage: number;
  dataBytes: number;
  fileBytes: number;
  chunkCount: number;
}

export function layerGeometry(
  e: Pick<PackedLayer, 'start' | 'end' | 'rowBytes' | 'layout' | 'checksum'>,
): LayerGeometry {
  const count = e.end - e.start;
  const rowsPerPage = Math.floor(PAGE_BYTES / e.rowBytes);
  const dataBytes = e.layout === 'page' ? Math.ceil(count / rowsPerPage) * PAGE_BYTES : count * e.rowBytes;
  return {
    count,
    dim: dimOfRowBytes(e.rowBytes),
    rowsPerPage,
    dataBytes,
    fileBytes: PACK_HEADER_BYTES + dataBytes,
    chunkCount: Math.ceil(count / e.checksum.chunkRows),
  };
}

/** Byte range of chunk k in the file (absolute offsets) and the global row ids it holds. */
export function chunkSpan(
  e: PackedLayer,
  k: number,
): { offset: number; bytes: number; firstRow: number; lastRow: number } {
  const g = layerGeometry(e);
  const cr = e.checksum.chunkRows;
  const first = k * cr;
  const rows = Math.min(cr, g.count - first);
  const bytesFor = (n: number): number =>
    e.layout === 'page' ? Math.ceil(n / g.rowsPerPage) * PAGE_BYTES : n * e.rowBytes;
  return {
    offset: e.dataOffset + bytesFor(first),
    bytes: bytesFor(rows),
    firstRow: e.start + first,
    lastRow: e.start + first + rows - 1,
  };
}

/**
 * Default chunk: ~16 MiB, a whole number of 4 KiB pages. Page layout: 4096 pages. Dense: a
 * multiple of 4096 / gcd(4096, rowBytes) rows, so chunk boundaries fall on page boundaries.
 */
export function defaultChunkRows(layout: PackLayout, rowBytes: number): number {
  if (layout === 'page') return Math.floor(PAGE_BYTES / rowBytes) * 4096;
  const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
  const unit = PAGE_BYTES / gcd(PAGE_BYTES, rowBytes);
  return Math.max(unit, Math.floor((16 * 1024 * 1024) / rowBytes / unit) * unit);
}

/**
 * The 4096-byte header block of a layer's data file, byte for byte what the packer writes and
 * verify expects. Version 2 dense: the Mia stack's binary shard header (its reader checks it).
 * Otherwise (page, and every layout of version 1): the JSON below padded with spaces.
 */
export function headerBlock(m: Pick<PackedManifest, 'version' | 'rank' | 'world' | 'split'>, e: PackedLayer): Buffer {
  if (m.version !== 1 && e.layout === 'dense')
    return encodeMiaHeader({ layer: e.layer, lo: e.start, hi: e.end, rows: e.rows, rowBytes: e.rowBytes });
  const json = Buffer.from(headerJson(m, e), 'utf8');
  if (json.length > PACK_HEADER_BYTES)
    throw new RangeError(`${e.file}: header JSON is ${json.length} bytes, more than ${PACK_HEADER_BYTES}`);
  return Buffer.concat([json, Buffer.alloc(PACK_HEADER_BYTES - json.length, 0x20)]);
}

/**
 * The JSON header block's text: the pack's identity and the layer's manifest entry, keys in a
 * fixed order, checksum without its values (they live in the manifest and would not fit).
 * Deterministic, so verify compares the block byte for byte.
 */
function headerJson(m: Pick<PackedManifest, 'version' | 'rank' | 'world' | 'split'>, e: PackedLayer): string {
  return JSON.stringify({
    format: MANIFEST_FORMAT,
    version: m.version,
    rank: m.rank,
    world: m.world,
    split: m.split,
    layer: e.layer,
    rows: e.rows,
    start: e.start,
    end: e.end,
    file: e.file,
    rowBytes: e.rowBytes,
    stride: e.stride,
    dataOffset: e.dataOffset,
    weightDtype: e.weightDtype,
    scaleDtype: e.scaleDtype,
    layout: e.layout,
    checksum: { algorithm: e.checksum.algorithm, chunkRows: e.checksum.chunkRows },
  });
}

/** The manifest text: indented, with each checksum list on one line. */
export function manifestText(m: PackedManifest): string {
  const lists: string[] = [];
  const marked = {
    ...m,
    layers: m.layers.map((l) => {
      lists.push(JSON.stringify(l.checksum.values));
      return { ...l, checksum: { ...l.checksum, values: `@@values${lists.length - 1}@@` } };
    }),
  };
  return JSON.stringify(marked, null, 2).replace(/"@@values(\d+)@@"/g, (_s, i: string) => lists[Number(i)]) + '\n';
}
