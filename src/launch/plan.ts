// The launch plan: from a recipe and a cluster file, each node's complete `docker run` argument
// vector (what --dry-run prints and what the launch executes, byte for byte) and environment.
import { SparkError, usageError } from '../errors/errors.js';
import {
  argvForExec,
  effectiveEnv,
  envValues,
  addressed,
  nodeAddress,
  parallelShape,
  placement,
  servingPort,
  type AddressedNode,
  type Cluster,
  type EffectiveEnv,
  type Engine,
  type EnvFile,
  type EnvSourceKind,
  type Recipe,
  type ShapeProblem,
  type TopologyProblem,
  containerSettings,
  GPU_FLAGS,
  programFlags,
  RDMA_FLAGS,
  settingsFlags,
} from '../recipes/index.js';
import {
  HOST_IP_VARIABLE,
  engineArgs,
  launcherEnvKeys,
  recipeModelArg,
  type NodeTopology,
} from '../recipes/engine-args.js';
import { requireHfCache, revisionInPath, type ModelSnapshot } from './snapshot.js';

export interface NodePlan {
  rank: number;
  /** ssh target. */
  host: string;
  fabricAddr: string;
  /** The address the other nodes reach this one at (dist_addr, else fabric_addr). */
  distAddr: string;
  head: boolean;
  /** Container name on the node. */
  container: string;
  /** The complete container command: argv[0] is the docker program on the node. */
  argv: string[];
  /** The container's environment (also in argv as -e KEY=VALUE, in this order). */
  env: Record<string, string>;
}

export interface LaunchPlan {
  recipe: string;
  recipeName?: string;
  cluster: string;
  clusterName: string;
  engine: Engine;
  image: string;
  world: number;
  /** Rank of the head (rendezvous and HTTP). */
  head: number;
  /** `addr:port` every node dials: the head's dist_addr (else fabric_addr) and dist_port. */
  rendezvous: string;
  /** HTTP port on the head. */
  port: number;
  model: { id: string; path: string; revision?: string; from?: string; hostPath?: string };
  /** URL polled until the server is up. */
  healthUrl: string;
  nodes: NodePlan[];
  /** Things a person should know before launching (overrides, replaced flags, mismatches). */
  notes: string[];
}

export interface PlanOptions {
  /** The docker program on the nodes (default `docker`). */
  docker?: string;
  /** Container name prefix (default `spark-<cluster name>`); the name is `<prefix>-r<rank>`. */
  namePrefix?: string;
  /** Home directory on each node, for `~` in host paths. */
  home: (rank: number) => string;
  /** Per-node values found on the node at launch (e.g. B12X_ROCE_GID_INDEX). */
  nodeEnv?: (rank: number) => Record<string, string>;
  /** Health URL override (default http://<head host>:<port>/health). */
  healthUrl?: string;
  /** Leave out the GPU and RDMA flags (hosts without them; see containerFlags). */
  cpuOnly?: boolean;
}

export interface PlanInput {
  recipe: Recipe;
  cluster: Cluster;
  envFile?: EnvFile;
  /** The resolved model; undefined when the recipe names its model path itself. */
  snapshot?: ModelSnapshot;
  /** A dry run that could not read the revision here: the model id stands in for the snapshot. */
  unresolvedModel?: string;
}

/** docker's container name grammar. */
const CONTAINER_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

/**
 * A `--name` prefix as given, checked against docker's container name grammar: it is one
 * argument of `docker run`/`docker stop`, and a value like `--time=0 x` must never reach docker
 * as flags.
 */
export function checkedNamePrefix(name: string): string {
  if (!CONTAINER_NAME.test(name)) {
    throw usageError(
      `--name must be a docker container name ([A-Za-z0-9][A-Za-z0-9_.-]*), got ${JSON.stringify(name)}`,
    );
  }
  return name;
}

/** The container of a launch on the node of this rank (run, logs, inspect and --stop use it). */
export function containerName(prefix: string, rank: number): string {
  return `${prefix}-r${rank}`;
}

/** A docker container name from free text: [A-Za-z0-9][A-Za-z0-9_.-]*. */
export function containerPrefix(clusterName: string): string {
  const slug = clusterName.replace(/[^A-Za-z0-9_.-]+/g, '-').replace(/^[^A-Za-z0-9]+/, '');
  return slug === '' ? 'spark' : `spark-${slug}`;
}

