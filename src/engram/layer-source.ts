// Where the wrapper and `spark engram-ranges` get each Engram layer's row count (and, for the
// heads split, its sub-table sizes): a checkpoint's headers, a node-local copy's manifest, or
// explicit counts. This runs at every rank's boot against NFS, so a snapshot is opened with
// engramOnly: the index and the headers of the shards holding Engram tensors, nothing else.
import { readModelConfig, type ModelConfig } from './config.js';
import { COPY_NOUN, describeIdentity, type LocalCopy } from './copy-ranges.js';
import { engramSubTableSizes } from './primes.js';
import { formatEngramRows, rankRanges, tileLayers, type EngramLayerRows, type RankLayerRange } from './ranges.js';
import { SparkError, usageError } from '../errors/errors.js';
import type { SplitRule } from '../domain/split-rule.js';

export type { CopyIdentity, LocalCopy } from './copy-ranges.js';

export interface LayerSource {
  kind: 'snapshot' | 'sparse' | 'packed' | 'explicit';
  /** The directory or file read, or the explicit value. */
  path: string;
  layers: EngramLayerRows[];
  /** Set for a node-local copy: its ranges come from its manifest, not from a split rule. */
  copy?: LocalCopy;
}

/** A LayerSource for a node-local copy. */
export function copySource(path: string, copy: LocalCopy): LayerSource {
  const layers = [...copy.layers].sort((a, b) => a.layer - b.layer);
  return {
    kind: copy.kind,
    path,
    layers: layers.map(({ layer, rows }) => ({ layer, rows })),
    copy: { ...copy, layers },
  };
}

function wrongCopy(source: LayerSource, copy: LocalCopy, rank: number, world: number): SparkError {
  const what = COPY_NOUN[copy.kind];
  return new SparkError(
    'E_ROW_RANGE',
    `${source.path} holds the rows of ${describeIdentity(copy)}, not rank ${rank} of ${world}'s: ` +
      `mount this node's ${what}, or make it with spark pack --rank ${rank} --world ${world}`,
    { path: source.path },
  );
}

/**
 * One rank's ranges. A node-local copy holds one rank's rows: its manifest's ranges are the
 * answer, provided the rank and world are the copy's (when known) and an explicitly asked
 * split is the one it was made with. Otherwise the split rule applied to the row counts.
 */
export function sourceRankRanges(
  source: LayerSource,
  rank: number,
  world: number,
  split: SplitRule,
  splitGiven: boolean,
): RankLayerRange[] {
  const c = source.copy;
  if (!c) return rankRanges(source.layers, rank, world, split);
  const id = c.identity;
  if (id && (rank !== id.rank || world !== id.world)) throw wrongCopy(source, c, rank, world);
  if (!id && c.named) {
    // The Mia stack's shards of no split spark can tell from their headers (floor and front
    // are checked): the vLLM lane's heads split, whose sub-tables need config.json. Anything
    // but heads asked of them is refused: a pack is only ever right for one split.
    if (rank !== c.named.rank || world !== c.named.world) throw wrongCopy(source, c, rank, world);
    if (splitGiven && split !== 'heads') {
      throw new SparkError(
        'E_CHECK_FAILED',
        `${source.path}: ${c.unknown}, so not the ${split} split's: re-pack it with spark pack --split ${split} --layout dense --force`,
        {
          path: source.path,
        },
      );
    }
  }
  if (id && splitGiven && split !== id.split) {
    const made = id.from === 'manifest' ? `was made with the ${id.split} split` : `holds the ${id.split} split's rows`;
    throw new SparkError(
      'E_CHECK_FAILED',
      `${source.path} ${made}, not ${split}'s: drop --split, or re-make it with --split ${split}`,
      { path: source.path },
    );
  }
  return c.layers.map((l) => ({ ...l }));
}

/**
 * Every rank's ranges. For a node-local copy the split it was made with gives the other ranks,
 * and the copy's own ranges must be that rule's for its rank.
 */
export function sourceAllRanges(
  source: LayerSource,
  world: number,
  split: SplitRule,
  splitGiven: boolean,
): RankLayerRange[][] {
  const c = source.copy;
  if (!c) return tileLayers(source.layers, world, split);
  const id = c.identity;
  if (!id) {
    throw usageError(
      `${source.path} holds ${describeIdentity(c)}: every rank's ranges need the snapshot, so point at it instead`,
    );
  }
  sourceRankRanges(source, id.rank, world, split, splitGiven);
  if (id.split === 'heads') {
    throw usageError(
      `${source.path} was made with the heads split: every rank's ranges need the sub-table sizes, so point at the snapshot`,
    );
  }
  const all = tileLayers(source.layers, world, id.split);
  if (formatEngramRows(all[id.rank]!) !== formatEngramRows(c.layers)) {
    throw new SparkError(
      'E_CHECK_FAILED',
      `${c.manifestPath} says rank ${id.rank} owns ${formatEngramRows(c.layers)}, but the ${id.split} split gives ${formatEngramRows(all[id.rank]!)}`,
      { path: c.manifestPath },
    );
  }
  return all;
}

/** `--rows 1:384006168,14:384016682`: explicit row counts per layer. */
export function parseLayerRows(text: string, what = '--rows'): EngramLayerRows[] {
  const out: EngramLayerRows[] = [];
  for (const entry of text.split(',')) {
    const m = /^(\d+):(\d+)$/.exec(entry.trim());
    if (!m) throw usageError(`${what} entry '${entry}' is not layer:rows (e.g. 1:384006168,14:384016682)`);
    const layer = Number(m[1]);
    const rows = Number(m[2]);
    if (!Number.isSafeInteger(rows)) throw usageError(`${what} entry '${entry}': ${m[2]} rows is too large`);
    if (out.some((l) => l.layer === layer)) throw usageError(`${what} names layer ${layer} twice`);
    out.push({ layer, rows });
  }
  return out.sort((a, b) => a.layer - b.layer);
}

/**
 * Adds each layer's sub-table sizes from config.json's engram_* keys (the prime rule). The
 * sizes are checked against the row counts later, by the heads split itself.
 */
export function withSubTables(
  layers: EngramLayerRows[],
  config: ModelConfig | undefined,
  where: string,
): EngramLayerRows[] {
  if (!config?.engram) {
    throw new SparkError(
      'E_CONFIG',
      `the heads split needs config.json with engram_* keys (text_config) in ${where}; put it there or use --split floor`,
      { path: where },
    );
  }
  const sizes = engramSubTableSizes(config.engram);
  return layers.map((l) => {
    const subTables = sizes.get(l.layer);
    if (!subTables) {
      throw new SparkError(
        'E_CONFIG',
        `${config.path}: engram_layer_ids [${config.engram!.layerIds.join(', ')}] does not name layer ${l.layer}, which the checkpoint has`,
        { path: config.path },
      );
    }
    return { ...l, subTables };
  });
}

/** Reads DIR/config.json for the heads split. */
export async function subTablesFromDir(layers: EngramLayerRows[], dir: string): Promise<EngramLayerRows[]> {
  return withSubTables(layers, await readModelConfig(dir), dir);
}

export interface EngramNamePatterns {
  weightPattern?: RegExp;
  scalePattern?: RegExp;
}
