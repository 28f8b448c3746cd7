// Typed wrapper over the addon's sparse-file helpers and the serving overlay's read path
// (native/binding/sparse_binding.cc): where a file's holes are, dropping pages behind a
// reader, and the mmap gather `spark bench gather` measures beside the row store.
import type { FileSlice } from '../domain/table-spec.js';
import { toSparkError } from '../errors.js';
import { addon } from './index.js';
import { toIdArray, type RowIds } from './row-store.js';

/**
 * One table as the overlay reads it: global ids, the two columns as the row store's snapshot
 * tables name them, owned ids range = [lo, hi).
 */
export interface MmapTableSpec {
  layer: number;
  rows: number;
  dim: number;
  weight: FileSlice;
  scale: FileSlice;
  range: [number, number];
}

export interface MmapGatherStats {
  batches: number;
  rows: number;
  /** Rows returned as zeros: ids outside the owned range. */
  zeroRows: number;
  threads: number;
}

interface NativeMmapGather {
  gather(layer: number, ids: Uint32Array | BigUint64Array): Promise<void>;
  rows(): Buffer;
  stats(): MmapGatherStats;
  close(): void;
}

interface SparseAddon {
  findHole(path: string, start: number, end: number): number | bigint | null;
  dropCache(fd: number, offset: number, length: number): void;
  MmapGather: new (tables: MmapTableSpec[], options: { threads: number; willneed?: boolean }) => NativeMmapGather;
}

function native(): SparseAddon {
  return addon() as unknown as SparseAddon;
}

/** The first byte of [start, end) of `path` that lies in a hole, or undefined when all is data. */
export function findHole(path: string, start: number, end: number): number | undefined {
  try {
    const at = native().findHole(path, start, end);
    return at === null ? undefined : Number(at);
  } catch (err) {
    throw toSparkError(err);
  }
}

/** Drops the pages of [offset, offset + length) of an open file from the page cache (advice only). */
export function dropCache(fd: number, offset: number, length: number): void {
  native().dropCache(fd, offset, length);
}

/**
 * The overlay's read path: one mmap per file with MADV_RANDOM, a WILLNEED pass over each batch,
 * then `threads` memcpy workers. Rows land in memory the addon owns; rows() copies the last
 * batch out (benchmarks time gather() alone). One batch at a time.
 */
export class MmapGather {
  private inflight: Promise<unknown> | undefined;
  private constructor(private readonly native: NativeMmapGather) {}

  static open(tables: MmapTableSpec[], options: { threads: number; willneed?: boolean }): MmapGather {
    const Native = native().MmapGather;
    try {
      return new MmapGather(new Native(tables, options));
    } catch (err) {
      throw toSparkError(err);
    }
  }

  async gather(layer: number, ids: RowIds): Promise<void> {
    try {
      const p = this.native.gather(layer, toIdArray(ids));
      this.inflight = p;
      await p;
    } catch (err) {
      throw toSparkError(err);
    } finally {
      this.inflight = undefined;
    }
  }

  /** The last batch's rows: row i at [i * rowBytes, (i + 1) * rowBytes). */
  rows(): Buffer {
    return this.native.rows();
  }

  stats(): MmapGatherStats {
    return this.native.stats();
  }

  async close(): Promise<void> {
    await this.inflight?.catch(() => {});
    this.native.close();
  }
}
