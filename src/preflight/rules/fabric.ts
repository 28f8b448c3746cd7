// RDMA devices and socket interfaces named in the environment must exist on this node.
// Device lists follow NCCL's syntax: `^` excludes, `=` asks for exact names (otherwise a name is
// a prefix), `name:port` picks a port.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ENGINES } from '../../recipes/index.js';
import { defineRule, finding, whereEnv, whereNode } from '../rule.js';

export interface DeviceList {
  exclude: boolean;
  exact: boolean;
  entries: { name: string; port?: number }[];
}

/** Parses an NCCL device list (NCCL_IB_HCA, NCCL_SOCKET_IFNAME). */
export function parseDeviceList(text: string, exactByDefault = false): DeviceList {
  let t = text.trim();
  const exclude = t.startsWith('^');
  if (exclude) t = t.slice(1);
  const exact = exactByDefault || t.startsWith('=');
  if (t.startsWith('=')) t = t.slice(1);
  const entries = t
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '')
    .map((e) => {
      const [name, port] = e.split(':');
      return port !== undefined && /^\d+$/.test(port) ? { name: name!, port: Number(port) } : { name: name! };
    });
  return { exclude, exact, entries };
}

function listDir(path: string): string[] | undefined {
  try {
    return readdirSync(path);
  } catch {
    return undefined;
  }
}

/** Names in `list` with no matching device among `present` (prefix match unless exact). */
export function missingDevices(list: DeviceList, present: readonly string[]): string[] {
  if (list.exclude) return [];
  return list.entries
    .filter((e) => !present.some((p) => (list.exact ? p === e.name : p.startsWith(e.name))))
    .map((e) => e.name);
}

const HCA_VARS: { key: string; exact: boolean }[] = [
  { key: 'NCCL_IB_HCA', exact: false },
  { key: 'B12X_ROCE_HCA', exact: true },
];

export const hca = defineRule({
  id: 'fabric.hca',
  title: 'the RDMA devices (HCAs) and ports the environment names exist on this node',
  engines: ENGINES,
  severity: 'error',
  scope: 'local-node',
  evidence:
    'A wrong HCA name makes NCCL fall back to sockets or fail at the first collective (domain.md failure 8; seed: ' +
    'dsv41 recipe pins NCCL_IB_HCA and B12X_ROCE_HCA = rocep1s0f0,roceP2p1s0f0).',
  fix: 'use the names in /sys/class/infiniband on this node (ibv_devices lists them)',
  check(ctx) {
    const root = join(ctx.sysfs, 'class', 'infiniband');
    const present = listDir(root);
    const out = [];
    for (const { key, exact } of HCA_VARS) {
      const v = ctx.env.get(key);
      if (!v || v.value.trim() === '') continue;
      const list = parseDeviceList(v.value, exact);
      if (list.exclude) continue;
      if (present === undefined) {
        out.push(finding(this, { message: `${key}=${v.value} but ${whereNode(ctx)} has no RDMA devices (${root} is missing)`, where: whereEnv(v) }));
        continue;
      }
      const missing = missingDevices(list, present);
      if (missing.length > 0) {
        out.push(
          finding(this, {
            message: `${key}=${v.value}: no device ${missing.join(', ')} on ${whereNode(ctx)} (present: ${present.join(', ') || 'none'})`,
            where: whereEnv(v),
          }),
        );
        continue;
      }
      for (const e of list.entries) {
        if (e.port !== undefined && list.exact && !existsSync(join(root, e.name, 'ports', String(e.port)))) {
          out.push(finding(this, { message: `${key}: ${e.name} has no port ${e.port} on ${whereNode(ctx)}`, where: whereEnv(v) }));
        }
      }
    }
    return out;
  },
});

const IFNAME_VARS: { key: string; exact: boolean }[] = [
  { key: 'NCCL_SOCKET_IFNAME', exact: false },
  { key: 'GLOO_SOCKET_IFNAME', exact: true },
];

export const socketIfname = defineRule({
  id: 'fabric.socket-ifname',
  title: 'the socket interfaces NCCL and Gloo bootstrap over exist on this node',
  engines: ENGINES,
  severity: 'error',
  scope: 'local-node',
  evidence:
    'NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME naming an interface the node lacks hangs or fails the rendezvous ' +
    '(domain.md failure 8; seeds: dsv41 recipe enp1s0f0np0, mia-tp4 env enP7s7).',
  fix: 'use an interface listed by `ip -br link` on this node',
  check(ctx) {
    const root = join(ctx.sysfs, 'class', 'net');
    const present = listDir(root) ?? [];
    return IFNAME_VARS.flatMap(({ key, exact }) => {
      const v = ctx.env.get(key);
      if (!v || v.value.trim() === '') return [];
      const missing = missingDevices(parseDeviceList(v.value, exact), present);
      if (missing.length === 0) return [];
      return [
        finding(this, {
          message: `${key}=${v.value}: no interface ${missing.join(', ')} on ${whereNode(ctx)}`,
          where: whereEnv(v),
        }),
      ];
    });
  },
});
