// The one place a launch plan is made. `spark launch --dry-run` prints what prepareLaunch
// returns and `spark launch` executes it: the recipe, the cluster, the placement, the snapshot,
// the environment, the mounts, each node's argv, the container names and the health URL are
// chosen here, by one set of rules. The two differ only in where the facts about the nodes
// come from (NodeFacts, facts.ts): a dry run takes this machine's, a launch asks the nodes.
import type { Io } from '../terminal/io.js';
import { SparkError } from '../errors/errors.js';
import {
  effectiveEnv,
  envValues,
  openCluster,
  readEnvFile,
  readRecipe,
  type Cluster,
  type ClusterNode,
  type EnvFile,
  type FileDiagnostic,
  type Recipe,
} from '../recipes/index.js';
import { recipeModelArg } from '../recipes/engine-args.js';
import { buildPlan, type LaunchPlan } from './plan.js';
import { gidQuery } from './probe.js';
import { resolveSnapshot, type ModelSnapshot, type ReadText } from './snapshot.js';

/** What a plan is made from: the files and the flags that change what runs on the nodes. */
export interface PlanRequest {
  recipe: string;
  cluster: string;
  /** An env file whose values win over the recipe's [env]. */
  env?: string;
  /** Pin the model revision (commit, or a ref name under refs/). */
  revision?: string;
  healthUrl?: string;
  /** Container name prefix; names are `<prefix>-r<rank>`. */
  namePrefix?: string;
  /** Ask each node for B12X_ROCE_GID_INDEX when the env names B12X_ROCE_HCA (default true). */
  detectGid?: boolean;
  /** Containers without the GPU and RDMA flags: a smoke run on hosts without them. */
  cpuOnly?: boolean;
}

export interface LaunchInputs {
  recipe: Recipe;
  cluster: Cluster;
  envFile?: EnvFile;
  diagnostics: FileDiagnostic[];
}

export async function loadInputs(req: Pick<PlanRequest, 'recipe' | 'cluster' | 'env'>, io: Io): Promise<LaunchInputs> {
  const loaded = await openCluster(req.cluster, { env: io.env, cwd: io.cwd });
  const hfCache = loaded.cluster.hfCache;
  const { recipe, diagnostics } = await readRecipe(req.recipe, {
    env: io.env,
    ...(hfCache !== undefined ? { hfCache } : {}),
  });
  const inputs: LaunchInputs = {
    recipe,
    cluster: loaded.cluster,
    diagnostics: [...diagnostics, ...loaded.diagnostics],
  };
  if (req.env !== undefined) {
    inputs.envFile = await readEnvFile(req.env, io.env);
    inputs.diagnostics.push(...inputs.envFile.diagnostics);
  }
  return inputs;
}

const startsAtHome = (path: string) => path === '~' || path.startsWith('~/');

/** Whether a host path of the launch starts at a home directory (each node's own). */
export function usesHome(inputs: LaunchInputs): boolean {
  return [inputs.cluster.hfCache ?? '', ...inputs.recipe.extraMounts.map((m) => m.host)].some(startsAtHome);
}

/** What a plan is told about the nodes; facts.ts holds the dry run's and the launch's. */
export interface NodeFacts {
  /** The docker program on the nodes (argv[0] of every container command). */
  docker: string;
  /** This machine's home: the stand-in for a node's home that is not asked. */
  thisHome: string;
  /** How the model cache's ref files are read for a cluster with this head. */
  refReader(head: ClusterNode): ReadText;
  /** Each node's home directory, for `~` in host paths. */
  homes(nodes: readonly ClusterNode[]): Promise<Map<number, string>>;
  /** B12X_ROCE_GID_INDEX per node, or undefined when these facts cannot know it. */
  gids(nodes: readonly ClusterNode[], query: readonly string[]): Promise<Map<number, string> | undefined>;
  /** Runs once the snapshot is resolved (undefined: not resolved, or named by the recipe), before the nodes are asked. */
  check(snapshot: ModelSnapshot | undefined): Promise<void>;
  /** A snapshot that could not be resolved: the note under which the model id stands in, or undefined (refused). */
  standIn(failure: SparkError, model: string): string | undefined;
  /** Notes on what the plan assumed: `first` go before the plan's own, `last` after. */
  notes(inputs: LaunchInputs, about: { usesHome: boolean; asksGid: boolean }): { first: string[]; last: string[] };
}

