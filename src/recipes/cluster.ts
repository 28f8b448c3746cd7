// A cluster file: the nodes in rank order (each with its fabric address, the address the other
// nodes reach it at, and environment values of its own), the head, the shared Hugging Face
// cache and the cluster's NCCL environment (format in docs/recipes.md; examples in
// recipes/clusters/).
import { isIP } from 'node:net';
import { SparkError } from '../errors/errors.js';
import { FieldReader, type FileDiagnostic } from './fields.js';
import { locator, type Locate } from './located.js';
import { sshHostProblem } from './ssh-target.js';
import { failIfSwallowed, findSwallowedKeys, swallowedDiagnostic, withoutSwallowed } from './swallowed.js';
import { parseTomlDocument, readTextFile } from './toml-file.js';
import { formatPath, type TomlPositions } from './toml-positions.js';

/** The TOML key of each field. */
const CLUSTER_FIELDS = {
  name: 'name',
  nodes: 'nodes',
  head: 'head',
  hfCache: 'hf_cache',
  distPort: 'dist_port',
  nccl: 'nccl',
} as const satisfies Record<Exclude<keyof Cluster, 'file' | 'locate'>, string>;
const NODE_FIELDS = {
  host: 'host',
  fabricAddr: 'fabric_addr',
  distAddr: 'dist_addr',
  env: 'env',
} as const satisfies Partial<Record<keyof ClusterNode, string>>;

export type ClusterField = keyof typeof CLUSTER_FIELDS;
export type NodeField = keyof typeof NODE_FIELDS;
export const CLUSTER_KEYS: readonly string[] = Object.values(CLUSTER_FIELDS);
export const NODE_KEYS: readonly string[] = Object.values(NODE_FIELDS);

export interface ClusterNode {
  /** Rank = position in the file. */
  rank: number;
  /** ssh target, e.g. `spark1` or `user@10.0.0.1`. */
  host: string;
  /**
   * The node's address on the RoCE fabric (without a prefix length). Undefined only for a
   * sparkrun cluster (which stores none) opened without asking its nodes: preflight --local.
   */
  fabricAddr?: string;
  /** The fabric subnet's prefix length, when written as `fabric_addr = "a.b.c.d/24"`. */
  fabricPrefix?: number;
  /**
   * The address every other node reaches this one at (the rendezvous and the engine's control
   * plane); undefined means the fabric address (see nodeAddress).
   */
  distAddr?: string;
  /** Environment values of this node alone (`[nodes.env]`); they win over every other source. */
  env: Record<string, string>;
  /** Line of the node's `[[nodes]]` header. */
  line?: number;
  /** The line that wrote a field of the node, or a key of its env. */
  locate: Locate<ClusterNode, NodeField>;
}

export interface Cluster {
  file: string;
  /** The line that wrote a field of the cluster, a node's table or a key of nccl. */
  locate: Locate<Cluster, ClusterField>;
  name: string;
  nodes: ClusterNode[];
  /** Index of the head node (rank that serves HTTP and hosts the rendezvous). Default 0. */
  head: number;
  /** Host path of the Hugging Face cache, mounted at HF_CACHE_CONTAINER_PATH. */
  hfCache?: string;
  /** torch.distributed rendezvous port on the head. Default 25000. */
  distPort: number;
  /** The cluster's NCCL environment; the recipe's [env] wins where both set a key. */
  nccl: Record<string, string>;
}

export interface LoadedCluster {
  cluster: Cluster;
  diagnostics: FileDiagnostic[];
}

export const DEFAULT_DIST_PORT = 25000;
/** Where the launcher mounts the cluster's hf_cache inside every container. */
export const HF_CACHE_CONTAINER_PATH = '/root/.cache/huggingface';

/** A node whose fabric address is known: every node of a spark cluster file, and of a sparkrun cluster once asked. */
export type AddressedNode = ClusterNode & { fabricAddr: string };

/** The address the other nodes reach `node` at: its dist_addr, else its fabric address. */
export function nodeAddress(node: Pick<AddressedNode, 'distAddr' | 'fabricAddr'>): string;
export function nodeAddress(node: Pick<ClusterNode, 'distAddr' | 'fabricAddr'>): string | undefined;
export function nodeAddress(node: Pick<ClusterNode, 'distAddr' | 'fabricAddr'>): string | undefined {
  return node.distAddr ?? node.fabricAddr;
}

export function isAddressed(node: ClusterNode): node is AddressedNode {
  return node.fabricAddr !== undefined;
}

/** Whether every node's fabric address is known (false only for a sparkrun cluster whose nodes were not asked). */
export function hasFabricAddresses(cluster: Cluster): boolean {
  return cluster.nodes.every(isAddressed);
}

/** The node, with its fabric address, for what cannot do without it (a launch plan). */
export function addressed(node: ClusterNode, cluster: Cluster): AddressedNode {
  if (!isAddressed(node)) {
    throw new SparkError(
      'E_INTERNAL',
      `${cluster.file}: node ${node.rank} (${node.host}) has no fabric address: its cluster was opened without asking the nodes`,
    );
  }
  return node;
}

export async function readCluster(path: string): Promise<LoadedCluster> {
  return parseCluster(await readTextFile(path, 'cluster file'), path);
}

