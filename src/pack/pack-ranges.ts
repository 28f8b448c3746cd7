// The rows a rank packs per layer: the tiling module's split rules (engram/ranges.ts), with the
// prime-rule sub-table sizes from config.json for the heads split.
import type { ModelConfig } from '../engram/config.js';
import { withSubTables } from '../engram/layer-source.js';
import { rankRanges } from '../engram/ranges.js';
import type { SplitRule } from '../domain/split-rule.js';

export function packRanges(
  tables: readonly { layer: number; rows: number }[],
  config: ModelConfig | undefined,
  rank: number,
  world: number,
  split: SplitRule,
  where = 'the snapshot',
): { layer: number; rows: number; start: number; end: number }[] {
  const layers = tables.map((t) => ({ layer: t.layer, rows: t.rows }));
  return rankRanges(split === 'heads' ? withSubTables(layers, config, where) : layers, rank, world, split);
}