/** The snapshot the containers are given, or why it could not be resolved. */
interface Served {
  snapshot?: ModelSnapshot;
  failure?: SparkError;
}

/**
 * The model's snapshot, by the rules of snapshot.ts (--revision, the recipe's --revision, its
 * SPARK_ENGRAM_DIR snapshot, the ref, the only snapshot), read where the head reads it: a `~`
 * in hf_cache is the head's home, as in the cache the containers mount. A failure to resolve
 * (or to ask the head) is returned, not thrown: the caller's checks run first.
 */
async function resolveServed(
  req: PlanRequest,
  inputs: LaunchInputs,
  env: Record<string, string>,
  facts: NodeFacts,
): Promise<Served> {
  const { recipe, cluster } = inputs;
  if (recipeModelArg(recipe) !== undefined) return {};
  const head = cluster.nodes[cluster.head]!;
  try {
    const home = startsAtHome(cluster.hfCache ?? '') ? (await facts.homes([head])).get(head.rank)! : facts.thisHome;
    const snapshot = await resolveSnapshot(recipe, cluster, {
      ...(req.revision !== undefined ? { revision: req.revision } : {}),
      ...(env.SPARK_ENGRAM_DIR !== undefined ? { engramDir: env.SPARK_ENGRAM_DIR } : {}),
      readText: facts.refReader(head),
      home,
    });
    return { snapshot };
  } catch (err) {
    if (err instanceof SparkError && (err.code === 'E_SNAPSHOT' || err.code === 'E_NODE_FAILED'))
      return { failure: err };
    throw err;
  }
}

/** The per-node facts the plan needs: homes (for `~`) and GID indices, when the plan uses them. */
async function nodeFacts(req: PlanRequest, inputs: LaunchInputs, env: Record<string, string>, facts: NodeFacts) {
  const nodes = inputs.cluster.nodes;
  const homes = usesHome(inputs) ? await facts.homes(nodes) : undefined;
  const query = req.detectGid === false ? undefined : gidQuery(env);
  const gids = query ? await facts.gids(nodes, query) : undefined;
  return { homes, gids, asksGid: query !== undefined };
}

export async function prepareLaunch(req: PlanRequest, io: Io, facts: NodeFacts): Promise<LaunchPlan> {
  const inputs = await loadInputs(req, io);
  const env = envValues(effectiveEnv(inputs.recipe, inputs.cluster, inputs.envFile));
  const served = await resolveServed(req, inputs, env, facts);
  await facts.check(served.snapshot);
  const standIn = served.failure ? facts.standIn(served.failure, inputs.recipe.model) : undefined;
  if (served.failure && standIn === undefined) throw served.failure;
  const { homes, gids, asksGid } = await nodeFacts(req, inputs, env, facts);
  const plan = buildPlan(
    {
      ...inputs,
      ...(served.snapshot ? { snapshot: served.snapshot } : {}),
      ...(standIn !== undefined ? { unresolvedModel: inputs.recipe.model } : {}),
    },
    {
      docker: facts.docker,
      home: (rank) => homes?.get(rank) ?? facts.thisHome,
      ...(gids ? { nodeEnv: (rank: number) => ({ B12X_ROCE_GID_INDEX: gids.get(rank)! }) } : {}),
      ...(req.namePrefix ? { namePrefix: req.namePrefix } : {}),
      ...(req.healthUrl ? { healthUrl: req.healthUrl } : {}),
      ...(req.cpuOnly ? { cpuOnly: true } : {}),
    },
  );
  const notes = facts.notes(inputs, { usesHome: homes !== undefined, asksGid });
  plan.notes.unshift(...notes.first);
  plan.notes.push(...(standIn !== undefined ? [standIn] : []), ...notes.last);
  return plan;
}
