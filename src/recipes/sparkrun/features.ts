// sparkrun recipe keys and runtimes, and what spark makes of each: read, ignored because it is
// informational, or reported because spark does not do what it asks (one finding each: a
// recipe never loses a step without a word).
import type { Engine } from '../recipe.js';

/** Keys spark reads into the typed recipe (src/recipes/sparkrun/recipe.ts). */
export const READ_KEYS = [
  'recipe_version',
  'model',
  'model_revision',
  'runtime',
  'container',
  'min_nodes',
  'max_nodes',
  'defaults',
  'env',
  'command',
  'executor_config',
  'runtime_cache',
] as const;

/** Keys that describe the recipe and change nothing a container runs. */
export const INFORMATIONAL_KEYS = ['metadata', 'benchmark', 'min_sparkrun_version', 'runtime_version'] as const;

export interface NotRun {
  severity: 'error' | 'warn';
  /** What sparkrun does with the key, and what running without it means. */
  means: string;
  fix: string;
}

const NO_BUILD: NotRun = {
  severity: 'warn',
  means:
    'sparkrun builds the image on the nodes when it is missing; spark does not build images, so the image must already be on every node (preflight checks it)',
  fix: 'build and push (or load) the image on every node first, then drop the key',
};

/** Top-level keys asking for something spark does not do (`mods` has a finding per mod: mods.ts). */
export const NOT_RUN: Record<string, NotRun> = {
  pre_exec: {
    severity: 'error',
    means:
      'sparkrun runs these commands in every container before the serve command; spark runs none, so whatever they set up is missing',
    fix: 'move the steps into the image or into an entrypoint script mounted with executor_config.volumes, and remove pre_exec',
  },
  post_exec: {
    severity: 'warn',
    means: 'sparkrun runs these commands in the containers once the server is up; spark does not',
    fix: 'run them yourself after spark launch reports the head healthy, and remove post_exec',
  },
  post_commands: {
    severity: 'warn',
    means: 'sparkrun runs these commands on the launching machine once the server is up; spark does not',
    fix: 'run them yourself after spark launch reports the head healthy, and remove post_commands',
  },
  stop_after_post: {
    severity: 'warn',
    means: 'sparkrun stops the containers after the post commands; spark keeps them running until spark launch --stop',
    fix: 'stop them with spark launch --stop, and remove stop_after_post',
  },
  build_args: NO_BUILD,
  builder: NO_BUILD,
  builder_config: NO_BUILD,
  containers: {
    severity: 'error',
    means: 'sparkrun runs a different image on each named machine; spark runs the one image of container on every node',
    fix: 'use one image for every node in container, and remove containers',
  },
  distribution_config: {
    severity: 'warn',
    means:
      "sparkrun copies the model to the nodes; spark does not distribute models: the snapshot must already be in every node's Hugging Face cache (preflight checks it)",
    fix: 'download or copy the model into the cache on every node, and remove distribution_config',
  },
  mode: {
    severity: 'warn',
    means:
      'spark takes the node count from tensor_parallel × pipeline_parallel (one rank per node), not from a deployment mode',
    fix: 'set defaults.tensor_parallel, and remove mode',
  },
  solo_only: {
    severity: 'warn',
    means: 'spark takes the node count from tensor_parallel × pipeline_parallel (one rank per node)',
    fix: 'set defaults.tensor_parallel: 1, and remove solo_only',
  },
  cluster_only: {
    severity: 'warn',
    means: 'spark takes the node count from tensor_parallel × pipeline_parallel (one rank per node)',
    fix: 'set defaults.tensor_parallel to the node count, and remove cluster_only',
  },
};

/** executor_config keys spark reads; the others are reported with NOT_RUN_EXECUTOR. */
export const EXECUTOR_KEYS = ['shm_size', 'entrypoint', 'volumes'] as const;

export const NOT_RUN_EXECUTOR: Record<string, NotRun> = {
  privileged: {
    severity: 'warn',
    means:
      'spark never runs privileged containers; it passes the RoCE devices (--device /dev/infiniband, IPC_LOCK, unlimited memlock) instead',
    fix: 'remove privileged; if the engine needs more, say what in an issue',
  },
  ipc: {
    severity: 'warn',
    means: 'spark shares the host IPC namespace (--ipc host) unless shm_size asks for a private /dev/shm of that size',
    fix: 'remove ipc (or set shm_size for a private /dev/shm)',
  },
  restart_policy: {
    severity: 'warn',
    means: 'spark never restarts a container: a rank that ends stops the launch, and the others are stopped',
    fix: 'remove restart_policy',
  },
};

/** sparkrun runtimes and what spark makes of them. */
export type RuntimeChoice =
  | { kind: 'engine'; engine: Engine }
  | { kind: 'engine-not-as-written'; engine: Engine; notRun: NotRun }
  | { kind: 'unsupported'; why: string };

const RAY: NotRun = {
  severity: 'error',
  means:
    'this runtime starts a Ray cluster and serves through it; spark starts vLLM on every node with its multiprocessing backend ' +
    "(--nnodes/--node-rank/--master-addr), so the recipe's Ray settings are not used",
  fix: 'set runtime: vllm (vllm-distributed), drop distributed_executor_backend: ray, and check the result with spark preflight',
};

export function runtimeChoice(runtime: string): RuntimeChoice {
  switch (runtime) {
    case 'sglang':
      return { kind: 'engine', engine: 'sglang' };
    case 'vllm':
    case 'vllm-distributed':
      return { kind: 'engine', engine: 'vllm' };
    case 'vllm-ray':
      return { kind: 'engine-not-as-written', engine: 'vllm', notRun: RAY };
    case 'eugr-vllm':
      return {
        kind: 'engine-not-as-written',
        engine: 'vllm',
        notRun: { ...RAY, means: `${RAY.means}; eugr-vllm also builds its image with mods, which spark does not run` },
      };
    case 'llama-cpp':
    case 'trtllm':
    case 'atlas':
    case 'modular-max':
      return { kind: 'unsupported', why: `spark launches SGLang and vLLM only, not ${runtime}` };
    default:
      return { kind: 'unsupported', why: `"${runtime}" is not a sparkrun runtime spark knows` };
  }
}

/**
 * sparkrun's choice when `runtime` is empty (or plain `vllm`): from the version, the keys and
 * the command's first words (its documented resolution order).
 */
export function guessRuntime(top: Record<string, unknown>, command: string | undefined, backend: unknown): string {
  const written = typeof top.runtime === 'string' ? top.runtime : '';
  if (written !== '' && written !== 'vllm') return written;
  if (String(top.recipe_version ?? '') === '1' || top.build_args !== undefined || top.mods !== undefined)
    return 'eugr-vllm';
  const text = (command ?? '').trim();
  if (backend === 'ray' || /--distributed-executor-backend[=\s]+ray\b/.test(text)) return 'vllm-ray';
  if (written === 'vllm') return 'vllm';
  if (/^(sglang\s+serve|python3?\s+-m\s+sglang\.launch_server)\b/.test(text)) return 'sglang';
  if (/^llama-server\b/.test(text)) return 'llama-cpp';
  if (/^(trtllm-serve|mpirun\b.*trtllm)/.test(text)) return 'trtllm';
  return 'vllm-distributed';
}
