// The `mia` variant of `spark bench gather`: the Mia stack's read path (the baseline in
// bench/baselines/mia-row-store, run by MiaReader) over a pack's data file, one child process
// per case (DSV41_IO_THREADS is read once per process; the row cache starts empty, as at boot).
// It reads only what the stack attaches: a dense file whose header is the stack's own for this
// layer and range; anything else would abort it, so it is refused here first.
import { layoutReadBy } from './originals.js';
import { closeSync, openSync, readSync } from 'node:fs';
import { decodeMiaHeader, MIA_HEADER_BYTES, MIA_ROW_BYTES, miaMismatch } from '../stacks/mia/mia-shard.js';
import type { TableSpec } from '../domain/table-spec.js';
import { storeNumbers, type GatherBenchResult } from './gather-result.js';
import { MiaReader, type MiaStats } from './mia-reader.js';
import type { MeasuredRun } from './time-loop.js';

/** The Mia reader's cache settings for a run: row_store_open's budget and DSV41_CACHE_WAYS. */
export interface MiaCacheOptions {
  /** Bytes per store (default 0, as DSV41_CACHE_GIB=0 in the mia-tp4 env file gives). */
  budget: number;
  /** DSV41_CACHE_WAYS (default 4, the stack's); clamped to 1..16 by the reader. */
  ways: number;
}

export const MIA_CACHE_DEFAULT: MiaCacheOptions = { budget: 0, ways: 4 };

export interface MiaTarget {
  pack: string;
  layer: number;
  rows: number;
  lo: number;
  hi: number;
}

/** The file the Mia reader would attach for this table, or why it would not (it would abort). */
export function miaTarget(
  spec: TableSpec,
  table: { rows: number; start: number; end: number },
): MiaTarget | { refused: string } {
  if (spec.kind !== 'packed') return { refused: 'it reads packs only' };
  const layout = layoutReadBy('mia-pool');
  if (spec.layout !== layout || spec.rowBytes !== MIA_ROW_BYTES)
    return {
      refused: `the Mia stack reads ${layout} packs of ${MIA_ROW_BYTES}-byte rows; this one is ${spec.layout} with ${spec.rowBytes}-byte rows`,
    };
  const head = Buffer.alloc(MIA_HEADER_BYTES);
  const fd = openSync(spec.path, 'r');
  try {
    readSync(fd, head, 0, MIA_HEADER_BYTES, 0);
  } finally {
    closeSync(fd);
  }
  const want = { layer: spec.layer, lo: table.start, hi: table.end, rows: table.rows };
  const why = miaMismatch(decodeMiaHeader(head), Infinity, want);
  if (why)
    return {
      refused: `${spec.path} is not the stack's packed shard (${why}): its reader would abort on it; re-pack with spark pack --layout dense`,
    };
  return { pack: spec.path, ...want };
}

/** One case: the reader started with `threads` and the cache, its timed run, its result fields at the end. */
export async function openMiaCase(
  target: MiaTarget,
  threads: number,
  cache: MiaCacheOptions,
): Promise<{ run: MeasuredRun; finish(rowsPerSec: number): Promise<Partial<GatherBenchResult>> }> {
  const { reader, stats: before } = await MiaReader.open({ ...target, threads, ...cache });
  let rows = 0;
  return {
    run: async (ids) => {
      rows += ids.length;
      return reader.lookup(ids);
    },
    async finish(rowsPerSec) {
      let after: MiaStats;
      try {
        after = await reader.stats();
      } finally {
        await reader.close();
      }
      const hits = after.hits - before.hits;
      const misses = after.misses - before.misses;
      const numbers = storeNumbers(
        { rows, reads: after.reads - before.reads, duplicates: 0, merged: 0, mappedRows: 0 },
        rowsPerSec,
      );
      return {
        direct: true,
        readsPerRow: numbers.readsPerRow,
        readsPerSec: numbers.readsPerSec,
        mia: {
          budgetBytes: cache.budget,
          ways: after.ways,
          cacheSlots: after.cacheSlots,
          cacheBytes: after.cacheBytes,
          ioThreads: after.threads,
          hitRate: hits + misses > 0 ? hits / (hits + misses) : 0,
        },
      };
    },
  };
}
