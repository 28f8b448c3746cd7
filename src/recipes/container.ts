// The container every node runs, as settings: its network, devices, /dev/shm, mounts and
// program. The launch plan writes its `docker run` flags from these (launch/plan.ts), and
// preflight's container rules (preflight/rules/docker.ts, mounts.ts, engine-lib.ts) and the
// sparkrun reader's account of executor_config judge these, so none can disagree with the
// launch about what a container gets.
//
// What never varies, and why: host networking (the RoCE fabric, and ports on the node's own
// addresses); the GPUs and the RDMA devices with IPC_LOCK and unlimited locked memory for
// NCCL's registered buffers (left out by --cpu-only); never --privileged (PRIVILEGED).
import { posix } from 'node:path';
import { SparkError } from '../errors/errors.js';
import { HF_CACHE_CONTAINER_PATH } from './cluster.js';
import { expandHome, relativeHostProblem } from './paths.js';
import type { Mount, Recipe } from './recipe.js';

/** spark never runs a container privileged: it passes the devices the engines need instead. */
export const PRIVILEGED = false;

/** The GPUs, for the engine. */
export const GPU_FLAGS: readonly string[] = ['--gpus', 'all'];
/** RoCE: the verbs devices, and unlimited locked memory for NCCL's registered buffers. */
export const RDMA_FLAGS: readonly string[] = [
  '--device',
  '/dev/infiniband',
  '--cap-add',
  'IPC_LOCK',
  '--ulimit',
  'memlock=-1',
];

/**
 * Flags every container gets: host networking (the fabric), the GPUs and RDMA on a DGX Spark.
 * `cpuOnly` leaves out the GPU and RDMA flags, which docker refuses on a host without them:
 * a smoke run of a recipe's mounts, environment and entrypoint (docs/launch.md, "--cpu-only").
 */
export function containerFlags(cpuOnly = false): string[] {
  return ['--network', 'host', ...(cpuOnly ? [] : [...GPU_FLAGS, ...RDMA_FLAGS]), '--ulimit', 'stack=67108864'];
}

export const CONTAINER_FLAGS: readonly string[] = containerFlags();

/**
 * The container's /dev/shm. A recipe's shm_size asks for a private /dev/shm of that size
 * (`--shm-size`; `--ipc host` would make docker ignore it, and podman refuse it). Without one
 * the container shares the host's IPC namespace, and with it the host's /dev/shm (`--ipc host`),
 * never docker's default 64 MB.
 */
export type Shm = { kind: 'host' } | { kind: 'private'; size: string };

export function shmOf(recipe: Pick<Recipe, 'shmSize'>): Shm {
  return recipe.shmSize !== undefined ? { kind: 'private', size: recipe.shmSize } : { kind: 'host' };
}

export function shmFlags(shm: Shm): string[] {
  return shm.kind === 'private' ? ['--shm-size', shm.size] : ['--ipc', 'host'];
}

/** One bind mount of the container: a host path at a container path. */
export interface Bind {
  /** The host path on the node (`~` is the node's home), normalized; undefined when it is relative. */
  source?: string;
  /** The host path as the file wrote it, and the key that wrote it (`hf_cache`, `extra_mounts[0].host`). */
  written: string;
  key: string;
  /** Why the written host path cannot be used (relativeHostProblem): the launch refuses it. */
  problem?: string;
  /** The file and line that wrote it, and the error code a refusal has. */
  at: { code: 'E_RECIPE' | 'E_CLUSTER'; file: string; line?: number | undefined };
  target: string;
  readOnly: boolean;
  /**
   * The source must exist on the node: docker's --mount refuses to start the container without
   * it. Otherwise -v creates a missing source as an empty root-owned directory.
   */
  mustExist: boolean;
  /** What wrote it: the cluster's hf_cache, or one of the recipe's extra_mounts. */
  from: { kind: 'hf_cache' } | { kind: 'extra_mount'; mount: Mount };
}

/** A bind's host path as the node sees it, or why it has none. */
function bindSource(path: string, home: string): Pick<Bind, 'source' | 'problem'> {
  const problem = relativeHostProblem(path);
  return problem ? { problem } : { source: posix.normalize(expandHome(path, home)) };
}

/** The launch's refusal of a bind whose host path cannot be used (exit 2), as `file:line: key problem`. */
export function bindRefusal(b: Bind): SparkError {
  const where = b.at.line === undefined ? b.at.file : `${b.at.file}:${b.at.line}`;
  return new SparkError(b.at.code, `${where}: ${b.key} ${b.problem!}`, { path: b.at.file, key: b.key });
}

