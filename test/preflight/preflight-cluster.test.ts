// spark preflight --cluster against a fake cluster of 4 nodes (test/helpers/fake-cluster.ts):
// every node is asked over ssh at once; one node differing in one way is one error naming that
// node; an unreachable node is named while the others are still checked. One run here holds a
// fault of each kind on the nodes it concerns; each alone, a hung node and the rings of 3 nodes
// are in test/long/preflight-cluster-scenarios.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { preflightRules } from '../../src/preflight/index.js';
import { REVISION } from '../helpers/preflight.js';
import { defaultHosts, fakeCluster, IMAGE_ID, type HostSpec } from '../helpers/fake-cluster.js';
import {
  check,
  dump,
  onlyError,
  problems,
  RING_NCCL,
  ring,
  three,
  truncatedShard,
} from '../helpers/preflight-cluster.js';

const RULES = await preflightRules();

test('four nodes that agree: every node checked over ssh, every rule ran, no error, no warning', async () => {
  const c = await fakeCluster();
  const r = await check(c);
  assert.deepEqual(problems(r), [], dump(r));
  assert.equal(r.mode, 'cluster');
  assert.deepEqual(
    r.nodes.map((n) => [n.rank, n.host, n.via]),
    [
      [0, 'spark1', 'probe'],
      [1, 'spark2', 'probe'],
      [2, 'spark3', 'probe'],
      [3, 'spark4', 'probe'],
    ],
  );
  assert.deepEqual(r.skipped, []);
  assert.deepEqual(r.family, { name: 'dsv41', from: 'config.json' });
  // Each node answered over ssh: a hello and the probe, four hosts.
  const ssh = c.fake.calls().filter((x) => x.prog === 'ssh');
  assert.deepEqual([...new Set(ssh.map((x) => x.host))].sort(), ['spark1', 'spark2', 'spark3', 'spark4']);
  assert.equal(ssh.length, 8);
});

test('one cluster with a fault of each kind on its own node: each rule names only the node it concerns', async () => {
  // Node 0's serving port is taken; node 1 does not answer; node 2 has another image, driver
  // and shard, and a [nodes.env] interface it lacks; node 3's clock is an hour off, its model
  // is another revision and it has no usable GID.
  const other = 'e'.repeat(40);
  const hosts = defaultHosts();
  hosts[0]!.listening = ['serving'];
  Object.assign(hosts[2]!, { imageId: 'sha256:' + 'cd'.repeat(32), driver: '580.82.07', ownNas: truncatedShard });
  Object.assign(hosts[3]!, { clockOffset: 3600, gids: 'link-local-only' });
  hosts[3]!.ownNas = (nas) => {
    const model = join(nas, 'hf', 'hub', 'models--deepseek-ai--DeepSeek-V4.1-Flash');
    renameSync(join(model, 'snapshots', REVISION), join(model, 'snapshots', other));
    writeFileSync(join(model, 'refs', 'main'), other);
  };
  const c = await fakeCluster(hosts);
  const cluster = c.clusterFile({ nodeEnv: { spark3: { NCCL_SOCKET_IFNAME: 'enp9s9' } } });
  const r = await check(c, undefined, cluster, {
    'spark2 ssh': { exit: 255, stderr: 'ssh: connect to host spark2 port 22: Connection timed out\n' },
  });
  const got = problems(r);
  assert.deepEqual(
    [...new Set(got.map((f) => `${f.node?.rank} ${f.rule}`))].sort(),
    [
      '0 node.ports',
      '1 nodes.reachable',
      '2 fabric.socket-ifname',
      '2 nodes.same-image',
      '2 nodes.same-versions',
      '2 snapshot.complete',
      '3 fabric.gid',
      '3 nodes.clock-skew',
      '3 snapshot.engram-dir',
      '3 snapshot.same-revision',
    ],
    dump(r),
  );
  const one = (rank: number, rule: string, message: RegExp) =>
    onlyError({ ...r, findings: got.filter((f) => f.node?.rank === rank && f.rule === rule) }, rule, rank, message);
  one(0, 'node.ports', new RegExp(`^port ${c.servingPort}, the serving port, is in use on node 0 \\(spark1\\)$`));
  one(
    1,
    'nodes.reachable',
    /^node 1 \(spark2\) did not answer: ssh failed: ssh: connect to host spark2 port 22: Connection timed out; its node checks did not run$/,
  );
  assert.deepEqual(
    r.nodes.map((n) => n.via),
    ['probe', null, 'probe', 'probe'],
  );
  one(
    2,
    'nodes.same-image',
    /production-1\.6 on node 2 \(spark3\) is sha256:cdcdcdcdcdcd, on the head node 0 \(spark1\) sha256:abababababab/,
  );
  one(
    2,
    'nodes.same-versions',
    /^node 2 \(spark3\) runs NVIDIA driver 580\.82\.07; the head node 0 \(spark1\) runs NVIDIA driver 580\.95\.05$/,
  );
  one(2, 'snapshot.complete', /model-00002-of-00003\.safetensors.*\[E_SHARD_TRUNCATED\] on node 2 \(spark3\)$/);
  const ifname = one(
    2,
    'fabric.socket-ifname',
    /^NCCL_SOCKET_IFNAME=enp9s9: no interface enp9s9 on node 2 \(spark3\) \(present: enP7s7, enp1s0f0np0\)$/,
  );
  const line = readFileSync(cluster, 'utf8').split('\n').indexOf('NCCL_SOCKET_IFNAME = "enp9s9"') + 1;
  assert.equal(ifname.where, `${cluster}:${line}`);
  const skew = one(
    3,
    'nodes.clock-skew',
    /^node 3 \(spark4\)'s clock is (\d+\.\d) s off the head's \(node 0 \(spark1\)\)$/,
  );
  assert.ok(Math.abs(Number(/is (\d+\.\d) s/.exec(skew.message)![1]) - 3600) <= 2, skew.message);
  one(
    3,
    'snapshot.same-revision',
    new RegExp(
      `^node 3 \\(spark4\\) has revision ${other} of the model, the head node 0 \\(spark1\\) has ${REVISION}$`,
    ),
  );
  const gid = got.filter((f) => f.node?.rank === 3 && f.rule === 'fabric.gid');
  assert.ok(
    gid.some((f) =>
      /^rocep1s0f0 port 1: no IPv4 RoCE v2 in 192\.168\.200\.0\/24 GID entry; .* on node 3 \(spark4\)$/.test(f.message),
    ),
    dump(r),
  );
});

