// `spark fanout pack|verify --env FILE`: the Mia stack's own .env says where every node's packs
// go. Its launcher mounts ENGRAM_DIR (a host directory, the same path on every node unless a
// node's [nodes.env] in the cluster file says otherwise) at /engram, which DSV41_PACKED_DIR
// names; TP_SIZE is the world the shards' names carry (docs/mia-stack.md). spark reads both
// here, so the packs land exactly where the stack looks for them.
import { usageError, type SparkError } from '../errors/errors.js';
import type { Cluster } from '../recipes/index.js';
import { readEnvFile, type EnvFile } from '../recipes/env-file.js';
import { STACKS } from '../stacks/registry.js';

/** The host directory of the stack's packs, as its .env names it. */
export const MIA_HOST_DIR_VAR = 'ENGRAM_DIR';

export interface EnvDirs {
  envFile: EnvFile;
  /** By rank: the directory on that node, when the file (or the node's [nodes.env]) names one. */
  dirs: (string | undefined)[];
}

/** Each node's pack directory from the env file (or the node's [nodes.env]); exit 2 naming what disagrees with the cluster or the layout. */
export async function envNodeDirs(
  path: string,
  cluster: Cluster,
  env: NodeJS.ProcessEnv,
  layout: string | undefined,
): Promise<EnvDirs> {
  const envFile = await readEnvFile(path, env);
  const at = (key: string) => `${path}:${envFile.vars.get(key)!.line}`;
  const tp = envFile.vars.get('TP_SIZE')?.value;
  if (tp !== undefined && tp !== String(cluster.nodes.length)) {
    throw usageError(
      `${at('TP_SIZE')}: TP_SIZE=${tp}, but ${cluster.file} has ${cluster.nodes.length} nodes (one rank each): ` +
        'the packs carry the world in their names; use a cluster file of TP_SIZE nodes, or fix TP_SIZE',
    );
  }
  const reader = STACKS.find((s) => envFile.vars.has(s.dirEnv));
  if (reader && layout !== undefined && layout !== reader.layout) {
    throw usageError(
      `${at(reader.dirEnv)}: this env file's stack reads ${reader.reads} (${reader.dirEnv}): pass --layout ${reader.layout}, not --layout ${layout}`,
    );
  }
  const shared = envFile.vars.get(MIA_HOST_DIR_VAR)?.value;
  const dirs = cluster.nodes.map((n) => n.env[MIA_HOST_DIR_VAR] ?? shared).map((d) => (d === '' ? undefined : d));
  return { envFile, dirs };
}

/** The error for a node the env file names no directory for. */
export function noEnvDir(path: string, node: { rank: number; host: string }, flag: string): SparkError {
  return usageError(
    `${path} sets no ${MIA_HOST_DIR_VAR} (the host directory of the packs) for node ${node.rank} (${node.host}): set it there, or pass ${flag}`,
  );
}
