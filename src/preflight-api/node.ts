// Which node this process runs on. Node-local rules (mounts, devices, ports, disk) only make
// sense for the node they run on, and the report names it.
import { hostname, networkInterfaces } from 'node:os';
import type { Cluster } from '../recipes/index.js';
import { usageError } from '../errors/errors.js';
import type { LocalNode } from './types.js';

export interface NodeHints {
  /** --node-rank, else NODE_RANK. */
  rank?: number;
  rankFrom?: '--node-rank' | 'NODE_RANK';
  hostname?: string;
  addresses?: string[];
}

/** This host's addresses on every interface. */
export function localAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flatMap((list) => list ?? [])
    .map((a) => a.address);
}

/** `user@spark1.lan` → `spark1`. */
function shortHost(host: string): string {
  return host.replace(/^.*@/, '').split('.')[0]!.toLowerCase();
}

/**
 * The local node: by rank when given, else by matching this host's name or addresses against
 * the cluster's nodes; without a cluster file, "this node" with the given rank (if any).
 */
export function identifyNode(cluster: Cluster | undefined, hints: NodeHints): LocalNode | undefined {
  const name = hints.hostname ?? hostname();
  if (hints.rank !== undefined) {
    if (!cluster) return { rank: hints.rank, host: name, how: hints.rankFrom ?? '--node-rank' };
    const node = cluster.nodes[hints.rank];
    if (!node) {
      throw usageError(
        `${hints.rankFrom ?? '--node-rank'} ${hints.rank} is not a node of ${cluster.file} (ranks 0-${cluster.nodes.length - 1})`,
      );
    }
    return { rank: node.rank, host: node.host, clusterNode: node, how: hints.rankFrom ?? '--node-rank' };
  }
  if (!cluster) return { rank: null, host: name, how: 'no cluster file' };
  const byName = cluster.nodes.find((n) => shortHost(n.host) === shortHost(name));
  if (byName) return { rank: byName.rank, host: byName.host, clusterNode: byName, how: 'hostname' };
  const addresses = new Set(hints.addresses ?? localAddresses());
  const byAddr = cluster.nodes.find(
    (n) =>
      (n.fabricAddr !== undefined && addresses.has(n.fabricAddr)) ||
      (n.distAddr !== undefined && addresses.has(n.distAddr)) ||
      addresses.has(n.host.replace(/^.*@/, '')),
  );
  if (byAddr) return { rank: byAddr.rank, host: byAddr.host, clusterNode: byAddr, how: 'address' };
  return undefined;
}

/** `node 1 (spark2)`, or `this node (name)` when the rank is unknown. */
export function nodeLabel(node: { rank: number | null; host: string }): string {
  return node.rank === null ? `this node (${node.host})` : `node ${node.rank} (${node.host})`;
}
