// The model a launch serves, resolved to its snapshot directory in the Hugging Face cache:
// hub/models--org--name/snapshots/<rev>. The revision is pinned (--revision on the command
// line, else --revision in the recipe's args, else the snapshot the recipe's SPARK_ENGRAM_DIR
// names) or read from refs/main, as huggingface_hub does.
import { readdir, readFile, stat } from 'node:fs/promises';
import { posix } from 'node:path';
import { SparkError } from '../errors.js';
import { HF_CACHE_CONTAINER_PATH, expandHome, hfModelDir, parseArgs, type Cluster, type Recipe } from '../recipes/index.js';

const COMMIT = /^[0-9a-f]{40}$/;

export interface ModelSnapshot {
  /** Hugging Face id, e.g. `deepseek-ai/DeepSeek-V4.1-Flash`. */
  model: string;
  /** Commit hash of the snapshot. */
  revision: string;
  /** Where the revision came from. */
  from: '--revision' | 'recipe --revision' | 'SPARK_ENGRAM_DIR' | 'refs' | 'only snapshot';
  /** The ref that was read (`refs/main`), when one was. */
  ref?: string;
  /** The snapshot as the containers see it (under /root/.cache/huggingface). */
  containerPath: string;
  /** The snapshot on the nodes (under the cluster's hf_cache). */
  hostPath: string;
}

/** Reads a small text file on the cluster (locally, or on a node); undefined when absent. */
export type ReadText = (path: string) => Promise<string | undefined>;

export const readLocalText: ReadText = async (path) => {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
};

export interface ResolveOptions {
  /** --revision on the command line: a commit hash, or a branch/tag name under refs/. */
  revision?: string;
  /** How refs are read; default the local filesystem. */
  readText?: ReadText;
  /** Home directory for a `~` in hf_cache. */
  home: string;
  /** The containers' SPARK_ENGRAM_DIR: a snapshot of this model there pins its revision. */
  engramDir?: string;
}

/** The revision the recipe pins through its own `--revision` argument, if any. */
export function recipeRevision(recipe: Recipe): string | undefined {
  return parseArgs(recipe.args).string('--revision');
}

/** The cluster's hf_cache: the launcher mounts it and finds the model there. */
export function requireHfCache(cluster: Cluster): string {
  if (cluster.hfCache === undefined) {
    throw new SparkError(
      'E_CLUSTER',
      `${cluster.file}: hf_cache is not set, so the launcher cannot mount the model; ` +
        'add hf_cache = "/path/to/huggingface" (the cache that holds hub/models--…)',
      { path: cluster.file, key: 'hf_cache' },
    );
  }
  return cluster.hfCache;
}

export async function resolveSnapshot(recipe: Recipe, cluster: Cluster, options: ResolveOptions): Promise<ModelSnapshot> {
  const hfCache = expandHome(requireHfCache(cluster), options.home);
  const hostModel = hfModelDir(hfCache, recipe.model);
  const containerModel = hfModelDir(HF_CACHE_CONTAINER_PATH, recipe.model);
  const readText = options.readText ?? readLocalText;
  const done = (revision: string, from: ModelSnapshot['from'], ref?: string): ModelSnapshot => {
    const snap: ModelSnapshot = {
      model: recipe.model,
      revision,
      from,
      containerPath: posix.join(containerModel, 'snapshots', revision),
      hostPath: posix.join(hostModel, 'snapshots', revision),
    };
    if (ref !== undefined) snap.ref = ref;
    return snap;
  };

  const pinned = options.revision ?? recipeRevision(recipe);
  const pinnedFrom = options.revision !== undefined ? '--revision' : 'recipe --revision';
  if (pinned !== undefined && COMMIT.test(pinned)) return done(pinned, pinnedFrom);
  // A recipe that reads Engram rows from one snapshot of its model was written against that
  // snapshot: the engine loads the same one.
  const engramRev = pinned === undefined && options.engramDir ? revisionInPath(options.engramDir, recipe.model) : undefined;
  if (engramRev !== undefined && COMMIT.test(engramRev)) return done(engramRev, 'SPARK_ENGRAM_DIR');
  const refName = pinned ?? 'main';
  if (refName === '' || refName.split('/').some((p) => p === '' || p === '.' || p === '..')) {
    throw new SparkError('E_USAGE', `revision "${refName}" is neither a commit hash nor a ref name; pass a 40-hex commit`);
  }
  const refPath = posix.join(hostModel, 'refs', refName);
  const text = await readText(refPath);
  if (text !== undefined) {
    const rev = text.trim();
    if (!COMMIT.test(rev)) {
      throw new SparkError(
        'E_SNAPSHOT',
        `${refPath} holds "${rev.slice(0, 60)}", not a commit hash; download the model again, or pass --revision <commit>`,
        { path: refPath },
      );
    }
    return done(rev, 'refs', `refs/${refName}`);
  }
  if (pinned === undefined) {
    // No refs/main (a copied cache): one snapshot present is unambiguous, as in preflight.
    const only = await onlySnapshot(posix.join(hostModel, 'snapshots'));
    if (only !== undefined) return done(only, 'only snapshot');
  }
  throw new SparkError(
    'E_SNAPSHOT',
    `cannot resolve ${recipe.model}@${refName}: ${refPath} is not readable; ` +
      `download the model into ${cluster.hfCache}, or pass --revision <commit>`,
    { path: refPath },
  );
}

async function onlySnapshot(dir: string): Promise<string | undefined> {
  try {
    const names = await readdir(dir);
    const revs: string[] = [];
    for (const n of names) if (COMMIT.test(n) && (await stat(posix.join(dir, n))).isDirectory()) revs.push(n);
    return revs.length === 1 ? revs[0] : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The revision named by a container path inside this model's cache directory
 * (`…/models--org--name/snapshots/<rev>/…`), e.g. the recipe's SPARK_ENGRAM_DIR.
 */
export function revisionInPath(path: string, model: string): string | undefined {
  const base = hfModelDir(HF_CACHE_CONTAINER_PATH, model) + '/snapshots/';
  if (!path.startsWith(base)) return undefined;
  return path.slice(base.length).split('/')[0] || undefined;
}
