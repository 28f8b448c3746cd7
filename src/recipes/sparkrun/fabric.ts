// The fabric address of each node of a sparkrun cluster, asked of the node itself over ssh,
// all nodes at once: the IPv4 address of the interface its transfer_interface names. `cx7` is
// the ConnectX-7 (an interface backed by an RDMA device: sysfs class/net/IF/device/infiniband);
// `mgmt` is the interface of the default route. A node that does not answer, or has no such
// address, is one error saying how to give the address instead.
import { SparkError } from '../../errors/errors.js';
import { capture, lastLine, nodeCommand, type Tools } from '../../remote/ssh.js';
import { shTemplate } from '../../remote/sh-template.js';
import type { SparkrunCluster } from './cluster.js';

export interface FabricAddress {
  iface: string;
  addr: string;
  prefix: number;
}

const PROBE = shTemplate(import.meta.url, 'fabric-probe.sh');

/** The probe (fabric-probe.sh): RDMA-backed interfaces, IPv4 addresses, the routing table. */
export function probeScript(sysfs: string): string {
  return PROBE.fill({ NET: `${sysfs}/class/net` });
}

/** The address the transfer interface names, from the probe's output; a reason when there is none. */
export function pickAddress(output: string, which: SparkrunCluster['transferInterface']): FabricAddress | string {
  const rdma = new Set<string>();
  const addrs: FabricAddress[] = [];
  let defaultIface: string | undefined;
  let inRoutes = false;
  for (const line of output.split('\n')) {
    if (line === 'route') {
      inRoutes = true;
      continue;
    }
    if (inRoutes) {
      const f = line.trim().split(/\s+/);
      // Iface Destination Gateway Flags RefCnt Use Metric Mask …: the default route has 0/0.
      if (f.length >= 8 && f[1] === '00000000' && f[7] === '00000000') defaultIface ??= f[0];
      continue;
    }
    const r = /^rdma (\S+)$/.exec(line);
    if (r) rdma.add(r[1]!);
    const a = /^\d+:\s+([^\s@:]+)\S*\s+inet\s+(\d+\.\d+\.\d+\.\d+)\/(\d+)/.exec(line);
    if (a) addrs.push({ iface: a[1]!, addr: a[2]!, prefix: Number(a[3]) });
  }
  if (which === 'mgmt') {
    if (defaultIface === undefined) return 'it has no default route, so its management interface is unknown';
    return (
      addrs.find((a) => a.iface === defaultIface) ??
      `its management interface ${defaultIface} (the default route's) has no IPv4 address`
    );
  }
  if (rdma.size === 0) return 'it has no interface backed by an RDMA device (ConnectX-7)';
  const fabric = addrs.filter((a) => rdma.has(a.iface)).sort((x, y) => x.iface.localeCompare(y.iface));
  return fabric[0] ?? `none of its ConnectX-7 interfaces (${[...rdma].sort().join(', ')}) has an IPv4 address`;
}

export interface ProbeOptions {
  tools: Pick<Tools, 'ssh' | 'sshOptions'>;
  env: NodeJS.ProcessEnv;
  /** sysfs root on the nodes (tests point it elsewhere). */
  sysfs?: string;
  timeoutMs?: number;
}

/** Every node's fabric address, in rank order; the first node that cannot say is the error. */
export async function probeFabric(c: SparkrunCluster, o: ProbeOptions): Promise<FabricAddress[]> {
  const script = probeScript(o.sysfs ?? '/sys');
  const answers = await Promise.all(
    c.hosts.map(async ({ host }) => {
      const r = await capture(nodeCommand(host, script, o.tools), o.env, o.timeoutMs ?? 30_000);
      if (r.code !== 0) return `it did not answer over ssh (${lastLine(r.stderr) || `exit ${r.code ?? r.signal}`})`;
      return pickAddress(r.stdout, c.transferInterface);
    }),
  );
  const bad = answers.findIndex((a) => typeof a === 'string');
  if (bad >= 0) {
    const h = c.hosts[bad]!;
    const where = h.line === undefined ? c.file : `${c.file}:${h.line}`;
    throw new SparkError(
      'E_CLUSTER',
      `${where}: sparkrun stores no fabric addresses and spark could not find ${h.host}'s on the node (transfer_interface ${c.transferInterface}): ${answers[bad] as string}; ` +
        'give the addresses in a spark cluster file (one [[nodes]] table per host with host and fabric_addr, docs/recipes.md) and pass its path to --cluster',
      { path: c.file, host: h.host },
    );
  }
  return answers as FabricAddress[];
}
