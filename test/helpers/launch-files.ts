// Cluster files and Hugging Face caches written at test time.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './tmp.js';

export interface ClusterSpec {
  name: string;
  hosts: string[];
  fabric: string[];
  hfCache: string;
  distPort?: number;
  head?: number;
  nccl?: Record<string, string>;
}

export function writeCluster(spec: ClusterSpec, dir = tempDir('spark-cluster-')): string {
  const lines = [`name = ${JSON.stringify(spec.name)}`, `hf_cache = ${JSON.stringify(spec.hfCache)}`];
  if (spec.head !== undefined) lines.push(`head = ${spec.head}`);
  if (spec.distPort !== undefined) lines.push(`dist_port = ${spec.distPort}`);
  spec.hosts.forEach((h, i) =>
    lines.push('', '[[nodes]]', `host = ${JSON.stringify(h)}`, `fabric_addr = ${JSON.stringify(spec.fabric[i])}`),
  );
  if (spec.nccl) {
    lines.push('', '[nccl]');
    for (const [k, v] of Object.entries(spec.nccl)) lines.push(`${k} = ${JSON.stringify(v)}`);
  }
  const file = join(dir, `${spec.name}.toml`);
  writeFileSync(file, lines.join('\n') + '\n');
  return file;
}

/** A cache holding `model` with refs/main -> rev and an (empty) snapshot directory. */
export function hfCacheWith(model: string, rev: string, refs: Record<string, string> = { main: rev }): string {
  const cache = tempDir('spark-hf-');
  const base = join(cache, 'hub', `models--${model.split('/').join('--')}`);
  mkdirSync(join(base, 'snapshots', rev), { recursive: true });
  mkdirSync(join(base, 'refs'), { recursive: true });
  for (const [name, value] of Object.entries(refs)) writeFileSync(join(base, 'refs', name), value + '\n');
  return cache;
}

/** Writes a recipe file into a temp dir and returns its path. */
export function writeRecipe(text: string): string {
  const file = join(tempDir('spark-recipe-'), 'recipe.toml');
  writeFileSync(file, text);
  return file;
}

export const AIDEN16 = 'recipes/dsv41-flash-4x-sglang-aiden16/recipe.toml';
export const PACKED = 'recipes/dsv41-flash-4x-sglang-packed/recipe.toml';
export const EUGR = 'recipes/deepseek-v4-flash-eugr-agent/recipe.toml';
export const REV = 'dba1be0a40aa45a94ad051997016db3960a90277';
