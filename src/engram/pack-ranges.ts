// The rows a rank packs per layer under each split rule (contract.md, engram-ranges): floor
// and front from the row count alone, heads from the prime-rule sub-table sizes of
// config.json. Exact for any safe-integer row count (BigInt products).
import { SparkError } from '../errors.js';
import type { ModelConfig } from './config.js';
import { engramSubTableSizes, prefixOffsets } from './primes.js';

export type PackSplit = 'floor' | 'front' | 'heads';

/** [start, end) of `rank` under the floor or front rule. */
export function splitRange(split: 'floor' | 'front', rows: number, rank: number, world: number): [number, number] {
  const n = BigInt(rows);
  const r = BigInt(rank);
  const w = BigInt(world);
  if (split === 'floor') return [Number((n * r) / w), Number((n * (r + 1n)) / w)];
  const q = n / w;
  const rem = n % w;
  const start = r * q + (r < rem ? r : rem);
  return [Number(start), Number(start + q + (r < rem ? 1n : 0n))];
}

/** [start, end) of `rank` owning ceil(H/W) whole sub-tables (vLLM's rule). */
export function headsRange(subTables: number[], rank: number, world: number): [number, number] {
  const per = Math.ceil(subTables.length / world);
  const offsets = prefixOffsets(subTables);
  const at = (i: number): number => offsets[Math.min(i, subTables.length)];
  return [at(rank * per), at((rank + 1) * per)];
}

export function packRanges(
  tables: { layer: number; rows: number }[],
  config: ModelConfig | undefined,
  rank: number,
  world: number,
  split: PackSplit,
): { layer: number; start: number; end: number }[] {
  const sizes = split === 'heads' ? subTableSizes(config) : undefined;
  return tables.map((t) => {
    if (!sizes) {
      const [start, end] = splitRange(split as 'floor' | 'front', t.rows, rank, world);
      return { layer: t.layer, start, end };
    }
    const subs = sizes.get(t.layer);
    const sum = subs?.reduce((a, b) => a + b, 0);
    if (!subs || sum !== t.rows) {
      throw new SparkError(
        'E_ENGRAM_ROWS',
        `layer ${t.layer}: config.json's prime rule gives ${sum ?? 'no'} rows, the tensor has ${t.rows}; the heads split needs them to agree (or use --split floor)`,
      );
    }
    const [start, end] = headsRange(subs, rank, world);
    return { layer: t.layer, start, end };
  });
}

function subTableSizes(config: ModelConfig | undefined): Map<number, number[]> {
  if (!config?.engram) {
    throw new SparkError('E_CONFIG', 'the heads split needs config.json with the engram_* keys next to the shards; use --split floor or front otherwise');
  }
  return engramSubTableSizes(config.engram);
}
