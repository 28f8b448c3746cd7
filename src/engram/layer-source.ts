// Where the wrapper and `spark engram-ranges` get each Engram layer's row count (and, for the
// heads split, its sub-table sizes): a checkpoint's headers, a packed directory's manifest, or
// explicit counts. This runs at every rank's boot against NFS, so a snapshot is opened with
// engramOnly: the index and the headers of the shards holding Engram tensors, nothing else.
import { readModelConfig, type ModelConfig } from './config.js';
import { engramSubTableSizes } from './primes.js';
import { readLocalDir } from './local-dir.js';
import { openSnapshot } from './snapshot.js';
import { formatEngramRows, rankRanges, tileLayers, type EngramLayerRows, type RankLayerRange } from './ranges.js';
import { SparkError, usageError } from '../errors.js';
import type { SplitRule } from '../native/tiling.js';

/** What a packed directory's manifest (engram-local.json) says about its ranges. */
export interface PackedRanges {
  rank: number;
  world: number;
  split: SplitRule;
  /** This rank's [start, end) of each table of `rows` rows. */
  layers: RankLayerRange[];
}

export interface LayerSource {
  kind: 'snapshot' | 'packed' | 'explicit';
  /** The directory or file read, or the explicit value. */
  path: string;
  layers: EngramLayerRows[];
  /** Set for a packed directory: its ranges come from the manifest, not from a split rule. */
  packed?: PackedRanges;
}

/** A LayerSource for a packed directory, from its manifest's fields. */
export function packedSource(path: string, manifest: PackedRanges): LayerSource {
  const layers = [...manifest.layers].sort((a, b) => a.layer - b.layer);
  return {
    kind: 'packed',
    path,
    layers: layers.map(({ layer, rows }) => ({ layer, rows })),
    packed: { rank: manifest.rank, world: manifest.world, split: manifest.split, layers },
  };
}

/**
 * One rank's ranges. A packed directory holds one rank's rows: its manifest's ranges are the
 * answer, provided the rank, world and (when asked for explicitly) split are the pack's.
 * Otherwise the split rule applied to the row counts.
 */
export function sourceRankRanges(
  source: LayerSource,
  rank: number,
  world: number,
  split: SplitRule,
  splitGiven: boolean,
): RankLayerRange[] {
  const p = source.packed;
  if (!p) return rankRanges(source.layers, rank, world, split);
  if (rank !== p.rank || world !== p.world) {
    throw new SparkError(
      'E_CHECK_FAILED',
      `${source.path} holds rank ${p.rank} of ${p.world}'s rows (engram-local.json), not rank ${rank} of ${world}'s: ` +
        `mount this node's packed directory, or run spark pack --rank ${rank} --world ${world}`,
      { path: source.path },
    );
  }
  if (splitGiven && split !== p.split) {
    throw new SparkError(
      'E_CHECK_FAILED',
      `${source.path} was packed with the ${p.split} split, not ${split}: drop --split, or re-pack with --split ${split}`,
      { path: source.path },
    );
  }
  return p.layers.map((l) => ({ ...l }));
}

/**
 * Every rank's ranges. For a packed directory the pack's split rule gives the other ranks, and
 * the manifest's own ranges must be that rule's for its rank.
 */
export function sourceAllRanges(source: LayerSource, world: number, split: SplitRule, splitGiven: boolean): RankLayerRange[][] {
  const p = source.packed;
  if (!p) return tileLayers(source.layers, world, split);
  sourceRankRanges(source, p.rank, world, split, splitGiven);
  if (p.split === 'heads') {
    throw usageError(`${source.path} was packed with the heads split: --all needs the sub-table sizes, so point it at the snapshot`);
  }
  const all = tileLayers(source.layers, world, p.split);
  if (formatEngramRows(all[p.rank]!) !== formatEngramRows(p.layers)) {
    throw new SparkError(
      'E_CHECK_FAILED',
      `${source.path}: engram-local.json says rank ${p.rank} owns ${formatEngramRows(p.layers)}, but the ${p.split} split gives ${formatEngramRows(all[p.rank]!)}`,
      { path: source.path },
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
export function withSubTables(layers: EngramLayerRows[], config: ModelConfig | undefined, where: string): EngramLayerRows[] {
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

/**
 * The row source at `path`: a packed directory's manifest when it holds engram-local.json,
 * otherwise a snapshot's headers (engramOnly: the index plus the shards that hold Engram
 * tensors). For the heads split, config.json's sub-table sizes too.
 */
export async function loadLayerSource(path: string, split: SplitRule, patterns: EngramNamePatterns = {}): Promise<LayerSource> {
  const local = await readLocalDir(path);
  if (local.kind === 'sparse') {
    throw new SparkError('E_PACK_MANIFEST', `${path} is a sparse copy (engram-local.json): this spark reads ranges from snapshots and dense or page packs`, { path });
  }
  if (local.kind === 'packed') {
    const m = local.manifest;
    const layers = m.layers.map(({ layer, rows, start, end }) => ({ layer, rows, start, end }));
    return packedSource(path, { rank: m.rank, world: m.world, split: m.split, layers });
  }
  const snap = await openSnapshot(path, { engramOnly: true, ...patterns });
  if (snap.engram.length === 0) {
    throw new SparkError(
      'E_ENGRAM_NOT_FOUND',
      `${path}: no Engram tables (layers.L.engram.embed.weight / .scale); other namings need --weight-pattern and --scale-pattern`,
      { path },
    );
  }
  const layers = snap.engram.map((t) => ({ layer: t.layer, rows: t.rows }));
  return { kind: 'snapshot', path, layers: split === 'heads' ? withSubTables(layers, snap.config, path) : layers };
}
