// A cluster file: the nodes in rank order (each with its fabric address, the address the other
// nodes reach it at, and environment values of its own), the head, the shared Hugging Face
// cache and the cluster's NCCL environment (format in docs/recipes.md; examples in
// recipes/clusters/).
import { isIP } from 'node:net';
import { FieldReader, type FileDiagnostic } from './fields.js';
import { failIfSwallowed, findSwallowedKeys, swallowedDiagnostic, withoutSwallowed } from './swallowed.js';
import { parseTomlDocument, readTextFile, type TomlDocument } from './toml-file.js';

export interface ClusterNode {
  /** Rank = position in the file. */
  rank: number;
  /** ssh target, e.g. `spark1` or `user@10.0.0.1`. */
  host: string;
  /** The node's address on the RoCE fabric (without a prefix length). */
  fabricAddr: string;
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
}

export interface Cluster {
  file: string;
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
  document: TomlDocument;
}

export interface LoadedCluster {
  cluster: Cluster;
  diagnostics: FileDiagnostic[];
}

export const CLUSTER_KEYS = ['name', 'nodes', 'head', 'hf_cache', 'dist_port', 'nccl'] as const;
export const NODE_KEYS = ['host', 'fabric_addr', 'dist_addr', 'env'] as const;
export const DEFAULT_DIST_PORT = 25000;
/** Where the launcher mounts the cluster's hf_cache inside every container. */
export const HF_CACHE_CONTAINER_PATH = '/root/.cache/huggingface';

/** The address the other nodes reach `node` at: its dist_addr, else its fabric address. */
export function nodeAddress(node: Pick<ClusterNode, 'distAddr' | 'fabricAddr'>): string {
  return node.distAddr ?? node.fabricAddr;
}

export async function readCluster(path: string): Promise<LoadedCluster> {
  return parseCluster(await readTextFile(path, 'cluster file'), path);
}

/** `10.0.22.1/24` → address and prefix; the prefix must suit the address family. */
function parseAddress(r: FieldReader, key: string, text: string, allowPrefix: boolean): { addr: string; prefix?: number } {
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
  if (!/^\d{1,3}$/.test(p) || Number(p) > max) r.fail(key, `${r.path(key)}: the prefix length in "${text}" must be 0-${max}`);
  return { addr, prefix: Number(p) };
}

/**
 * Why `host` cannot be an ssh target, or undefined. A leading '-' would make ssh read the
 * host as an option (`-oProxyCommand=…` runs a command); an empty one runs nothing.
 */
function badHost(host: string): string | undefined {
  if (host === '') return 'is empty: it must name the node to ssh to';
  if (host.startsWith('-')) return "starts with '-', which ssh would read as an option";
  if ([...host].some((c) => /\s/.test(c) || c.charCodeAt(0) < 0x20 || c === '\x7f')) return 'contains whitespace or a control character';
  const at = host.lastIndexOf('@');
  const name = host.slice(at + 1);
  if (name === '' || name.startsWith('-')) return `has no host name after '${host.slice(0, at + 1)}'`;
  return undefined;
}

/** Parses and validates a cluster file. Throws SparkError E_CLUSTER (exit 2) on bad data. */
export function parseCluster(source: string, file: string): LoadedCluster {
  const document = parseTomlDocument(source, file, 'E_CLUSTER');
  const swallowed = findSwallowedKeys(document, { topLevel: CLUSTER_KEYS, tables: { nodes: NODE_KEYS } });
  const top = new FieldReader(file, withoutSwallowed(document.table, swallowed), '', document.locations, 'E_CLUSTER');
  const diagnostics = swallowed.map((loc) => swallowedDiagnostic(file, loc));
  // A node key written below a node's [nodes.env] header lands in that table as a variable.
  diagnostics.push(...swallowedNodeKeys(document, file));
  failIfSwallowed(top, 'name', swallowed);
  diagnostics.push(...top.unknownKeys(CLUSTER_KEYS, 'cluster file'));
  const readers = top.tableArray('nodes');
  if (readers.length === 0) top.missing('nodes', 'one [[nodes]] table per node, in rank order');
  const nodes = readers.map((r, rank): ClusterNode => {
    diagnostics.push(...r.unknownKeys(NODE_KEYS, '[[nodes]] table'));
    const fabric = parseAddress(r, 'fabric_addr', r.requiredString('fabric_addr', 'fabric_addr = "192.168.200.1"'), true);
    const host = r.requiredString('host', 'host = "spark1"');
    const bad = badHost(host);
    if (bad) r.fail('host', `${r.path('host')} ${JSON.stringify(host)} ${bad}`, 'write the ssh target, e.g. host = "spark1" or "user@10.0.0.1"');
    const node: ClusterNode = { rank, host, fabricAddr: fabric.addr, env: {} };
    if (fabric.prefix !== undefined) node.fabricPrefix = fabric.prefix;
    const dist = r.string('dist_addr');
    if (dist !== undefined) node.distAddr = parseAddress(r, 'dist_addr', dist, false).addr;
    const env = r.stringMap('env');
    if (env) node.env = Object.fromEntries(Object.entries(env).filter(([k]) => !(NODE_KEYS as readonly string[]).includes(k)));
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
        readers[n.rank]!.fail(key.split(' ')[0]!, `nodes ${prev} and ${n.rank} have the same ${key}`, 'each node needs its own');
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
    nccl: top.stringMap('nccl') ?? {},
    document,
  };
  const hfCache = top.string('hf_cache');
  if (hfCache !== undefined) cluster.hfCache = hfCache;
  return { cluster, diagnostics };
}

function swallowedNodeKeys(document: TomlDocument, file: string): FileDiagnostic[] {
  return document.locations.keys
    .filter((loc) => /^nodes\[\d+\]\.env$/.test(loc.table?.path ?? '') && (NODE_KEYS as readonly string[]).includes(loc.key))
    .map((loc) => ({
      kind: 'swallowed-key' as const,
      severity: 'error' as const,
      file,
      line: loc.line,
      key: loc.path,
      message:
        `${loc.key} on line ${loc.line} is inside the [${loc.table!.path.replace(/\[\d+\]/, '')}] table (header on line ` +
        `${loc.table!.line}), so it is the environment variable ${loc.path}, not the node's ${loc.key}`,
      fix: `move ${loc.key} above the node's [nodes.env] header`,
    }));
}
