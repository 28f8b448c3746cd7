// Where the wrapper and `spark engram-ranges` get each Engram layer's row count (and, for the
// heads split, its sub-table sizes): a checkpoint's headers, a packed directory's manifest, or
// explicit counts. This runs at every rank's boot against NFS, so a snapshot is opened with
// engramOnly: the index and the headers of the shards holding Engram tensors, nothing else.
import { readModelConfig, type ModelConfig } from './config.js';
import { engramSubTableSizes } from './primes.js';
import type { EngramLayerRows } from './ranges.js';
import { dirname } from 'node:path';
import { statSync } from 'node:fs';
import { SparkError, usageError } from '../errors.js';
import type { SplitRule } from '../native/tiling.js';

export interface LayerSource {
  kind: 'snapshot' | 'packed' | 'explicit';
  /** The directory or file read, or the explicit value. */
  path: string;
  layers: EngramLayerRows[];
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

/**
 * The row source at `path`: a packed directory's manifest when it has engram-local.json,
 * otherwise a snapshot's headers. For the heads split, config.json's sub-table sizes too.
 */
export interface EngramNamePatterns {
  weightPattern?: RegExp;
  scalePattern?: RegExp;
}

export async function loadLayerSource(path: string, split: SplitRule, _patterns: EngramNamePatterns = {}): Promise<LayerSource> {
  const layers = await snapshotLayers(path);
  return { kind: 'snapshot', path, layers: split === 'heads' ? await subTablesFromDir(layers, dirOf(path)) : layers };
}

/** The directory holding config.json: the snapshot directory, or a single file's directory. */
function dirOf(path: string): string {
  try {
    return statSync(path).isDirectory() ? path : dirname(path);
  } catch {
    return path;
  }
}

/** Each Engram layer's row count from the snapshot's headers. */
async function snapshotLayers(path: string): Promise<EngramLayerRows[]> {
  throw new SparkError('E_SNAPSHOT', `${path}: reading Engram row counts from a snapshot is not available yet; pass --rows`);
}