/** `user@host` → `host`; IPv6 literals in brackets, for a URL. */
export function urlHost(sshTarget: string): string {
  const host = sshTarget.includes('@') ? sshTarget.slice(sshTarget.lastIndexOf('@') + 1) : sshTarget;
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

/** The first problem of a shape or placement as the SparkError a launch refuses with (exit 2). */
function refuse(problem: TopologyProblem | ShapeProblem, recipe: Recipe, cluster: Cluster): SparkError {
  const inCluster = problem.key === 'head' || problem.key === 'required_nodes';
  const file = inCluster ? cluster.file : recipe.file;
  const line = problem.flag
    ? recipe.locate('args', problem.flag.index)
    : 'field' in problem
      ? recipe.locate(problem.field)
      : undefined;
  const where = inCluster ? '' : `${line === undefined ? file : `${file}:${line}`}: `;
  return new SparkError(inCluster ? 'E_CLUSTER' : 'E_RECIPE', `${where}${problem.message}; ${problem.fix}`, {
    path: file,
    key: problem.key,
  });
}

/** "NCCL_SOCKET_IFNAME: recipe [env] "x" wins over cluster [nccl] "y"" for each value a later source replaced. */
function overrideNotes(env: EffectiveEnv, who = ''): string[] {
  const name = (source: EnvSourceKind, file: string) =>
    source === 'recipe'
      ? 'recipe [env]'
      : source === 'cluster'
        ? 'cluster [nccl]'
        : source === 'node'
          ? `${who}[nodes.env]`
          : file;
  const notes: string[] = [];
  for (const [key, v] of env) {
    const replaced = v.overrides.filter((o) => o.value !== v.value);
    if (replaced.length === 0 || v.source === 'cluster') continue;
    const last = replaced.at(-1)!;
    notes.push(
      `${key}: ${name(v.source, v.file)} "${v.value}" wins over ${name(last.source, last.file)} "${last.value}"`,
    );
  }
  return notes;
}

/** What every node's plan shares: the shape, the placement, the model path, the names. */
interface Common {
  input: PlanInput;
  options: PlanOptions;
  world: number;
  tp: number;
  pp: number;
  port: number;
  place: ReturnType<typeof placement>;
  /** The nodes that run the recipe, each with its fabric address. */
  nodes: AddressedNode[];
  /** The head's address every node dials. */
  rendezvousAddr: string;
  hfCache: string;
  /** The model argument the launcher passes, undefined when the recipe names its own. */
  modelPath: string | undefined;
  docker: string;
  prefix: string;
}

function common(input: PlanInput, options: PlanOptions): Common {
  const { recipe, cluster } = input;
  const shape = parallelShape(recipe);
  const place = placement(recipe, cluster);
  const problem = place.problems[0] ?? shape.problems[0];
  if (problem) throw refuse(problem, recipe, cluster);
  const hfCache = requireHfCache(cluster);
  const ownModel = recipeModelArg(recipe);
  if (ownModel === undefined && input.snapshot === undefined && input.unresolvedModel === undefined) {
    throw new SparkError('E_INTERNAL', 'buildPlan needs a resolved snapshot when the recipe names no model path');
  }
  return {
    input,
    options,
    world: recipe.requiredNodes,
    tp: shape.tp,
    pp: shape.pp,
    port: servingPort(recipe),
    place,
    nodes: place.nodes.map((n) => addressed(n, cluster)),
    rendezvousAddr: nodeAddress(addressed(place.head, cluster)),
    hfCache,
    modelPath: ownModel === undefined ? (input.snapshot?.containerPath ?? input.unresolvedModel!) : undefined,
    docker: options.docker ?? 'docker',
    prefix: options.namePrefix ?? containerPrefix(cluster.name),
  };
}

/** The notes that hold for the whole plan (placement, model, env precedence, --cpu-only). */
function planNotes(c: Common): string[] {
  const { recipe, cluster, envFile } = c.input;
  const { place } = c;
  const notes: string[] = [];
  if (place.idle.length > 0) {
    notes.push(
      `the recipe needs ${c.world} node(s): it runs on ${place.nodes.map((n) => n.host).join(', ')}; ` +
        `${place.idle.map((n) => `${n.host} (rank ${n.rank})`).join(', ')} of ${cluster.name} stay${place.idle.length === 1 ? 's' : ''} idle`,
    );
  }
  const ownModel = recipeModelArg(recipe);
  if (ownModel !== undefined)
    notes.push(`the recipe names its model path itself (${ownModel}); the launcher does not add one`);
  const env = effectiveEnv(recipe, cluster, envFile);
  notes.push(...overrideNotes(env));
  for (const key of launcherEnvKeys(recipe.engine)) {
    const set = [env.get(key), ...place.nodes.map((n) => effectiveEnv(recipe, cluster, envFile, n.rank).get(key))].find(
      Boolean,
    );
    if (set) notes.push(`${key} is set per node by the launcher; the value in ${set.file} is replaced`);
  }
  const engramDir = env.get('SPARK_ENGRAM_DIR')?.value;
  const engramRev = engramDir === undefined ? undefined : revisionInPath(engramDir, recipe.model);
  const snapshot = c.input.snapshot;
  if (engramRev !== undefined && snapshot !== undefined && engramRev !== snapshot.revision) {
    notes.push(
      `SPARK_ENGRAM_DIR reads Engram rows from revision ${engramRev}, but the engine loads ${snapshot.revision}; ` +
        'point both at the same snapshot',
    );
  }
  if (c.options.cpuOnly) {
    notes.push(
      `--cpu-only: the containers get no GPU and no RDMA device (${[...GPU_FLAGS, ...RDMA_FLAGS].join(' ')} left out); ` +
        "a smoke run of the recipe's mounts, environment and entrypoint, not of the engine",
    );
  }
  return notes;
}

/** One node's plan, and the notes only it gives (its [nodes.env] overrides; the head's flag conflicts). */
function nodePlan(c: Common, node: AddressedNode): { plan: NodePlan; notes: string[] } {
  const { recipe, cluster, envFile } = c.input;
  const head = node.rank === c.place.head.rank;
  const topo: NodeTopology = {
    world: c.world,
    rank: node.rank,
    tp: c.tp,
    pp: c.pp,
    rendezvousAddr: c.rendezvousAddr,
    rendezvousPort: c.place.rendezvous.port,
    port: c.port,
  };
  const engine = engineArgs(recipe, topo, c.modelPath);
  const ownEnv = effectiveEnv(recipe, cluster, envFile, node.rank);
  const notes = [
    ...(head ? engine.conflicts : []),
    ...overrideNotes(ownEnv, `node ${node.rank} `).filter((n) => n.includes('[nodes.env]')),
  ];
  const env: Record<string, string> = {
    ...envValues(ownEnv),
    ...(c.options.nodeEnv?.(node.rank) ?? {}),
    NODE_RANK: String(node.rank),
    SPARK_WORLD_SIZE: String(c.world),
    // The address the other nodes reach this one at, advertised by the engine.
    [HOST_IP_VARIABLE[recipe.engine]]: nodeAddress(node),
  };
  const container = containerName(c.prefix, node.rank);
  // The settings preflight judges (recipes/container.ts), written as docker flags.
  const settings = containerSettings(recipe, {
    hf: { hfCache: c.hfCache, file: cluster.file },
    home: c.options.home(node.rank),
    cpuOnly: c.options.cpuOnly,
  });
  const program = programFlags(settings);
  const argv = [
    c.docker,
    'run',
    '-d',
    '--name',
    container,
    ...settingsFlags(settings),
    ...Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]),
    ...program.entrypoint,
    recipe.dockerImage,
    ...program.afterImage,
    ...engine.leading,
    ...argvForExec(recipe.args),
    ...engine.appended,
  ];
  const plan = {
    rank: node.rank,
    host: node.host,
    fabricAddr: node.fabricAddr,
    distAddr: nodeAddress(node),
    head,
    container,
    argv,
    env,
  };
  return { plan, notes };
}

