// The bytes a gather case can read, per source kind: what fio's runs cover, what "warm"
// preloads, and what is compared with the page cache to tell whether "cold" stays cold.
import { packedFileBytes } from '../stacks/packed/packed-manifest.js';
import type { RowSource } from '../stacks/row-source.js';

/** One table as the row store opens it (a snapshot's two columns or a pack's data file). */
type TableSpec = RowSource['specs'][number];

export interface ByteRegion {
  path: string;
  offset: number;
  length: number;
}

/**
 * A pack's data rows (a page pack's rows spread over whole 4 KiB pages), or the weight and
 * scale rows a snapshot or sparse copy holds (a sparse copy's holes would read as free zeros).
 * The first region is the large one: the weight rows, or the pack's data.
 */
export function readRegions(spec: TableSpec): ByteRegion[] {
  if (spec.kind === 'packed') {
    const [start, end, dataOffset] = [spec.start, spec.end, spec.dataOffset].map(Number) as [number, number, number];
    const length = packedFileBytes({ layout: spec.layout, start, end, dataOffset, stride: spec.stride }) - dataOffset;
    return [{ path: spec.path, offset: dataOffset, length }];
  }
  const [lo, hi] = (spec.range ?? [0, spec.rows]).map(Number);
  const sb = spec.dim / 32;
  return [
    { path: spec.weight.path, offset: Number(spec.weight.offset) + lo * spec.dim, length: (hi - lo) * spec.dim },
    { path: spec.scale.path, offset: Number(spec.scale.offset) + lo * sb, length: (hi - lo) * sb },
  ];
}

export function regionBytes(regions: ByteRegion[]): number {
  return regions.reduce((a, r) => a + r.length, 0);
}

/** The overlay's view of the table: the same files and offsets, owning the rows the source holds. */
export function overlayTable(
  spec: TableSpec,
  table: { layer: number; rows: number; dim: number; start: number; end: number },
) {
  if (spec.kind !== 'snapshot') throw new Error('the overlay variant reads snapshots and sparse copies only');
  return {
    layer: table.layer,
    rows: table.rows,
    dim: table.dim,
    weight: spec.weight,
    scale: spec.scale,
    range: [table.start, table.end] as [number, number],
  };
}
