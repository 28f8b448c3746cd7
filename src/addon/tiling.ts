// Typed access to the native tiling rules (native/core/format/tiling.h). Row counts are JS numbers:
// exact up to 2^53, far above any table (~2^29 rows); larger values are refused here.
import { SparkError } from '../errors/errors.js';
import { addon } from './index.js';
import type { RowRange } from '../domain/split-rule.js';

interface TilingAddon {
  tileRows(split: 'floor' | 'front', rows: number, world: number): (number | bigint)[];
  tileHeads(subTables: number[], rows: number, world: number): (number | bigint)[];
}

function native(): TilingAddon {
  return addon() as unknown as TilingAddon;
}

function toRanges(flat: (number | bigint)[]): RowRange[] {
  const out: RowRange[] = [];
  for (let i = 0; i < flat.length; i += 2) {
    const start = flat[i];
    const end = flat[i + 1];
    if (typeof start !== 'number' || typeof end !== 'number') {
      throw new SparkError('E_INTERNAL', 'a tiling boundary passed 2^53');
    }
    out.push({ start, end });
  }
  return out;
}

/** One range per rank by the floor (SGLang) or front rule. */
export function tileRows(rows: number, world: number, split: 'floor' | 'front'): RowRange[] {
  return toRanges(native().tileRows(split, rows, world));
}

/**
 * One range per rank by whole sub-tables (vLLM): ceil(H/W) sub-tables per rank.
 * Throws E_ENGRAM_ROWS (exit 2) when the sizes do not sum to `rows`.
 */
export function tileHeads(subTables: number[], rows: number, world: number): RowRange[] {
  return toRanges(native().tileHeads(subTables, rows, world));
}
