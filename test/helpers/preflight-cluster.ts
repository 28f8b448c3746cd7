// What the tests of spark preflight --cluster share (test/preflight/preflight-cluster.test.ts,
// and the other scenarios in test/long/preflight-cluster-scenarios.test.ts): a run against a
// fake cluster of 4 nodes, the report's problems, and the hosts of the scenarios.
import assert from 'node:assert/strict';
import { statSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { runPreflight, type Finding, type PreflightReport } from '../../src/preflight/index.js';
import type { Io } from '../../src/terminal/io.js';
import { REVISION } from './preflight.js';
import { defaultHosts, type FakeCluster, type HostSpec } from './fake-cluster.js';
import type { Behavior } from './fake-node.js';

export function io(env: NodeJS.ProcessEnv): Io {
  return { stdout: () => {}, stderr: () => {}, env, cwd: process.cwd(), stderrIsTTY: false, color: false };
}

export async function check(
  c: FakeCluster,
  recipe?: string,
  cluster?: string,
  behavior: Behavior = {},
  only?: string[],
): Promise<PreflightReport> {
  return runPreflight(
    {
      recipe: recipe ?? c.recipe(c.dsv41Text),
      cluster: cluster ?? c.clusterFile(),
      sysfs: join(c.root, 'sys'),
      nodeTimeoutMs: 20_000,
      ...(only ? { only } : {}),
    },
    io(c.env(behavior)),
  );
}

export const problems = (r: PreflightReport) => r.findings.filter((f) => f.severity !== 'info');
export const dump = (r: PreflightReport) =>
  JSON.stringify({ findings: problems(r), skipped: r.skipped, nodes: r.nodes }, null, 1);

/** Four default hosts with host `i` changed. */
export function oneDiffers(i: number, change: Partial<HostSpec>): HostSpec[] {
  const hosts = defaultHosts();
  Object.assign(hosts[i]!, change);
  return hosts;
}

/** The report's only problem: an error of `rule` naming node `rank`, matching `message`. */
export function onlyError(r: PreflightReport, rule: string, rank: number, message: RegExp): Finding {
  const got = problems(r);
  assert.equal(got.length, 1, dump(r));
  const f = got[0]!;
  assert.equal(f.rule, rule, dump(r));
  assert.equal(f.severity, 'error');
  assert.deepEqual(f.node, { rank, host: `spark${rank + 1}` });
  assert.match(f.message, message);
  assert.match(f.message + f.where, new RegExp(`node ${rank} \\(spark${rank + 1}\\)`));
  return f;
}

/** The second of the snapshot's three shards on the NAS `nas`. */
export const shard = (nas: string) =>
  join(
    nas,
    'hf',
    'hub',
    'models--deepseek-ai--DeepSeek-V4.1-Flash',
    'snapshots',
    REVISION,
    'model-00002-of-00003.safetensors',
  );

/** A node's own NAS with the second shard 100 bytes short. */
export const truncatedShard = (nas: string) => truncateSync(shard(nas), statSync(shard(nas)).size - 100);

/** Three nodes in a ring: one point-to-point subnet per pair, and a LAN with the default route. */
export function ring(dist: boolean): HostSpec[] {
  const links: Record<string, string[]> = {
    spark1: ['10.0.22.1/24', '10.0.23.1/24'],
    spark2: ['10.0.22.2/24', '10.0.33.2/24'],
    spark3: ['10.0.23.3/24', '10.0.33.3/24'],
  };
  return defaultHosts(3).map((h, i) => {
    const lan = `10.0.0.${i + 1}`;
    const own = [...links[h.name]!, `${lan}/24`];
    const spec: HostSpec = {
      ...h,
      fabric: links[h.name]![0]!,
      addresses: own,
      routes: [
        ...own.map((a, k) => ({ iface: `eth${k}`, dest: a.replace(/\.\d+\/24$/, '.0/24') })),
        { iface: 'eth2', dest: 'default', via: '10.0.0.254' },
      ],
    };
    if (dist) spec.dist = lan;
    return spec;
  });
}

export const RING_NCCL = {
  NCCL_IB_ADDR_RANGE: '10.0.0.0/16',
  NCCL_SOCKET_IFNAME: 'enP7s7',
  GLOO_SOCKET_IFNAME: 'enP7s7',
};

/** The dsv41 recipe on 3 nodes (TP 3 needs the padding adapter; only the rendezvous is checked here). */
export const three = (c: FakeCluster) =>
  c.recipe(
    c.dsv41Text
      .replace('required_nodes = 4', 'required_nodes = 3')
      .replace('tensor_parallel_size = 4', 'tensor_parallel_size = 3'),
  );
