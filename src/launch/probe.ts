// Small facts the launch asks each node for before starting anything: its home directory (for
// `~` in host paths), the RoCE GID index for the b12x runtime (`spark gid` on the node), and a
// ref file of the model cache when this machine does not mount it.
import { homedir } from 'node:os';
import { SparkError } from '../errors/errors.js';
import type { ClusterNode } from '../recipes/index.js';
import { readLocalText, type ReadText } from './snapshot.js';
import { shJoin } from '../remote/shell.js';
import { capture, isLocalHost, lastLine, nodeArgv, nodeCommand, type Tools } from '../remote/ssh.js';

function nodeName(node: Pick<ClusterNode, 'rank' | 'host'>): string {
  return `node ${node.rank} (${node.host})`;
}

function unreachable(node: ClusterNode, what: string, detail: string, fix: string): SparkError {
  return new SparkError('E_NODE_FAILED', `${nodeName(node)}: ${what}${detail ? `: ${detail}` : ''}; ${fix}`, {
    rank: node.rank,
    host: node.host,
  });
}

/** Each node's $HOME, asked over ssh (this machine's for a local node). */
export async function probeHomes(
  nodes: readonly ClusterNode[],
  tools: Tools,
  env: NodeJS.ProcessEnv,
): Promise<Map<number, string>> {
  const homes = new Map<number, string>();
  await Promise.all(
    nodes.map(async (node) => {
      if (isLocalHost(node.host)) {
        homes.set(node.rank, env.HOME ?? homedir());
        return;
      }
      const r = await capture(nodeCommand(node.host, `printf '%s\\n' "$HOME"`, tools), env, 30_000);
      const home = r.stdout.trim();
      if (r.code !== 0 || !home.startsWith('/')) {
        throw unreachable(
          node,
          'cannot reach the node over ssh',
          lastLine(r.stderr) || `exit ${r.code}`,
          `check that \`${shJoin(['ssh', node.host])}\` works without a password`,
        );
      }
      homes.set(node.rank, home);
    }),
  );
  return homes;
}

/** The environment keys that make the launch detect B12X_ROCE_GID_INDEX on each node. */
export function gidQuery(env: Record<string, string>): string[] | undefined {
  const hcas = env.B12X_ROCE_HCA;
  if (hcas === undefined || hcas === '' || env.B12X_ROCE_GID_INDEX !== undefined) return undefined;
  const args = ['gid', '--index-only', '--hca', hcas];
  if (env.NCCL_IB_ADDR_RANGE) args.push('--addr-range', env.NCCL_IB_ADDR_RANGE);
  if (env.NCCL_IB_ADDR_FAMILY) args.push('--family', env.NCCL_IB_ADDR_FAMILY);
  if (env.NCCL_IB_ROCE_VERSION_NUM) args.push('--roce-version', env.NCCL_IB_ROCE_VERSION_NUM);
  return args;
}

/** B12X_ROCE_GID_INDEX per node, from `spark gid --index-only` run on each node. */
export async function probeGids(
  nodes: readonly ClusterNode[],
  query: readonly string[],
  tools: Tools,
  env: NodeJS.ProcessEnv,
): Promise<Map<number, string>> {
  const out = new Map<number, string>();
  await Promise.all(
    nodes.map(async (node) => {
      const r = await capture(nodeArgv(node.host, [tools.spark, ...query], tools), env, 60_000);
      const index = r.stdout.trim();
      if (r.code === 255 && !isLocalHost(node.host)) {
        throw unreachable(
          node,
          'cannot reach the node over ssh',
          lastLine(r.stderr),
          `check that \`${shJoin(['ssh', node.host])}\` works without a password`,
        );
      }
      if (r.code !== 0 || !/^\d+$/.test(index)) {
        const why = lastLine(r.stderr) || (r.code === 127 ? `${tools.spark} not found` : `exit ${r.code}`);
        throw unreachable(
          node,
          'spark gid found no GID index for B12X_ROCE_GID_INDEX',
          why,
          'install spark on the node (or pass --spark-bin), fix the fabric, or set B12X_ROCE_GID_INDEX in the recipe [env]',
        );
      }
      out.set(node.rank, index);
    }),
  );
  return out;
}

/** Reads a ref file locally, else on the head node (the cache may be mounted only there). */
export function readTextViaHead(head: ClusterNode, tools: Tools, env: NodeJS.ProcessEnv): ReadText {
  return async (path) => {
    const local = await readLocalText(path);
    if (local !== undefined || isLocalHost(head.host)) return local;
    const r = await capture(nodeArgv(head.host, ['cat', path], tools), env, 30_000);
    return r.code === 0 ? r.stdout : undefined;
  };
}
