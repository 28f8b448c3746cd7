// The flags the launcher adds to a recipe's engine arguments on each node: the model, the
// parallel shape, this node's rank and the rendezvous, and where to serve. One rank per node.
//
// SGLang (python -m sglang.launch_server):
//   --model-path P --tp-size T [--pp-size PP] --nnodes N --node-rank r
//   --dist-init-addr HEAD:PORT --host 0.0.0.0 --port PORT
// vLLM, multi-node with the multiprocessing backend (no Ray):
//   vllm serve P ... --tensor-parallel-size T --pipeline-parallel-size PP
//   --distributed-executor-backend mp --nnodes N --node-rank r --master-addr HEAD
//   --master-port PORT [--headless on every node but the head] --host 0.0.0.0 --port PORT
// Rank 0 hosts the rendezvous and the HTTP server in both engines, so the head is rank 0.
// Both engines also advertise an address of their own to the other nodes (vLLM's cross-node
// message queue, SGLang's broadcast and scheduler sockets): VLLM_HOST_IP / SGLANG_HOST_IP, else
// the address of the default route. The launcher sets it per node to the node's own address.
import { isIPv6 } from 'node:net';
import { SparkError } from '../errors/errors.js';
import { parseArgs, type Engine, type ParsedArgs, type Recipe } from './index.js';

/** The variable each engine reads for the address it advertises to the other nodes. */
export const HOST_IP_VARIABLE: Record<Engine, string> = { vllm: 'VLLM_HOST_IP', sglang: 'SGLANG_HOST_IP' };

/** Environment keys the launcher sets per node; a value a recipe or cluster file gives is replaced. */
export function launcherEnvKeys(engine: Engine): string[] {
  return ['NODE_RANK', 'SPARK_WORLD_SIZE', HOST_IP_VARIABLE[engine]];
}

export interface NodeTopology {
  world: number;
  rank: number;
  /** Tensor- and pipeline-parallel sizes (tp × pp = world). */
  tp: number;
  pp: number;
  /** The head's address (its dist_addr, else its fabric address) and the rendezvous port. */
  rendezvousAddr: string;
  rendezvousPort: number;
  /** HTTP port the head serves on. */
  port: number;
}

export interface EngineArgs {
  /** Inserted right after the container command (vLLM's positional model for `vllm serve`). */
  leading: string[];
  /** Appended after the recipe's args; argparse keeps the last value, so these win. */
  appended: string[];
}

/** One launcher-set flag and the spellings a recipe might use for the same setting. */
interface LauncherFlag {
  names: string[];
  value: string | true;
}

/** True when the container command is `… serve` (vLLM's CLI takes the model positionally). */
export function isServeCommand(entrypoint: readonly string[] | undefined): boolean {
  return entrypoint !== undefined && entrypoint.at(-1) === 'serve';
}

/** Does the recipe name the model itself (then the launcher does not resolve or add one)? */
export function recipeModelArg(recipe: Recipe): string | undefined {
  const args = parseArgs(recipe.args);
  const flag =
    recipe.engine === 'sglang' ? (args.string('--model-path') ?? args.string('--model')) : args.string('--model');
  if (flag !== undefined) return flag;
  if (recipe.engine === 'vllm' && isServeCommand(recipe.entrypoint)) return args.positionals[0]?.value;
  return undefined;
}

function hostPort(addr: string, port: number): string {
  return isIPv6(addr) ? `[${addr}]:${port}` : `${addr}:${port}`;
}

function launcherFlags(
  engine: Engine,
  topo: NodeTopology,
  modelPath: string | undefined,
  serve: boolean,
): LauncherFlag[] {
  const n = (v: number) => String(v);
  const flags: LauncherFlag[] = [];
  if (engine === 'sglang') {
    if (modelPath !== undefined) flags.push({ names: ['--model-path', '--model'], value: modelPath });
    flags.push({ names: ['--tp-size', '--tp', '--tensor-parallel-size'], value: n(topo.tp) });
    if (topo.pp > 1) flags.push({ names: ['--pp-size', '--pp', '--pipeline-parallel-size'], value: n(topo.pp) });
    flags.push(
      { names: ['--nnodes'], value: n(topo.world) },
      { names: ['--node-rank'], value: n(topo.rank) },
      { names: ['--dist-init-addr'], value: hostPort(topo.rendezvousAddr, topo.rendezvousPort) },
    );
  } else {
    if (modelPath !== undefined && !serve) flags.push({ names: ['--model'], value: modelPath });
    flags.push(
      { names: ['--tensor-parallel-size', '-tp'], value: n(topo.tp) },
      { names: ['--pipeline-parallel-size', '-pp'], value: n(topo.pp) },
    );
    if (topo.world > 1) {
      flags.push(
        { names: ['--distributed-executor-backend'], value: 'mp' },
        { names: ['--nnodes'], value: n(topo.world) },
        { names: ['--node-rank'], value: n(topo.rank) },
        { names: ['--master-addr'], value: topo.rendezvousAddr },
        { names: ['--master-port'], value: n(topo.rendezvousPort) },
      );
      if (topo.rank !== 0) flags.push({ names: ['--headless'], value: true });
    }
  }
  flags.push({ names: ['--host'], value: '0.0.0.0' }, { names: ['--port'], value: n(topo.port) });
  return flags;
}

/**
 * The engine arguments the launcher adds on one node. `modelPath` is undefined when the recipe
 * names the model itself. A recipe flag that sets the same thing to the same value is not
 * repeated; a different value is reported in `conflicts` (the launcher's value comes last).
 */
export function engineArgs(
  recipe: Recipe,
  topo: NodeTopology,
  modelPath: string | undefined,
): EngineArgs & { conflicts: string[] } {
  if (
    recipe.engine === 'vllm' &&
    topo.world > 1 &&
    recipe.distributedBackend !== undefined &&
    recipe.distributedBackend !== 'mp'
  ) {
    throw new SparkError(
      'E_RECIPE',
      `${recipe.file}: distributed_backend = "${recipe.distributedBackend}" is not supported by spark launch, ` +
        'which starts vLLM on every node with the multiprocessing backend; set distributed_backend = "mp"',
      { path: recipe.file, key: 'distributed_backend' },
    );
  }
  const serve = recipe.engine === 'vllm' && isServeCommand(recipe.entrypoint);
  const parsed: ParsedArgs = parseArgs(recipe.args);
  const leading = serve && modelPath !== undefined ? [modelPath] : [];
  const appended: string[] = [];
  const conflicts: string[] = [];
  for (const flag of launcherFlags(recipe.engine, topo, modelPath, serve)) {
    const set = flag.names.map((name) => parsed.get(name)).filter((f) => f !== undefined);
    const same = set.length > 0 && set.every((f) => f.value === flag.value);
    if (same) continue;
    if (set.length > 0) {
      const written = set.map((f) => (f.value === true ? f.name : `${f.name} ${f.value}`)).join(', ');
      conflicts.push(
        `recipe args set ${written}; the launcher's ${flag.names[0]}${flag.value === true ? '' : ' ' + flag.value} comes last and wins`,
      );
    }
    appended.push(flag.names[0]!);
    if (flag.value !== true) appended.push(flag.value);
  }
  return { leading, appended, conflicts };
}
