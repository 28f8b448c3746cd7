// `spark wrapper --emit-sh`: the entrypoint as a self-contained POSIX sh script, for images
// without Node: entrypoint.sh (with its fragments manifest-reader.sh and gid-scan.sh), with
// every rank's SPARK_ENGRAM_ROWS computed here and baked in. A node-local copy in
// SPARK_ENGRAM_DIR is read at start and its manifest's ranges win; the RoCE GID scan runs in
// the script against sysfs with the same rule as `spark gid` (IPv4 ranges only).
import type { RankLayerRange } from '../engram/ranges.js';
import { formatEngramRows } from '../engram/ranges.js';
import type { SplitRule } from '../domain/split-rule.js';
import { MAX_DEPTH, MAX_MANIFEST_BYTES, MAX_OBJECT_KEYS } from '../engram/manifest-lexicon.js';
import { quoted, shTemplate } from '../remote/sh-template.js';

const ENTRYPOINT = shTemplate(import.meta.url, 'entrypoint.sh');

// What a user passes (the snapshot path) reaches the script only as one single-quoted word of
// an assignment, never in a comment or bare (sh-template.ts refuses a value in a comment): a
// newline in a comment ends it, and the next line runs.
export interface EmitShInput {
  world: number;
  split: SplitRule;
  /** What the ranges were computed from (shown in the log line). */
  source: string;
  /** ranks[r]: rank r's ranges. */
  ranks: RankLayerRange[][];
}

/** `1:384006168 14:384016682`: each baked table's row count, for the copy reader's inference. */
export function bakedTables(tables: readonly { layer: number; rows: number }[]): string {
  return tables.map((t) => `${t.layer}:${t.rows}`).join(' ');
}

/** The whole script. Its behaviour matches `spark wrapper` for the baked snapshot and world. */
export function emitWrapperSh(input: EmitShInput): string {
  return ENTRYPOINT.fill({
    WORLD: input.world,
    SPLIT: input.split,
    SOURCE: quoted(input.source),
    TABLES: quoted(bakedTables(input.ranks[0]?.map(({ layer, rows }) => ({ layer, rows })) ?? [])),
    // Single-quoted words, one per rank: preflight finds a script's SPARK_ENGRAM_ROWS values by
    // their quotes (rules/engram.ts).
    RANK_ROWS: quoted(input.ranks.map(formatEngramRows)),
    MAX_MANIFEST_BYTES,
    MAX_DEPTH,
    MAX_OBJECT_KEYS,
  });
}