function modelOf(c: Common): LaunchPlan['model'] {
  const { recipe } = c.input;
  const snapshot = c.input.snapshot;
  const model: LaunchPlan['model'] = { id: recipe.model, path: c.modelPath ?? recipeModelArg(recipe)! };
  if (snapshot && c.modelPath !== undefined) {
    model.revision = snapshot.revision;
    model.from = snapshot.ref ?? snapshot.from;
    model.hostPath = snapshot.hostPath;
  }
  return model;
}

export function buildPlan(input: PlanInput, options: PlanOptions): LaunchPlan {
  const c = common(input, options);
  const { recipe, cluster } = input;
  const notes = planNotes(c);
  const nodes = c.nodes.map((node) => {
    const one = nodePlan(c, node);
    notes.push(...one.notes);
    return one.plan;
  });
  const plan: LaunchPlan = {
    recipe: recipe.file,
    cluster: cluster.file,
    clusterName: cluster.name,
    engine: recipe.engine,
    image: recipe.dockerImage,
    world: c.world,
    head: c.place.head.rank,
    rendezvous: `${c.rendezvousAddr}:${c.place.rendezvous.port}`,
    port: c.port,
    model: modelOf(c),
    healthUrl: options.healthUrl ?? `http://${urlHost(c.place.head.host)}:${c.port}/health`,
    nodes,
    notes,
  };
  if (recipe.name !== undefined) plan.recipeName = recipe.name;
  return plan;
}
