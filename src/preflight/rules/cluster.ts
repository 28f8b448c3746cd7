// The cluster file against the environment the containers get.
import { isIPv4 } from 'node:net';
import { gidInRange, parseCidr, parseIpv6 } from '../../net/ip.js';
import { at } from '../../recipes/index.js';
import { defineRule, finding, whereEnv } from '../../preflight-api/rule.js';
import type { UncheckedRule } from '../../preflight-api/types.js';

/** Whether an address lies in NCCL_IB_ADDR_RANGE, compared the way NCCL compares GIDs. */
export function addressInRange(address: string, rangeText: string): boolean | undefined {
  const range = parseCidr(rangeText);
  const gid = parseIpv6(isIPv4(address) ? `::ffff:${address}` : address);
  if (!range || !gid) return undefined;
  if ((range.family === 'AF_INET') !== isIPv4(address)) return false;
  return gidInRange(gid, range);
}

export const fabricRange = defineRule({
  id: 'cluster.fabric-range',
  title: "every node's fabric address is inside NCCL_IB_ADDR_RANGE",
  severity: 'error',
  scope: 'files',
  evidence:
    'NCCL only considers GIDs inside NCCL_IB_ADDR_RANGE; a node whose fabric address is outside it has no usable ' +
    'RoCE GID and NCCL fails or falls back to sockets (docs/entrypoint.md, spark gid; recipes/dsv41-flash-4x-sglang-aiden16 pins 192.168.200.0/24).',
  fix: "correct NCCL_IB_ADDR_RANGE or the node's fabric_addr",
  needsFabricAddresses: true,
  check(ctx) {
    const v = ctx.env.get('NCCL_IB_ADDR_RANGE');
    if (!v || !ctx.cluster) return [];
    if (!parseCidr(v.value)) {
      return [
        finding(this, {
          message: `NCCL_IB_ADDR_RANGE=${v.value} is not a CIDR (a.b.c.d/n); NCCL ignores it`,
          where: whereEnv(v),
        }),
      ];
    }
    const c = ctx.cluster;
    return c.nodes
      .flatMap((n) => (n.fabricAddr !== undefined && addressInRange(n.fabricAddr, v.value) === false ? [n] : []))
      .map((n) =>
        finding(this, {
          message: `node ${n.rank} (${n.host}) has fabric_addr ${n.fabricAddr!}, outside NCCL_IB_ADDR_RANGE=${v.value} (${whereEnv(v)})`,
          where: at(c.file, n.line),
        }),
      );
  },
});

export const localOnly = defineRule({
  id: 'cluster.local-only',
  title: 'with --local and a sparkrun cluster, the cross-node rules that could not run',
  severity: 'info',
  scope: 'files',
  evidence:
    'sparkrun stores no fabric addresses; spark asks each node for its own over ssh, which --local does not do (it checks this node ' +
    "only, so a node that is down does not stop it). The rules that read every node's fabric address cannot run then, and the " +
    'rules that compare the nodes never run with --local.',
  fix: 'run spark preflight without --local to check every node over ssh, or give the addresses in a spark cluster file',
  check(ctx) {
    const c = ctx.cluster;
    if (!c || !ctx.unchecked.some((u) => u.why === 'fabric-addresses')) return [];
    const rules = (why: UncheckedRule['why']) =>
      ctx.unchecked
        .filter((u) => u.why === why)
        .map((u) => u.rule)
        .join(', ');
    const compared = rules('compares-nodes');
    return [
      finding(this, {
        message:
          `--local checks this node only, and sparkrun stores no fabric addresses: not run: ${rules('fabric-addresses')} ` +
          `(they need every node's fabric address)${compared === '' ? '' : `; ${compared} (they compare the nodes)`}`,
        where: c.file,
      }),
    ];
  },
});