/** What docker does with a bind whose source is missing on the node, in a finding's words. */
export function missingSourceOutcome(b: Pick<Bind, 'mustExist'>): string {
  return b.mustExist
    ? 'docker refuses to start the container (--mount needs its source to exist)'
    : 'docker would create it as an empty root-owned directory (-v)';
}

/** Where the cluster's hf_cache comes from, for messages about it. */
export interface HfCacheSource {
  hfCache: string;
  file: string;
}

/** The node's mounts: the cluster's hf_cache (when it has one), then the recipe's extra_mounts. */
export function containerBinds(recipe: Recipe, hf: HfCacheSource | undefined, home: string): Bind[] {
  const binds: Bind[] = [];
  if (hf !== undefined) {
    binds.push({
      ...bindSource(hf.hfCache, home),
      written: hf.hfCache,
      key: 'hf_cache',
      at: { code: 'E_CLUSTER', file: hf.file },
      target: HF_CACHE_CONTAINER_PATH,
      readOnly: false,
      mustExist: true,
      from: { kind: 'hf_cache' },
    });
  }
  recipe.extraMounts.forEach((m, index) =>
    binds.push({
      ...bindSource(m.host, home),
      written: m.host,
      key: `extra_mounts[${index}].host`,
      at: { code: 'E_RECIPE', file: recipe.file, line: m.line },
      target: m.container,
      readOnly: m.readOnly,
      // A read-only mount of a missing path is always a mistake (the wrapper script case);
      // a writable one may be a cache the container fills.
      mustExist: m.readOnly,
      from: { kind: 'extra_mount', mount: m },
    }),
  );
  return binds;
}

/** Go's encoding/csv quoting, which docker's --mount parser reads. */
function csvField(field: string): string {
  return /[",\n\r]/.test(field) ? `"${field.replace(/"/g, '""')}"` : field;
}

/** The docker flags of one bind; a bind whose host path cannot be used is its refusal (exit 2). */
export function bindFlags(b: Bind): string[] {
  if (b.source === undefined) throw bindRefusal(b);
  if (!b.mustExist && !b.source.includes(':') && !b.target.includes(':')) {
    return ['-v', `${b.source}:${b.target}${b.readOnly ? ':ro' : ''}`];
  }
  const fields = ['type=bind', `source=${b.source}`, `target=${b.target}`, ...(b.readOnly ? ['readonly'] : [])];
  return ['--mount', fields.map(csvField).join(',')];
}

/** The program the container runs: the recipe's entrypoint, or undefined for the image's own. */
export function containerProgram(recipe: Pick<Recipe, 'entrypoint'>): string[] | undefined {
  return recipe.entrypoint !== undefined && recipe.entrypoint.length > 0 ? recipe.entrypoint : undefined;
}

/** What a node's container gets, short of its environment and the engine's arguments. */
export interface ContainerSettings {
  network: 'host';
  /** The GPUs and the RDMA devices (false: --cpu-only). */
  devices: boolean;
  privileged: typeof PRIVILEGED;
  shm: Shm;
  binds: Bind[];
  program: string[] | undefined;
}

export function containerSettings(
  recipe: Recipe,
  on: { hf?: HfCacheSource | undefined; home: string; cpuOnly?: boolean | undefined },
): ContainerSettings {
  return {
    network: 'host',
    devices: !on.cpuOnly,
    privileged: PRIVILEGED,
    shm: shmOf(recipe),
    binds: containerBinds(recipe, on.hf, on.home),
    program: containerProgram(recipe),
  };
}

/** The `docker run` options the settings make, in the plan's order: devices, /dev/shm, mounts. */
export function settingsFlags(s: ContainerSettings): string[] {
  return [
    ...containerFlags(!s.devices),
    ...(s.privileged ? ['--privileged'] : []),
    ...shmFlags(s.shm),
    ...s.binds.flatMap(bindFlags),
  ];
}

/** `--entrypoint` and the words after the image that make the container run the program. */
export function programFlags(s: ContainerSettings): { entrypoint: string[]; afterImage: string[] } {
  return s.program === undefined
    ? { entrypoint: [], afterImage: [] }
    : { entrypoint: ['--entrypoint', s.program[0]!], afterImage: s.program.slice(1) };
}
