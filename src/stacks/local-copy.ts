// What a path holds, read through the room of its kind (local-dir.ts tells the kind,
// registry.ts finds the room): a node-local copy's ranges, as the wrapper, `spark engram-ranges`
// and preflight need them, or a snapshot's Engram tables from its headers
// (engram/layer-source.ts does the rest); and the rows of any of them (`spark rows`, `bench gather`).
import { statSync } from 'node:fs';
import type { LocalCopy } from '../engram/copy-ranges.js';
import { copySource, withSubTables, type EngramNamePatterns, type LayerSource } from '../engram/layer-source.js';
import { openSnapshot } from '../engram/snapshot.js';
import { SparkError } from '../errors/errors.js';
import type { SplitRule } from '../domain/split-rule.js';
import { readLocalDir } from './local-dir.js';
import { formatOf } from './registry.js';
import type { RowSource, RowSourceOptions } from './row-source.js';

/**
 * A directory's node-local copy, if it holds one: a sparse copy's engram-local.json (with
 * spark's metadata, or the overlay tool's without: then its tables' row counts come from the
 * copy's own index and headers, and its rank and world are inferred), or a pack's manifest.
 */
export async function loadLocalCopy(path: string): Promise<LocalCopy | undefined> {
  if (!isDirectory(path)) return undefined;
  const local = await readLocalDir(path);
  if (local.kind === 'none') return undefined;
  return formatOf(local).copy(path, local);
}

/** The rows at `path`: a node-local copy's through its room, otherwise a snapshot's. */
export async function openRowSource(path: string, options: RowSourceOptions = {}): Promise<RowSource> {
  let isDir = false;
  try {
    isDir = statSync(path).isDirectory();
  } catch {
    throw new SparkError(
      'E_FILE_NOT_FOUND',
      `${path} does not exist (give a snapshot, a sparse copy or a packed directory)`,
      { path },
    );
  }
  const local = isDir ? await readLocalDir(path) : ({ kind: 'none' } as const);
  if (local.kind === 'none') return (await import('./row-source.js')).openTwoColumn(path, undefined, options);
  return formatOf(local).openRows(path, local, options);
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
