// Fake sysfs trees for GID tests: /class/infiniband/<hca>/ports/<p>/{gids,gid_attrs/types,
// gid_attrs/ndevs}/<i>, link_layer and state, as the kernel lays them out.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './tmp.js';

/** [gid, type, ndev]; type undefined: the types file is absent (unreadable on real sysfs). */
export type FakeGid = [gid: string, type?: string, ndev?: string];

export interface FakePort {
  gids: FakeGid[];
  linkLayer?: string;
  state?: string;
}

export const ZERO = '0000:0000:0000:0000:0000:0000:0000:0000';
export const FE80 = 'fe80:0000:0000:0000:0e42:a1ff:fe2b:6a30';
export const V1 = 'IB/RoCE v1';
export const V2 = 'RoCE v2';

/** ::ffff:a.b.c.d as sysfs prints it. */
export function mapped(ipv4: string): string {
  const b = ipv4.split('.').map(Number);
  const hex = (x: number, y: number): string => ((x << 8) | y).toString(16).padStart(4, '0');
  return `0000:0000:0000:0000:0000:ffff:${hex(b[0]!, b[1]!)}:${hex(b[2]!, b[3]!)}`;
}

/** The typical table: 0 fe80 v1, 1 fe80 v2, 2 ::ffff:IP v1, 3 ::ffff:IP v2, then zeros. */
export function typical(ip: string, ndev = 'enp1s0f0np0'): FakePort {
  return {
    linkLayer: 'Ethernet',
    state: '4: ACTIVE',
    gids: [[FE80, V1, ndev], [FE80, V2, ndev], [mapped(ip), V1, ndev], [mapped(ip), V2, ndev], [ZERO], [ZERO]],
  };
}

export function buildSysfs(devices: Record<string, Record<number, FakePort>>, root?: string): string {
  const base = root ?? tempDir('spark-sysfs-');
  for (const [hca, ports] of Object.entries(devices)) {
    for (const [port, spec] of Object.entries(ports)) {
      const dir = join(base, 'class', 'infiniband', hca, 'ports', String(port));
      for (const sub of ['gids', 'gid_attrs/types', 'gid_attrs/ndevs']) mkdirSync(join(dir, sub), { recursive: true });
      if (spec.linkLayer !== undefined) writeFileSync(join(dir, 'link_layer'), spec.linkLayer + '\n');
      if (spec.state !== undefined) writeFileSync(join(dir, 'state'), spec.state + '\n');
      spec.gids.forEach(([gid, type, ndev], i) => {
        writeFileSync(join(dir, 'gids', String(i)), gid + '\n');
        if (type !== undefined) writeFileSync(join(dir, 'gid_attrs', 'types', String(i)), type + '\n');
        if (ndev !== undefined) writeFileSync(join(dir, 'gid_attrs', 'ndevs', String(i)), ndev + '\n');
      });
    }
  }
  return base;
}
