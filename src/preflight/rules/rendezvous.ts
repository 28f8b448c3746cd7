// Where the nodes meet: the rendezvous on the head (torch.distributed, SGLang's --dist-init-addr,
// vLLM's --master-addr) and the address each node advertises to the others (VLLM_HOST_IP /
// SGLANG_HOST_IP, which the launcher sets to the node's dist_addr, else its fabric_addr). On a
// ring of point-to-point links no fabric address is reachable from every node: the cluster
// file must give each node a dist_addr they all reach (usually the LAN).
import { isIPv4 } from 'node:net';
import { at, isAddressed, nodeAddress, type AddressedNode, type Cluster } from '../../recipes/index.js';
import { routeTo } from '../../preflight-api/view.js';
import { nodeLabel } from '../../preflight-api/node.js';
import { defineRule, finding } from '../../preflight-api/rule.js';
import { addressInRange } from './cluster.js';

/** The fabric prefix length assumed when fabric_addr has none. */
export const ASSUMED_PREFIX = 24;

function subnetOf(node: AddressedNode): { cidr: string; assumed: boolean } {
  const prefix = node.fabricPrefix ?? (isIPv4(node.fabricAddr) ? ASSUMED_PREFIX : 64);
  return { cidr: `${node.fabricAddr}/${prefix}`, assumed: node.fabricPrefix === undefined };
}

/** What node k's advertised address is, in words. */
function advertised(c: Cluster, k: AddressedNode, port?: number): string {
  const addr = nodeAddress(k);
  const what =
    k.rank === c.head
      ? `the rendezvous ${addr}${port !== undefined ? `:${port}` : ''} on the head ${nodeLabel(k)}`
      : `${addr}, the address ${nodeLabel(k)} advertises`;
  return `${what} (${k.distAddr !== undefined ? 'its dist_addr' : 'its fabric_addr; no dist_addr'})`;
}

export const subnet = defineRule({
  id: 'rendezvous.subnet',
  title: "every node shares a subnet with the rendezvous and with each fabric address used in dist_addr's place",
  severity: 'error',
  scope: 'files',
  evidence:
    'Without dist_addr the rendezvous and each engine advertise the fabric address; on a ring (3node-ring.toml: ' +
    "spark1-spark2 on 10.0.22.0/24, spark1-spark3 on 10.0.23.0/24) rank 2 has no link to the head's 10.0.22.1 and " +
    `the rendezvous never completes. The subnet is fabric_addr's prefix (a.b.c.d/24), else /${ASSUMED_PREFIX}.`,
  fix: 'give every node a dist_addr that every other node reaches (its LAN address), e.g. dist_addr = "10.0.0.1"',
  needsFabricAddresses: true,
  check(ctx) {
    const c = ctx.cluster;
    const nodes = (ctx.placement?.nodes ?? []).filter(isAddressed);
    if (!c || nodes.length < 2) return [];
    const out = [];
    for (const k of nodes) {
      if (k.distAddr !== undefined) continue; // a dist_addr's reach shows on the nodes (rendezvous.route)
      const { cidr, assumed } = subnetOf(k);
      const cut = nodes.filter((j) => j !== k && addressInRange(j.fabricAddr, cidr) === false);
      for (const j of cut) {
        out.push(
          finding(this, {
            message:
              `${nodeLabel(j)} cannot reach ${advertised(c, k, c.distPort)}: its fabric_addr ${j.fabricAddr} is outside ` +
              `${cidr}${assumed ? ` (/${ASSUMED_PREFIX} assumed: write fabric_addr = "${k.fabricAddr}/N" to say otherwise)` : ''}`,
            where: at(c.file, k.line),
            node: { rank: j.rank, host: j.host },
          }),
        );
      }
    }
    return out;
  },
});

export const route = defineRule({
  id: 'rendezvous.route',
  title:
    "on every node, the rendezvous and each advertised address is its own or on a route, and each dist_addr is its node's",
  severity: 'error',
  also: 'warn when a node reaches an address only through its default gateway',
  scope: 'cluster',
  evidence:
    "Read from each node's routing table (/proc/net/route) and addresses: an address on no route never answers; one " +
    'reached only through the default gateway usually crosses a router that does not know the fabric; a dist_addr ' +
    "that is not its node's address makes the engine advertise an address it does not listen on.",
  fix: "set each node's dist_addr to an address of that node that every other node routes to (the LAN), or add the route",
  check(ctx) {
    const c = ctx.cluster;
    if (!c) return [];
    const out = [];
    // Cluster mode: every node's address is known (a sparkrun cluster's were asked of the nodes).
    const up = ctx.checked.filter((x) => x.view && x.node.clusterNode && isAddressed(x.node.clusterNode));
    for (const k of up) {
      const kn = k.node.clusterNode as AddressedNode;
      const addr = nodeAddress(kn);
      const own = k.view!.facts.addresses;
      if (own.length > 0 && !own.includes(addr)) {
        out.push(
          finding(this, {
            message: `${addr} (${kn.distAddr !== undefined ? 'dist_addr' : 'fabric_addr'} of ${nodeLabel(kn)}) is not an address of that node (it has ${own.join(', ')})`,
            where: at(c.file, kn.line),
            node: { rank: kn.rank, host: kn.host },
          }),
        );
      }
      for (const j of up) {
        if (j === k) continue;
        const how = routeTo(j.view!.facts, addr);
        if (how !== 'none' && how !== 'default') continue;
        out.push(
          finding(this, {
            severity: how === 'none' ? 'error' : 'warn',
            message: `${nodeLabel(j.node)} ${how === 'none' ? 'has no route to' : 'reaches only through its default gateway'} ${advertised(c, kn, c.distPort)}`,
            where: at(c.file, kn.line),
            node: { rank: j.node.rank, host: j.node.host },
          }),
        );
      }
    }
    return out;
  },
});
