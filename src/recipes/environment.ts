// The environment a container gets, with where each value came from. Precedence (later wins):
// the cluster's [nccl], the recipe's [env], an env file given on the command line (one
// deployment's overrides of a shared recipe), then the node's own [nodes.env] in the cluster
// file (the most specific: values that differ per node, like interface names).
import type { Cluster } from './cluster.js';
import type { EnvFile } from './env-file.js';
import type { Recipe } from './recipe.js';

export type EnvSourceKind = 'cluster' | 'recipe' | 'env-file' | 'node';

export interface EnvValue {
  value: string;
  source: EnvSourceKind;
  /** The file that set it, as the user named it. */
  file: string;
  line?: number;
  /** Values this one replaced, earliest first. */
  overrides: { value: string; source: EnvSourceKind; file: string; line?: number }[];
}

export type EffectiveEnv = Map<string, EnvValue>;

/** The environment of node `rank` (without a rank: the values every node shares). */
export function effectiveEnv(recipe: Recipe, cluster?: Cluster, envFile?: EnvFile, rank?: number): EffectiveEnv {
  const out: EffectiveEnv = new Map();
  const set = (key: string, value: string, source: EnvSourceKind, file: string, line: number | undefined) => {
    const prev = out.get(key);
    const next: EnvValue = { value, source, file, overrides: [] };
    if (line !== undefined) next.line = line;
    if (prev) {
      const { overrides, ...rest } = prev;
      next.overrides = [...overrides, rest];
    }
    out.set(key, next);
  };
  if (cluster) {
    for (const [k, v] of Object.entries(cluster.nccl)) {
      set(k, v, 'cluster', cluster.file, cluster.locate('nccl', k));
    }
  }
  for (const [k, v] of Object.entries(recipe.env)) {
    set(k, v, 'recipe', recipe.file, recipe.locate('env', k));
  }
  if (envFile) {
    for (const [k, e] of envFile.vars) set(k, e.value, 'env-file', envFile.file, e.line);
  }
  const node = cluster && rank !== undefined ? cluster.nodes[rank] : undefined;
  if (node) {
    for (const [k, v] of Object.entries(node.env)) {
      set(k, v, 'node', cluster!.file, node.locate('env', k));
    }
  }
  return out;
}

/** The values alone, for a container's environment. */
export function envValues(env: EffectiveEnv): Record<string, string> {
  return Object.fromEntries([...env].map(([k, v]) => [k, v.value]));
}
