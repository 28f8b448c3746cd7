// The ranges of a node-local copy (a sparse copy, or a dense/page pack) and which rank of which
// world it was made for. spark's copies say so in their manifest; a sparse copy made by the
// overlay's own tools (engram_local.py) has only the overlay's `layers`, so its rank and world
// are inferred: the ranges must be exactly one rank's share of every table under a split rule
// (floor, front, or heads when config.json gives the sub-tables). Any partition serves the
// overlay, so a copy that matches none is not wrong, only unknown.
import { SparkError } from '../errors/errors.js';
import type { SplitRule } from '../domain/split-rule.js';
import { formatEngramRows, tileLayers, type EngramLayerRows, type LayerRange, type RankLayerRange } from './ranges.js';

/**
 * Who a copy is for. `from`: its manifest says so, its ranges match one rank's share, or (the
 * Mia stack's shards) their names say the rank and world and their ranges match the split.
 */
export interface CopyIdentity {
  rank: number;
  world: number;
  split: SplitRule;
  from: 'manifest' | 'inferred' | 'shards';
}

/** A copy's shape: two tensors per layer at their snapshot offsets, or one data file per layer. */
export const COPY_NOUN = { sparse: 'copy', packed: 'pack' } as const;

export interface LocalCopy {
  kind: keyof typeof COPY_NOUN;
  /** The manifest read (engram-local.json or spark-pack.json), for messages. */
  manifestPath: string;
  /** Absent when the manifest does not say and the ranges match no single rank's share. */
  identity?: CopyIdentity;
  /** Why the identity is unknown. */
  unknown?: string;
  /** The Mia stack's shards: the rank and world their names say, known even when the split is not. */
  named?: { rank: number; world: number };
  /** The copy's [start, end) of each table of `rows` rows, ascending by layer. */
  layers: RankLayerRange[];
  /** The revision of the snapshot it was made from, when its manifest says. */
  revision?: string;
}

/** More worlds than any cluster has; bounds the search for tiny tables, where any world fits. */
const MAX_INFERRED_WORLD = 1024;

/**
 * Worlds W under which the copy's longest range can be one rank's floor or front share: its
 * length is floor(N/W) or ceil(N/W), so N/(len+1) < W < N/(len-1). W also stays at most every
 * table's N, so each rank's share is non-empty and at most one rank per world can match. The
 * emitted sh script searches the same worlds (wrapper/manifest-reader.sh).
 */
function candidateWorlds(copy: readonly RankLayerRange[]): [number, number] | undefined {
  let longest: RankLayerRange | undefined;
  for (const r of copy) if (r.end - r.start > (longest ? longest.end - longest.start : 0)) longest = r;
  if (!longest) return undefined;
  const len = longest.end - longest.start;
  const n = longest.rows;
  const lo = Math.floor(n / (len + 1)) + 1;
  const hi = len > 1 ? Math.floor((n + len - 2) / (len - 1)) - 1 : MAX_INFERRED_WORLD;
  return [Math.max(1, lo), Math.min(hi, MAX_INFERRED_WORLD, ...copy.map((r) => r.rows))];
}

function sameRanges(a: readonly LayerRange[], b: readonly LayerRange[]): boolean {
  return formatEngramRows(a) === formatEngramRows(b);
}

/**
 * The (rank, world, split) whose share is exactly `copy` (one range per table, with the
 * table's row count), or why there is none or more than one. `tables` adds sub-table sizes for
 * the heads split when known.
 */
export function inferIdentity(
  copy: readonly RankLayerRange[],
  tables: readonly EngramLayerRows[],
): CopyIdentity | { unknown: string } {
  const found: CopyIdentity[] = [];
  const consider = (world: number, split: SplitRule): void => {
    const ranks = tileLayers(tables, world, split);
    ranks.forEach((r, rank) => {
      if (!sameRanges(r, copy)) return;
      if (!found.some((f) => f.rank === rank && f.world === world))
        found.push({ rank, world, split, from: 'inferred' });
    });
  };
  const bounds = candidateWorlds(copy);
  if (bounds) {
    for (const split of ['floor', 'front'] as const) {
      for (let w = bounds[0]; w <= bounds[1]; w++) consider(w, split);
    }
  }
  const heads = tables.every((t) => t.subTables !== undefined) ? (tables[0]?.subTables?.length ?? 0) : 0;
  for (let w = 1; w <= heads; w++) {
    try {
      consider(w, 'heads');
    } catch {
      // sub-table sizes that do not describe these tables: the heads split cannot say
    }
  }
  if (found.length === 1) return found[0]!;
  const value = formatEngramRows(copy);
  if (found.length === 0) {
    const splits = heads > 0 ? 'floor, front or heads' : 'floor or front';
    return { unknown: `its ranges ${value} are no single rank's ${splits} share of the tables` };
  }
  const list = found.map((f) => `rank ${f.rank} of ${f.world}`).join(' or ');
  return { unknown: `its ranges ${value} are the share of ${list}` };
}

/** The copy's ranges with their tables' row counts; a range outside its table is E_PACK_MANIFEST. */
export function copyRanges(
  manifestPath: string,
  ranges: readonly LayerRange[],
  rowsOf: ReadonlyMap<number, number>,
): RankLayerRange[] {
  return ranges.map((r) => {
    const rows = rowsOf.get(r.layer);
    if (rows === undefined) {
      const known = [...rowsOf.keys()].sort((a, b) => a - b).join(', ') || 'none';
      throw new SparkError(
        'E_PACK_MANIFEST',
        `${manifestPath}: layers names layer ${r.layer}, but the copy has no Engram table for it (its tables: ${known}); re-make the copy`,
        { path: manifestPath, key: `layers.${r.layer}` },
      );
    }
    if (r.end > rows) {
      throw new SparkError(
        'E_PACK_MANIFEST',
        `${manifestPath}: layer ${r.layer}'s range [${r.start}, ${r.end}) is not inside its table's ${rows} rows; re-make the copy`,
        { path: manifestPath, key: `layers.${r.layer}` },
      );
    }
    return { layer: r.layer, rows, start: r.start, end: r.end };
  });
}

/** `rank 2 of 4 (engram-local.json)` or `rank 2 of 4 (inferred from the ranges of engram-local.json)`. */
export function describeIdentity(copy: LocalCopy): string {
  const file = copy.manifestPath.replace(/^.*\//, '');
  if (!copy.identity) return `an unknown rank (${file}: ${copy.unknown})`;
  const { rank, world, from } = copy.identity;
  const how =
    from === 'manifest'
      ? file
      : from === 'shards'
        ? `the names and headers of its shards, ${file}`
        : `inferred from the ranges in ${file}`;
  return `rank ${rank} of ${world} (${how})`;
}
