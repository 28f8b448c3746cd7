// config.json: the model facts the tools need. DeepSeek-V4.1 nests them under `text_config`;
// older and flat configs keep them at the top level. Both are accepted, text_config first.
import { join } from 'node:path';
import { SparkError } from '../errors/errors.js';
import { readJsonIfExists } from '../files/read-optional.js';

export interface EngramConfig {
  layerIds: number[];
  numEmbeddings?: number[];
  maxNgram: number;
  heads: number;
  headDim: number;
  vocabSize: number;
}

export interface ModelConfig {
  path: string;
  raw: Record<string, unknown>;
  engram?: EngramConfig;
  numAttentionHeads?: number;
  hiddenSize?: number;
  vocabSize?: number;
  maxPositionEmbeddings?: number;
}

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Reads DIR/config.json; undefined when the file does not exist. */
export async function readModelConfig(dir: string): Promise<ModelConfig | undefined> {
  const path = join(dir, 'config.json');
  const raw = await readJsonIfExists(path, 'E_CONFIG', { what: 'model config' });
  if (raw === undefined) return undefined;
  if (!isObject(raw)) throw new SparkError('E_CONFIG', `${path}: expected a JSON object`, { path });
  return parseModelConfig(raw, path);
}

export function parseModelConfig(raw: Json, path: string): ModelConfig {
  const text = isObject(raw.text_config) ? raw.text_config : {};
  // A key is looked up in text_config first, then at the top level.
  const get = (key: string): unknown => (key in text ? text[key] : raw[key]);
  const int = (key: string): number | undefined => {
    const v = get(key);
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
      throw new SparkError('E_CONFIG', `${path}: '${key}' must be a non-negative integer, got ${JSON.stringify(v)}`, {
        path,
        key,
      });
    }
    return v;
  };
  const intList = (key: string): number[] | undefined => {
    const v = get(key);
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0)) {
      throw new SparkError('E_CONFIG', `${path}: '${key}' must be a list of non-negative integers`, { path, key });
    }
    return v as number[];
  };

  const config: ModelConfig = {
    path,
    raw,
    numAttentionHeads: int('num_attention_heads'),
    hiddenSize: int('hidden_size'),
    vocabSize: int('vocab_size'),
    maxPositionEmbeddings: int('max_position_embeddings'),
  };
  const layerIds = intList('engram_layer_ids');
  if (layerIds !== undefined && layerIds.length > 0) {
    const need = (key: string): number => {
      const v = int(key);
      if (v === undefined) {
        throw new SparkError('E_CONFIG', `${path}: 'engram_layer_ids' is set but '${key}' is missing`, { path, key });
      }
      return v;
    };
    const numEmbeddings = intList('engram_num_embeddings');
    if (numEmbeddings !== undefined && numEmbeddings.length !== layerIds.length) {
      throw new SparkError(
        'E_CONFIG',
        `${path}: 'engram_num_embeddings' has ${numEmbeddings.length} entries for ${layerIds.length} engram layers`,
        { path, key: 'engram_num_embeddings' },
      );
    }
    config.engram = {
      layerIds,
      numEmbeddings,
      maxNgram: need('engram_max_ngram_size'),
      heads: need('engram_n_heads'),
      headDim: need('engram_head_dim'),
      vocabSize: need('engram_vocab_size'),
    };
  }
  return config;
}