/** `10.0.22.1/24` → address and prefix; the prefix must suit the address family. */
function parseAddress(
  r: FieldReader,
  key: string,
  text: string,
  allowPrefix: boolean,
): { addr: string; prefix?: number } {
  const slash = text.indexOf('/');
  const addr = slash < 0 ? text : text.slice(0, slash);
  const family = isIP(addr);
  const example = allowPrefix ? '"192.168.200.1" or "192.168.200.1/24"' : '"10.0.0.1"';
  if (family === 0 || (slash >= 0 && !allowPrefix)) {
    r.fail(key, `${r.path(key)} must be an IP address like ${example}, got "${text}"`);
  }
  if (slash < 0) return { addr };
  const p = text.slice(slash + 1);
  const max = family === 4 ? 32 : 128;
  if (!/^\d{1,3}$/.test(p) || Number(p) > max)
    r.fail(key, `${r.path(key)}: the prefix length in "${text}" must be 0-${max}`);
  return { addr, prefix: Number(p) };
}

/** Parses and validates a cluster file. Throws SparkError E_CLUSTER (exit 2) on bad data. */
export function parseCluster(source: string, file: string): LoadedCluster {
  const document = parseTomlDocument(source, file, 'E_CLUSTER');
  const swallowed = findSwallowedKeys(document.positions, { topLevel: CLUSTER_KEYS, tables: { nodes: NODE_KEYS } });
  const top = new FieldReader(
    file,
    withoutSwallowed(document.table, swallowed),
    '',
    document.positions.root,
    'E_CLUSTER',
  );
  const diagnostics = swallowed.map((loc) => swallowedDiagnostic(file, loc));
  // A node key written below a node's [nodes.env] header lands in that table as a variable.
  diagnostics.push(...swallowedNodeKeys(document.positions, file));
  failIfSwallowed(top, 'name', swallowed);
  diagnostics.push(...top.unknownKeys(CLUSTER_KEYS, 'cluster file'));
  const readers = top.tableArray('nodes');
  if (readers.length === 0) top.missing('nodes', 'one [[nodes]] table per node, in rank order');
  const nodes = readers.map((r, rank): ClusterNode => {
    diagnostics.push(...r.unknownKeys(NODE_KEYS, '[[nodes]] table'));
    const fabric = parseAddress(
      r,
      'fabric_addr',
      r.requiredString('fabric_addr', 'fabric_addr = "192.168.200.1"'),
      true,
    );
    const host = r.requiredString('host', 'host = "spark1"');
    const bad = sshHostProblem(host);
    if (bad)
      r.fail(
        'host',
        `${r.path('host')} ${JSON.stringify(host)} ${bad}`,
        'write the ssh target, e.g. host = "spark1" or "user@10.0.0.1"',
      );
    const node: ClusterNode = {
      rank,
      host,
      fabricAddr: fabric.addr,
      env: {},
      locate: locator<ClusterNode, NodeField>(NODE_FIELDS, r.position),
    };
    if (fabric.prefix !== undefined) node.fabricPrefix = fabric.prefix;
    const dist = r.string('dist_addr');
    if (dist !== undefined) node.distAddr = parseAddress(r, 'dist_addr', dist, false).addr;
    const env = r.envTable('env');
    if (env) node.env = Object.fromEntries(Object.entries(env).filter(([k]) => !NODE_KEYS.includes(k)));
    if (r.headerLine !== undefined) node.line = r.headerLine;
    return node;
  });
  const seen = new Map<string, number>();
  for (const n of nodes) {
    const keys = [`host ${n.host}`, `fabric_addr ${n.fabricAddr}`];
    if (n.distAddr !== undefined) keys.push(`dist_addr ${n.distAddr}`);
    for (const key of keys) {
      const prev = seen.get(key);
      if (prev !== undefined) {
        readers[n.rank]!.fail(
          key.split(' ')[0]!,
          `nodes ${prev} and ${n.rank} have the same ${key}`,
          'each node needs its own',
        );
      }
      seen.set(key, n.rank);
    }
  }
  const head = top.integer('head', 0, nodes.length - 1) ?? 0;
  const cluster: Cluster = {
    file,
    name: top.requiredString('name', 'name = "4nodes-switch"'),
    nodes,
    head,
    distPort: top.integer('dist_port', 1, 65535) ?? DEFAULT_DIST_PORT,
    nccl: top.envTable('nccl') ?? {},
    locate: locator<Cluster, ClusterField>(CLUSTER_FIELDS, document.positions.root),
  };
  const hfCache = top.string('hf_cache');
  if (hfCache !== undefined) cluster.hfCache = hfCache;
  return { cluster, diagnostics };
}

function swallowedNodeKeys(positions: TomlPositions, file: string): FileDiagnostic[] {
  return positions.headers
    .filter(
      ({ path: [nodes, rank, env, ...rest] }) =>
        nodes === 'nodes' && typeof rank === 'number' && env === 'env' && rest.length === 0,
    )
    .flatMap((h) =>
      h.keys
        .filter(({ key }) => NODE_KEYS.includes(key.at(-1)!))
        .map(({ key: written, line }) => {
          const key = written.at(-1)!;
          const path = formatPath([...h.path, ...written]);
          return {
            kind: 'swallowed-key' as const,
            severity: 'error' as const,
            file,
            line,
            key: path,
            message:
              `${key} on line ${line} is inside the [nodes.env] table (header on line ${h.line}), ` +
              `so it is the environment variable ${path}, not the node's ${key}`,
            fix: `move ${key} above the node's [nodes.env] header`,
          };
        }),
    );
}
