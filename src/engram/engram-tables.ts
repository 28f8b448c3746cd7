// Finding the Engram tables among a snapshot's tensors (docs/engram-tables.md): the pair
// `layers.L.engram.embed.weight` (F8_E4M3 [N, D]) and `layers.L.engram.embed.scale`
// (F8_E8M0 [N, D/32]), optionally behind a `model.` prefix; other namings via patterns with
// one capture group for the layer.
import { SparkError } from '../errors/errors.js';
import type { ModelConfig } from './config.js';
import { captureLayers } from './pattern-match.js';

export interface TensorRef {
  name: string;
  dtype: string;
  shape: number[];
  /** Absolute path of the shard holding it. */
  file: string;
  /** The shard's name relative to the snapshot directory. */
  fileName: string;
  /** Absolute byte offset of the tensor's first byte in its file. */
  fileOffset: number;
  bytes: number;
}

export interface EngramTable {
  layer: number;
  rows: number;
  dim: number;
  /** dim weight bytes + dim/32 scale bytes. */
  rowBytes: number;
  weight: TensorRef;
  scale: TensorRef;
}

export interface EngramPatterns {
  weightPattern: RegExp;
  scalePattern: RegExp;
}

export const DEFAULT_PATTERNS: EngramPatterns = {
  weightPattern: /^(?:model\.)?layers\.(\d+)\.engram\.embed\.weight$/,
  scalePattern: /^(?:model\.)?layers\.(\d+)\.engram\.embed\.scale$/,
};

function patternsOf(options: Partial<EngramPatterns>): EngramPatterns {
  return {
    weightPattern: options.weightPattern ?? DEFAULT_PATTERNS.weightPattern,
    scalePattern: options.scalePattern ?? DEFAULT_PATTERNS.scalePattern,
  };
}

interface LayerMatch {
  weight?: number;
  scale?: number;
}

/**
 * The names that match a pattern, with the layers captured. With the default patterns every
 * match contains '.engram.embed.', so the regexes run on a handful of names instead of every
 * tensor of a large checkpoint; a user's pattern runs under a time bound (pattern-match.ts).
 */
function engramMatches(names: readonly string[], p: EngramPatterns): Map<string, LayerMatch> {
  const defaultWeight = p.weightPattern === DEFAULT_PATTERNS.weightPattern;
  const defaultScale = p.scalePattern === DEFAULT_PATTERNS.scalePattern;
  const pool = defaultWeight && defaultScale ? names.filter((n) => n.includes('.engram.embed.')) : names;
  const weights = captureLayers(pool, p.weightPattern, '--weight-pattern', defaultWeight);
  const scales = captureLayers(pool, p.scalePattern, '--scale-pattern', defaultScale);
  const out = new Map<string, LayerMatch>();
  pool.forEach((name, i) => {
    const m: LayerMatch = {};
    if (weights[i] !== undefined) m.weight = weights[i];
    if (scales[i] !== undefined) m.scale = scales[i];
    if (m.weight !== undefined || m.scale !== undefined) out.set(name, m);
  });
  return out;
}

/** The tensor names that belong to an Engram table (weight or scale). */
export function engramTensorNames(names: Iterable<string>, options: Partial<EngramPatterns> = {}): string[] {
  return [...engramMatches([...names], patternsOf(options)).keys()];
}

