// The cluster file against the environment the containers get.
import { isIPv4 } from 'node:net';
import { at, ENGINES } from '../../recipes/index.js';
import { defineRule, finding, whereEnv } from '../rule.js';

/** `a.b.c.d/n` → [network, prefix]; undefined when not an IPv4 CIDR. */
export function parseCidr4(text: string): { base: number; bits: number } | undefined {
  const m = /^\s*([\d.]+)\/(\d{1,2})\s*$/.exec(text);
  if (!m || !isIPv4(m[1]!) || Number(m[2]) > 32) return undefined;
  return { base: ipv4ToInt(m[1]!), bits: Number(m[2]) };
}

export function ipv4ToInt(ip: string): number {
  return ip.split('.').reduce((acc, octet) => acc * 256 + Number(octet), 0);
}

export function inCidr4(ip: string, cidr: { base: number; bits: number }): boolean {
  if (!isIPv4(ip)) return false;
  const size = 2 ** (32 - cidr.bits);
  return Math.floor(ipv4ToInt(ip) / size) === Math.floor(cidr.base / size);
}

export const fabricRange = defineRule({
  id: 'cluster.fabric-range',
  title: "every node's fabric address is inside NCCL_IB_ADDR_RANGE",
  engines: ENGINES,
  severity: 'error',
  scope: 'files',
  evidence:
    'NCCL only considers GIDs inside NCCL_IB_ADDR_RANGE; a node whose fabric address is outside it has no usable ' +
    'RoCE GID and NCCL fails or falls back to sockets (domain.md, RoCE GID index; seed: dsv41 recipe pins 192.168.200.0/24).',
  fix: "correct NCCL_IB_ADDR_RANGE or the node's fabric_addr",
  check(ctx) {
    const v = ctx.env.get('NCCL_IB_ADDR_RANGE');
    if (!v || !ctx.cluster) return [];
    const cidr = parseCidr4(v.value);
    if (!cidr) {
      if (v.value.includes(':')) return []; // IPv6 range: NCCL_IB_ADDR_FAMILY=AF_INET6 setups are not checked
      return [finding(this, { message: `NCCL_IB_ADDR_RANGE=${v.value} is not an IPv4 CIDR (a.b.c.d/n)`, where: whereEnv(v) })];
    }
    const c = ctx.cluster;
    return c.nodes
      .filter((n) => isIPv4(n.fabricAddr) && !inCidr4(n.fabricAddr, cidr))
      .map((n) =>
        finding(this, {
          message: `node ${n.rank} (${n.host}) has fabric_addr ${n.fabricAddr}, outside NCCL_IB_ADDR_RANGE=${v.value} (${whereEnv(v)})`,
          where: at(c.file, n.line),
        }),
      );
  },
});
