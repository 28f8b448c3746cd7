// The document `spark engram-ranges --json` prints for one rank (docs/ranges.md), so a test states
// only its numbers: rank, world, split and each layer's [start, end) of a table of `rows`.
import type { SplitRule } from '../../src/domain/split-rule.js';

export interface LayerRows {
  layer: number;
  rows: number;
  start: number;
  end: number;
}

export function rankRangesJson(
  rank: number,
  world: number,
  split: SplitRule,
  layers: LayerRows[],
  extra: Record<string, unknown> = {},
) {
  return { rank, world, split, layers, ...extra };
}
