// The model a launch serves, resolved to its snapshot directory in the Hugging Face cache:
// hub/models--org--name/snapshots/<rev>. The revision is pinned (--revision on the command
// line, else --revision in the recipe's args, else the snapshot the recipe's SPARK_ENGRAM_DIR
// names) or read from refs/main, as huggingface_hub does.
import { SparkError } from '../errors/errors.js';
import {
  COMMIT,
  hfModelDir,
  hfSnapshotPath,
  readLocalText,
  resolveRevision,
  revisionInModelPath,
  type ReadText,
} from '../engram/hf-cache.js';
import { HF_CACHE_CONTAINER_PATH, expandHome, parseArgs, type Cluster, type Recipe } from '../recipes/index.js';

export { readLocalText, type ReadText };

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

export async function resolveSnapshot(
  recipe: Recipe,
  cluster: Cluster,
  options: ResolveOptions,
): Promise<ModelSnapshot> {
  const hfCache = expandHome(requireHfCache(cluster), options.home);
  const hostModel = hfModelDir(hfCache, recipe.model);
  const readText = options.readText ?? readLocalText;
  const snapshot = (revision: string, from: ModelSnapshot['from'], ref?: string): ModelSnapshot => ({
    model: recipe.model,
    revision,
    from,
    ...(ref !== undefined ? { ref } : {}),
    containerPath: hfSnapshotPath(hfModelDir(HF_CACHE_CONTAINER_PATH, recipe.model), revision),
    hostPath: hfSnapshotPath(hostModel, revision),
  });

  const pinned = options.revision ?? recipeRevision(recipe);
  // A recipe that reads Engram rows from one snapshot of its model was written against that
  // snapshot: the engine loads the same one.
  const engramRev =
    pinned === undefined && options.engramDir ? revisionInPath(options.engramDir, recipe.model) : undefined;
  if (engramRev !== undefined && COMMIT.test(engramRev)) return snapshot(engramRev, 'SPARK_ENGRAM_DIR');
  const choice = await resolveRevision(hostModel, {
    ...(pinned !== undefined ? { pinned } : {}),
    readText,
    model: recipe.model,
  });
  const from =
    choice.from === 'pinned' ? (options.revision !== undefined ? '--revision' : 'recipe --revision') : choice.from;
  return snapshot(choice.revision, from, choice.ref);
}

/**
 * The revision named by a container path inside this model's cache directory
 * (`…/models--org--name/snapshots/<rev>/…`), e.g. the recipe's SPARK_ENGRAM_DIR.
 */
export function revisionInPath(path: string, model: string): string | undefined {
  return revisionInModelPath(path, hfModelDir(HF_CACHE_CONTAINER_PATH, model));
}