test('spark on the nodes: one at another version is an error naming it; the others answer through spark itself', async () => {
  const hosts: HostSpec[] = defaultHosts().map((h) => ({ ...h, spark: 'real' }));
  hosts[2]!.spark = { version: '0.0.9' };
  const c = await fakeCluster(hosts);
  const r = await check(c);
  // nodes.spark-version names the same node against this machine's spark.
  const mine = r.findings.filter((f) => f.rule === 'nodes.spark-version');
  assert.deepEqual(
    mine.map((f) => [f.severity, f.message]),
    [['error', 'node 2 (spark3) runs spark 0.0.9, this machine runs 0.1.0']],
  );
  onlyError(
    { ...r, findings: r.findings.filter((f) => f.rule !== 'nodes.spark-version') },
    'nodes.same-spark',
    2,
    /^node 2 \(spark3\) runs spark 0\.0\.9, the head runs 0\.1\.0$/,
  );
  // Real spark answered for its node; the stand-in could not, and the probe checked that node.
  assert.deepEqual(
    r.nodes.map((n) => n.via),
    ['spark', 'spark', 'probe', 'spark'],
  );
  assert.match(r.nodes[2]!.notes.join(), /could not answer .*the sh probe checked it instead/);
});

test("rendezvous.route: a dist_addr that is not its node's, or on no route, is an error naming the node", async () => {
  const hosts = ring(true);
  hosts[1]!.dist = '10.0.0.9'; // a typo: spark2 is 10.0.0.2
  hosts[2]!.routes = hosts[2]!.routes!.filter((x) => x.dest !== 'default' && !x.dest.startsWith('10.0.0.'));
  const c = await fakeCluster(hosts);
  const r = await check(c, three(c), c.clusterFile({ nccl: RING_NCCL }), {}, ['rendezvous.route']);
  const errors = problems(r).filter((f) => f.severity === 'error');
  assert.ok(
    errors.some(
      (f) =>
        f.node?.rank === 1 &&
        /^10\.0\.0\.9 \(dist_addr of node 1 \(spark2\)\) is not an address of that node \(it has 10\.0\.22\.2, 10\.0\.33\.2, 10\.0\.0\.2\)$/.test(
          f.message,
        ),
    ),
    dump(r),
  );
  assert.ok(
    errors.some(
      (f) =>
        f.node?.rank === 2 &&
        /^node 2 \(spark3\) has no route to the rendezvous 10\.0\.0\.1:\d+ on the head/.test(f.message),
    ),
    dump(r),
  );
});

test("every cluster rule has a failing case in this file (the engine libraries' in preflight-engine-lib.test.ts)", () => {
  const text =
    readFileSync(new URL(import.meta.url), 'utf8') +
    readFileSync(new URL('./preflight-engine-lib.test.js', import.meta.url), 'utf8');
  for (const r of RULES.filter((x) => x.scope === 'cluster')) assert.ok(text.includes(`'${r.id}'`), r.id);
});

test('the image id of the default hosts is what docker reports', () => {
  assert.match(IMAGE_ID, /^sha256:[0-9a-f]{64}$/);
});
