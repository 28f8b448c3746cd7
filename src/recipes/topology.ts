// How a recipe maps onto a cluster: its parallel shape, the nodes that run it and where they
// meet. One place, so `spark preflight` and `spark launch` reach the same conclusion from the
// same files (preflight reports each problem as a finding; launch refuses to plan).
import { parseArgs, type ArgFlag } from './args.js';
import { nodeAddress, type Cluster, type ClusterNode } from './cluster.js';
import { recipeKey, type Recipe, type RecipeField } from './recipe.js';
import { defaultPort } from './model-family.js';

/** The port the head serves on: the recipe's `port`, else its `--port` argument, else the engine's default. */
export function servingPort(recipe: Recipe): number {
  return recipe.port ?? parseArgs(recipe.args).number('--port') ?? defaultPort(recipe.engine);
}

/** Every spelling of the parallel sizes the engines accept (the launcher appends the first). */
export const TP_FLAGS: readonly string[] = ['--tp-size', '--tp', '--tensor-parallel-size', '-tp'];
export const PP_FLAGS: readonly string[] = ['--pp-size', '--pp', '--pipeline-parallel-size', '-pp'];

/** A problem with the recipe or cluster that stops a launch; `key` is the key to fix, as written. */
export interface TopologyProblem {
  key: string;
  message: string;
  fix: string;
  /** The args flag concerned, for file:line. */
  flag?: ArgFlag;
}

/** A problem of the recipe's parallel shape: `field` is where the recipe writes `key`. */
export interface ShapeProblem extends TopologyProblem {
  field: RecipeField;
}

export interface ParallelShape {
  tp: number;
  pp: number;
  /** Where tp came from: the recipe key, the engine args, or required_nodes ÷ pp. */
  tpFrom: 'tensor_parallel_size' | 'args' | 'required_nodes';
  problems: ShapeProblem[];
}

function lastOf(args: ReturnType<typeof parseArgs>, names: readonly string[]): ArgFlag | undefined {
  return names
    .map((n) => args.get(n))
    .filter((f): f is ArgFlag => f !== undefined)
    .sort((a, b) => a.index - b.index)
    .at(-1);
}

function flagCount(flag: ArgFlag | undefined): number | undefined {
  if (!flag || typeof flag.value !== 'string' || !/^\d+$/.test(flag.value.trim())) return undefined;
  const n = Number(flag.value);
  return n >= 1 ? n : undefined;
}

/**
 * tp and pp: the recipe keys, else the sizes the recipe's args give the engine, else
 * pp = 1 and tp = required_nodes ÷ pp. One rank per node, so tp × pp must be required_nodes.
 */
export function parallelShape(recipe: Recipe): ParallelShape {
  const args = parseArgs(recipe.args);
  const problems: ShapeProblem[] = [];
  const pick = (
    field: 'tensorParallelSize' | 'pipelineParallelSize',
    value: number | undefined,
    names: readonly string[],
  ) => {
    const key = recipeKey(field);
    const flag = lastOf(args, names);
    const fromArgs = flagCount(flag);
    if (flag && fromArgs === undefined) {
      problems.push({
        key,
        field,
        flag,
        message: `args sets ${flag.name} ${String(flag.value)}, which is not a whole number >= 1`,
        fix: `set ${key} instead`,
      });
    }
    if (value !== undefined && fromArgs !== undefined && fromArgs !== value) {
      problems.push({
        key,
        field,
        flag: flag!,
        message: `${key} = ${value} but args sets ${flag!.name} ${fromArgs}; the launcher appends ${names[0]} ${value}, so the engine would not run what args says`,
        fix: `remove ${flag!.name} from args and keep ${key}`,
      });
    }
    return value ?? fromArgs;
  };
  const world = recipe.requiredNodes;
  // pipeline_parallel_size defaults to 1, so only a value the file writes competes with args.
  const ppKey = recipe.locate('pipelineParallelSize') !== undefined ? recipe.pipelineParallelSize : undefined;
  const pp = pick('pipelineParallelSize', ppKey, PP_FLAGS) ?? 1;
  const tpGiven = pick('tensorParallelSize', recipe.tensorParallelSize, TP_FLAGS);
  const tpFrom: ParallelShape['tpFrom'] =
    recipe.tensorParallelSize !== undefined
      ? 'tensor_parallel_size'
      : tpGiven !== undefined
        ? 'args'
        : 'required_nodes';
  const tp = tpGiven ?? Math.max(1, Math.floor(world / pp));
  if (tp * pp !== world) {
    const tpWhere = tpFrom === 'args' ? `tp ${tp} (from args)` : `tensor_parallel_size ${tp}`;
    const field = tpFrom === 'tensor_parallel_size' ? 'tensorParallelSize' : 'requiredNodes';
    problems.push({
      key: recipeKey(field),
      field,
      message: `${tpWhere} × pipeline_parallel_size ${pp} = ${tp * pp} ranks, but required_nodes = ${world} (one rank per node)`,
      fix: 'make tensor_parallel_size × pipeline_parallel_size equal required_nodes',
    });
  }
  return { tp, pp, tpFrom, problems };
}

export interface Placement {
  /** The nodes that run the recipe: the cluster's first required_nodes, in rank order. */
  nodes: ClusterNode[];
  /** Nodes of the cluster left idle (a cluster larger than the recipe). */
  idle: ClusterNode[];
  /** The head: rank 0 (SGLang and vLLM host the rendezvous and the HTTP server there). */
  head: ClusterNode;
  /**
   * The rendezvous every node dials: the head's address (undefined while a sparkrun cluster's
   * nodes were not asked for theirs) and the cluster's dist_port.
   */
  rendezvous: { addr: string | undefined; port: number };
  problems: TopologyProblem[];
}

/** Which nodes run the recipe, and where they meet. */
export function placement(recipe: Recipe, cluster: Cluster): Placement {
  const world = recipe.requiredNodes;
  const problems: TopologyProblem[] = [];
  if (cluster.nodes.length < world) {
    problems.push({
      key: 'required_nodes',
      message: `the recipe needs ${world} nodes and cluster ${cluster.name} (${cluster.file}) has ${cluster.nodes.length}`,
      fix: 'use a cluster file with enough nodes, or a recipe for fewer nodes',
    });
  }
  if (cluster.head !== 0) {
    problems.push({
      key: 'head',
      message: `${cluster.file}: head = ${cluster.head}, but SGLang and vLLM host the rendezvous and the HTTP server on rank 0`,
      fix: 'list the head node first in [[nodes]] and set head = 0',
    });
  }
  const nodes = cluster.nodes.slice(0, world);
  const head = cluster.nodes[0]!;
  return {
    nodes,
    idle: cluster.nodes.slice(world),
    head,
    rendezvous: { addr: nodeAddress(head), port: cluster.distPort },
    problems,
  };
}
