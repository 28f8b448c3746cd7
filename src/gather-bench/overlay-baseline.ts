// Typed wrapper over a benchmark baseline: the serving overlay's read path
// (bench/baselines/overlay-mmap/mmap_gather.h), the mmap gather `spark bench gather` measures
// beside the row store. Not spark's own read path, and not in spark's addon: a module of its
// own (bench/baselines/overlay-mmap/addon, build/Release/overlay_mmap_baseline.so), loaded
// here by path, lazily, only when a benchmark opens it. SPARK_OVERLAY_BASELINE_PATH names
// another build of it to load instead.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { FileSlice } from '../domain/table-spec.js';
import { SparkError, toSparkError } from '../errors/errors.js';
import { packageRoot } from '../addon/index.js';
import { toIdArray, type RowIds } from '../addon/row-store.js';

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

/** Where the baseline's module is: SPARK_OVERLAY_BASELINE_PATH, or the package's own build. */
export function overlayBaselinePath(env: NodeJS.ProcessEnv = process.env): string {
  return env.SPARK_OVERLAY_BASELINE_PATH || join(packageRoot(), 'build', 'Release', 'overlay_mmap_baseline.so');
}

let cached: OverlayBaselineAddon | undefined;

function native(): OverlayBaselineAddon {
  if (cached) return cached;
  const path = overlayBaselinePath();
  const how =
    "build it with 'npm run build:native' (npm install does), or set SPARK_OVERLAY_BASELINE_PATH to a build of it";
  if (!existsSync(path)) {
    throw new SparkError('E_ADDON_LOAD', `the overlay baseline is not built: ${path} does not exist; ${how}`);
  }
  const module = { exports: {} as OverlayBaselineAddon };
  try {
    process.dlopen(module, path);
  } catch (err) {
    const why = err instanceof Error ? err.message.split('\n')[0] : String(err);
    throw new SparkError('E_ADDON_LOAD', `the overlay baseline could not be loaded from ${path} (${why}); ${how}`);
  }
  cached = module.exports;
  return cached;
}

/**
 * Loads the baseline's module now (the bench calls it before its first case, so a missing build
 * fails the run at once): E_ADDON_LOAD (exit 3) naming the path and the fix when it is not built.
 */
export function loadOverlayBaseline(): void {
  native();
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