/** Pairs weight and scale tensors per layer and checks their dtypes, shapes and row counts. */
export function findEngramTables(
  tensors: { names(): string[]; filter(keep: (name: string) => boolean): TensorRef[] },
  config: ModelConfig | undefined,
  options: Partial<EngramPatterns> = {},
): EngramTable[] {
  const matches = engramMatches(tensors.names(), patternsOf(options));
  const weights = new Map<number, TensorRef>();
  const scales = new Map<number, TensorRef>();
  for (const t of tensors.filter((name) => matches.has(name))) {
    const { weight, scale } = matches.get(t.name)!;
    if (weight !== undefined) addUnique(weights, weight, t);
    if (scale !== undefined) addUnique(scales, scale, t);
  }
  const tables: EngramTable[] = [];
  for (const [layer, weight] of [...weights].sort((a, b) => a[0] - b[0])) {
    const scale = scales.get(layer);
    if (!scale) {
      throw new SparkError(
        'E_ENGRAM_NOT_FOUND',
        `${weight.file}: Engram layer ${layer} has weight '${weight.name}' but no scale tensor`,
        {
          path: weight.file,
          tensor: weight.name,
        },
      );
    }
    tables.push(checkTable(layer, weight, scale));
  }
  for (const [layer, scale] of scales) {
    if (!weights.has(layer)) {
      throw new SparkError(
        'E_ENGRAM_NOT_FOUND',
        `${scale.file}: Engram layer ${layer} has scale '${scale.name}' but no weight tensor`,
        {
          path: scale.file,
          tensor: scale.name,
        },
      );
    }
  }
  checkAgainstConfig(tables, config);
  return tables;
}

function addUnique(map: Map<number, TensorRef>, layer: number, t: TensorRef): void {
  const prior = map.get(layer);
  if (prior) {
    throw new SparkError(
      'E_ENGRAM_NOT_FOUND',
      `${t.file}: tensors '${prior.name}' and '${t.name}' both match Engram layer ${layer}`,
      {
        path: t.file,
        tensor: t.name,
      },
    );
  }
  map.set(layer, t);
}

function checkTable(layer: number, weight: TensorRef, scale: TensorRef): EngramTable {
  const fail = (code: 'E_ENGRAM_DTYPE' | 'E_ENGRAM_SHAPE', t: TensorRef, message: string) =>
    new SparkError(code, `${t.file}: tensor '${t.name}': ${message}`, { path: t.file, tensor: t.name });
  if (weight.dtype !== 'F8_E4M3')
    throw fail('E_ENGRAM_DTYPE', weight, `Engram weight must be F8_E4M3, found ${weight.dtype}`);
  if (scale.dtype !== 'F8_E8M0')
    throw fail('E_ENGRAM_DTYPE', scale, `Engram scale must be F8_E8M0, found ${scale.dtype}`);
  if (weight.shape.length !== 2)
    throw fail('E_ENGRAM_SHAPE', weight, `Engram weight must be 2-D [rows, dim], found [${weight.shape}]`);
  const [rows, dim] = weight.shape;
  if (dim === 0 || dim % 32 !== 0)
    throw fail('E_ENGRAM_SHAPE', weight, `Engram dim must be a positive multiple of 32, found ${dim}`);
  if (scale.shape.length !== 2 || scale.shape[0] !== rows || scale.shape[1] !== dim / 32) {
    throw fail(
      'E_ENGRAM_SHAPE',
      scale,
      `Engram scale must be [${rows}, ${dim / 32}] to match the weight, found [${scale.shape}]`,
    );
  }
  return { layer, rows, dim, rowBytes: dim + dim / 32, weight, scale };
}

function checkAgainstConfig(tables: EngramTable[], config: ModelConfig | undefined): void {
  const e = config?.engram;
  if (!e || !e.numEmbeddings) return;
  e.layerIds.forEach((layer, i) => {
    const table = tables.find((t) => t.layer === layer);
    const want = e.numEmbeddings![i];
    if (!table) {
      throw new SparkError(
        'E_ENGRAM_NOT_FOUND',
        `${config!.path}: lists Engram layer ${layer} (engram_layer_ids), but the snapshot has no table for it; check the download or --weight-pattern`,
        { path: config!.path },
      );
    }
    if (table.rows !== want) {
      throw new SparkError(
        'E_ENGRAM_ROWS',
        `${table.weight.file}: tensor '${table.weight.name}' has ${table.rows} rows but ${config!.path} says engram_num_embeddings[${i}] = ${want}`,
        { path: table.weight.file, tensor: table.weight.name },
      );
    }
  });
}
