// Typed wrapper over a benchmark baseline (native/binding/overlay_baseline_binding.cc): the
// serving overlay's read path (bench/baselines/overlay-mmap/mmap_gather.h), the mmap gather
// `spark bench gather` measures beside the row store. Not spark's own read path.
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

interface OverlayBaselineAddon {
  MmapGather: new (tables: MmapTableSpec[], options: { threads: number; willneed?: boolean }) => NativeMmapGather;
}

function native(): OverlayBaselineAddon {
  return addon() as unknown as OverlayBaselineAddon;
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
