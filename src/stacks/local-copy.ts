// What a path holds, as the wrapper, `spark engram-ranges` and preflight need it: a node-local
// copy's ranges (each format read by its room through local-dir.ts), or a snapshot's Engram
// tables from its headers (engram/layer-source.ts does the rest).
import { statSync } from 'node:fs';
import { copyRanges, inferIdentity, type LocalCopy } from '../engram/copy-ranges.js';
import { copySource, withSubTables, type EngramNamePatterns, type LayerSource } from '../engram/layer-source.js';
import { engramSubTableSizes } from '../engram/primes.js';
import { openSnapshot } from '../engram/snapshot.js';
import type { EngramLayerRows } from '../engram/ranges.js';
import { SparkError } from '../errors/errors.js';
import type { SplitRule } from '../domain/split-rule.js';
import { readLocalDir } from './local-dir.js';
import { miaManifest, shardSplit } from './mia/mia-dir.js';

/**
 * A directory's node-local copy, if it holds one: a sparse copy's engram-local.json (with
 * spark's metadata, or the overlay tool's without: then its tables' row counts come from the
 * copy's own index and headers, and its rank and world are inferred), or a pack's manifest.
 */
export async function loadLocalCopy(path: string): Promise<LocalCopy | undefined> {
  if (!isDirectory(path)) return undefined;
  const local = await readLocalDir(path);
  if (local.kind === 'none') return undefined;
  if (local.kind === 'mia') {
    // No manifest: rank and world from the shard names, ranges and N from their headers.
    const m = miaManifest(path, local.shards);
    const layers = m.layers.map(({ layer, rows, start, end }) => ({ layer, rows, start, end }));
    const split = shardSplit(local.shards);
    const manifestPath = `${path}/${m.layers[0]!.file}`;
    const base = { kind: 'packed' as const, manifestPath, layers, named: { rank: m.rank, world: m.world } };
    if (split === 'unknown')
      return { ...base, unknown: `its ranges are no floor or front split's share of rank ${m.rank} of ${m.world}` };
    return { ...base, identity: { rank: m.rank, world: m.world, split, from: 'shards' } };
  }
  if (local.kind === 'packed') {
    const m = local.manifest;
    const layers = m.layers
      .map(({ layer, rows, start, end }) => ({ layer, rows, start, end }))
      .sort((a, b) => a.layer - b.layer);
    const copy: LocalCopy = {
      kind: 'packed',
      manifestPath: local.manifestPath,
      identity: { rank: m.rank, world: m.world, split: m.split, from: 'manifest' },
      layers,
    };
    if (m.source.revision !== undefined) copy.revision = m.source.revision;
    return copy;
  }
  const m = local.manifest;
  if (m.spark) {
    const rows = new Map(m.spark.tables.map((t) => [t.layer, t.rows]));
    const layers = copyRanges(local.manifestPath, m.layers, rows);
    const { rank, world, split } = m.spark;
    const copy: LocalCopy = {
      kind: 'sparse',
      manifestPath: local.manifestPath,
      identity: { rank, world, split, from: 'manifest' },
      layers,
    };
    if (m.spark.source.revision !== undefined) copy.revision = m.spark.source.revision;
    return copy;
  }
  const snap = await openSnapshot(path, { engramOnly: true });
  const layers = copyRanges(local.manifestPath, m.layers, new Map(snap.engram.map((t) => [t.layer, t.rows])));
  let tables: EngramLayerRows[] = layers.map(({ layer, rows }) => ({ layer, rows }));
  const sizes = snap.config?.engram ? engramSubTableSizes(snap.config.engram) : undefined;
  if (sizes && tables.every((t) => sizes.has(t.layer)))
    tables = tables.map((t) => ({ ...t, subTables: sizes.get(t.layer)! }));
  const inferred = inferIdentity(layers, tables);
  const base = { kind: 'sparse' as const, manifestPath: local.manifestPath, layers };
  return 'unknown' in inferred ? { ...base, unknown: inferred.unknown } : { ...base, identity: inferred };
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false; // openSnapshot says what is wrong with the path
  }
}

/**
 * The row source at `path`: a node-local copy's manifest when it holds one, otherwise a
 * snapshot's headers (engramOnly: the index plus the shards that hold Engram tensors). For the
 * heads split, config.json's sub-table sizes too.
 */
export async function loadLayerSource(
  path: string,
  split: SplitRule,
  patterns: EngramNamePatterns = {},
): Promise<LayerSource> {
  const copy = await loadLocalCopy(path);
  if (copy) return copySource(path, copy);
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
