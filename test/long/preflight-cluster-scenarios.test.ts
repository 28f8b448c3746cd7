// The other scenarios of spark preflight --cluster against a fake cluster of 4 nodes, beside the
// representatives npm test runs (test/preflight/preflight-cluster.test.ts): each way a node can
// differ, judged alone; a hung node cut off at --node-timeout (15 s by design); the rendezvous
// of a ring of 3 nodes with and without dist_addr.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runPreflight } from '../../src/preflight/index.js';
import { REVISION } from '../helpers/preflight.js';
import { defaultHosts, fakeCluster } from '../helpers/fake-cluster.js';
import {
  check,
  dump,
  io,
  oneDiffers,
  onlyError,
  problems,
  RING_NCCL,
  ring,
  three,
  truncatedShard,
} from '../helpers/preflight-cluster.js';

test('a node whose image differs, or lacks it: an error naming that node', async () => {
  // One cluster, two nodes wrong in two ways: each is its own error, naming only its node.
  const hosts = defaultHosts();
  hosts[2]!.imageId = 'sha256:' + 'cd'.repeat(32);
  hosts[1]!.imageId = null;
  const r = await check(await fakeCluster(hosts));
  const got = problems(r);
  assert.deepEqual(
    got.map((f) => [f.rule, f.node?.rank]),
    [
      ['nodes.same-image', 1],
      ['nodes.same-image', 2],
    ],
    dump(r),
  );
  onlyError(
    { ...r, findings: got.filter((f) => f.node?.rank === 2) },
    'nodes.same-image',
    2,
    /production-1\.6 on node 2 \(spark3\) is sha256:cdcdcdcdcdcd, on the head node 0 \(spark1\) sha256:abababababab/,
  );
  onlyError(
    { ...r, findings: got.filter((f) => f.node?.rank === 1) },
    'nodes.same-image',
    1,
    /is not on node 1 \(spark2\): docker would pull it at launch/,
  );
});

test('a node on another driver, CUDA or kernel: an error naming that node and both versions', async () => {
  // One cluster, a node off in each of the three: three errors, each naming only its node.
  const hosts = defaultHosts();
  hosts[3]!.driver = '580.82.07';
  hosts[1]!.cuda = '12.9';
  hosts[2]!.kernel = '6.8.0-1010-nvidia';
  const r = await check(await fakeCluster(hosts));
  const got = problems(r);
  assert.deepEqual(
    got.map((f) => [f.rule, f.node?.rank]).sort(),
    [
      ['nodes.same-versions', 1],
      ['nodes.same-versions', 2],
      ['nodes.same-versions', 3],
    ],
    dump(r),
  );
  const of = (rank: number) => ({ ...r, findings: got.filter((f) => f.node?.rank === rank) });
  onlyError(
    of(3),
    'nodes.same-versions',
    3,
    /^node 3 \(spark4\) runs NVIDIA driver 580\.82\.07; the head node 0 \(spark1\) runs NVIDIA driver 580\.95\.05$/,
  );
  onlyError(of(1), 'nodes.same-versions', 1, /runs CUDA 12\.9; the head .* runs CUDA 13\.0$/);
  onlyError(
    of(2),
    'nodes.same-versions',
    2,
    /runs kernel 6\.8\.0-1010-nvidia; the head .* runs kernel 6\.11\.0-1016-nvidia$/,
  );
});

test('nodes.spark-version: nodes that agree with each other but not with this machine are each named; a bundled build of this version is this version', async () => {
  const old = await check(await fakeCluster(defaultHosts().map((h) => ({ ...h, spark: { version: '0.0.9' } }))));
  assert.deepEqual(
    problems(old).map((f) => [f.rule, f.node?.rank]),
    [0, 1, 2, 3].map((rank) => ['nodes.spark-version', rank]),
    dump(old),
  );
  assert.match(problems(old)[0]!.fix, /spark fanout install/);
  const bundled = await check(
    await fakeCluster(defaultHosts().map((h) => ({ ...h, spark: { version: '0.1.0+c0ffee001122' } }))),
  );
  assert.deepEqual(problems(bundled), [], dump(bundled));
});

test('a node whose snapshot is truncated, or at another revision: an error naming that node', async () => {
  const other = 'e'.repeat(40);
  // One cluster: node 3's shard is cut short, node 1's copy was downloaded at another commit
  // (refs/main points there). Each is its own error, naming only its node.
  const hosts = defaultHosts();
  hosts[3]!.ownNas = truncatedShard;
  hosts[1]!.ownNas = (nas) => {
    const model = join(nas, 'hf', 'hub', 'models--deepseek-ai--DeepSeek-V4.1-Flash');
    renameSync(join(model, 'snapshots', REVISION), join(model, 'snapshots', other));
    writeFileSync(join(model, 'refs', 'main'), other);
  };
  const r = await check(await fakeCluster(hosts));
  const f = onlyError(
    { ...r, findings: problems(r).filter((e) => e.node?.rank === 3) },
    'snapshot.complete',
    3,
    /model-00002-of-00003\.safetensors.*\[E_SHARD_TRUNCATED\] on node 3 \(spark4\)$/,
  );
  assert.match(
    f.where,
    /\/nas\/hf\/hub\/models--deepseek-ai--DeepSeek-V4\.1-Flash\/snapshots\/dba1be0a\w+\/model-00002-of-00003\.safetensors$/,
  );
  const errors = problems(r).filter((e) => e.node?.rank !== 3);
  // The recipe's SPARK_ENGRAM_DIR names dba1be0a…, which node 1 lacks; and its model is another revision.
  assert.deepEqual(
    errors.map((e) => [e.rule, e.node?.rank]).sort(),
    [
      ['snapshot.engram-dir', 1],
      ['snapshot.same-revision', 1],
    ],
    dump(r),
  );
  assert.match(
    errors.find((e) => e.rule === 'snapshot.same-revision')!.message,
    new RegExp(
      `^node 1 \\(spark2\\) has revision ${other} of the model, the head node 0 \\(spark1\\) has ${REVISION}$`,
    ),
  );
});

test('a node without room for its pack, or whose head port is taken, or without a usable GID: an error naming it', async () => {
  // Before packing no node has its pack directory yet (two rules say so on each); node 2 has no room for it.
  const tight = await fakeCluster(oneDiffers(2, { freeKb: 1024 }));
  const full = await check(tight, tight.recipe(tight.packedText));
  const notYet = ['snapshot.engram-dir', 'mounts.host-path'];
  for (const rule of notYet)
    assert.deepEqual(
      problems(full)
        .filter((f) => f.rule === rule)
        .map((f) => f.node?.rank),
      [0, 1, 2, 3],
      dump(full),
    );
  const room = problems(full).filter((f) => !notYet.includes(f.rule));
  assert.deepEqual(
    room.map((f) => [f.rule, f.severity, f.node?.rank]),
    [['pack.free-space', 'error', 2]],
    dump(full),
  );
  assert.match(room[0]!.message, /\/engram has 1\.00 MiB free; one rank's pack of 4 needs \d/);

  // One cluster: node 0's serving port is taken, node 3 has no usable GID; each names its node.
  const hosts = defaultHosts();
  hosts[0]!.listening = ['serving'];
  hosts[3]!.gids = 'link-local-only';
  const taken = await fakeCluster(hosts);
  const r = await check(taken, taken.recipe(taken.dsv41Text));
  onlyError(
    { ...r, findings: problems(r).filter((e) => e.node?.rank !== 3) },
    'node.ports',
    0,
    new RegExp(`^port ${taken.servingPort}, the serving port, is in use on node 0 \\(spark1\\)$`),
  );
  const errors = problems(r).filter((e) => e.node?.rank === 3);
  assert.ok(errors.length >= 1 && errors.every((e) => e.rule === 'fabric.gid'), dump(r));
  for (const hca of ['rocep1s0f0', 'roceP2p1s0f0']) {
    const re = new RegExp(
      `^${hca} port 1: no IPv4 RoCE v2 in 192\\.168\\.200\\.0/24 GID entry; .* on node 3 \\(spark4\\)$`,
    );
    assert.ok(
      errors.some((e) => re.test(e.message)),
      dump(r),
    );
  }
});

test('a node whose clock is an hour off: an error naming it', async () => {
  const r = await check(await fakeCluster(oneDiffers(1, { clockOffset: 3600 })));
  // Whole seconds on both sides (the fake date), sampled at different moments: 3600 ± 2.
  const f = onlyError(
    r,
    'nodes.clock-skew',
    1,
    /^node 1 \(spark2\)'s clock is (\d+\.\d) s off the head's \(node 0 \(spark1\)\)$/,
  );
  const off = Number(/is (\d+\.\d) s/.exec(f.message)![1]);
  assert.ok(Math.abs(off - 3600) <= 2, f.message);
});

test('an unreachable node is one error naming it; the others are still checked', async () => {
  const c = await fakeCluster(oneDiffers(3, { imageId: null }));
  const r = await check(c, undefined, undefined, {
    'spark2 ssh': { exit: 255, stderr: 'ssh: connect to host spark2 port 22: Connection timed out\n' },
  });
  const errors = problems(r);
  assert.deepEqual(
    errors.map((e) => [e.rule, e.node?.rank]),
    [
      ['nodes.reachable', 1],
      ['nodes.same-image', 3],
    ],
    dump(r),
  );
  assert.match(
    errors[0]!.message,
    /^node 1 \(spark2\) did not answer: ssh failed: ssh: connect to host spark2 port 22: Connection timed out; its node checks did not run$/,
  );
  assert.deepEqual(
    r.nodes.map((n) => n.via),
    ['probe', null, 'probe', 'probe'],
  );
  // Node rules ran on the three that answered.
  assert.ok(r.ran.includes('fabric.gid') && r.ran.includes('snapshot.complete'));
});

test('a node that hangs is cut off at --node-timeout, named, and the rest checked', async () => {
  const c = await fakeCluster();
  const began = Date.now();
  const r = await runPreflight(
    // The healthy nodes' probes must answer within the bound on a busy 2-core machine too (6 s
    // was not enough under a load of 15).
    { recipe: c.recipe(c.dsv41Text), cluster: c.clusterFile(), sysfs: join(c.root, 'sys'), nodeTimeoutMs: 15_000 },
    io(c.env({ 'spark3 ssh': { sleep: true } })),
  );
  assert.ok(Date.now() - began < 45_000);
  const errors = problems(r);
  assert.deepEqual(
    errors.map((e) => [e.rule, e.node?.rank]),
    [['nodes.reachable', 2]],
    dump(r),
  );
  assert.match(errors[0]!.message, /did not answer: no answer within 15 s/);
});

test("a node's [nodes.env] is that node's environment: its own interface names are checked on it", async () => {
  const c = await fakeCluster();
  // The recipe's [env] names enp1s0f0np0; spark3's override names one it lacks, spark2's one it has.
  const cluster = c.clusterFile({
    nodeEnv: { spark3: { NCCL_SOCKET_IFNAME: 'enp9s9' }, spark2: { GLOO_SOCKET_IFNAME: 'enP7s7' } },
  });
  const r = await check(c, undefined, cluster, {}, ['fabric.socket-ifname']);
  const f = onlyError(
    r,
    'fabric.socket-ifname',
    2,
    /^NCCL_SOCKET_IFNAME=enp9s9: no interface enp9s9 on node 2 \(spark3\) \(present: enP7s7, enp1s0f0np0\)$/,
  );
  const line = readFileSync(cluster, 'utf8').split('\n').indexOf('NCCL_SOCKET_IFNAME = "enp9s9"') + 1;
  assert.equal(f.where, `${cluster}:${line}`);
});

test('a ring without dist_addr: the rendezvous rules name the nodes that cannot reach it', async () => {
  const c = await fakeCluster(ring(false));
  const r = await check(c, three(c), c.clusterFile({ nccl: RING_NCCL }), {}, ['rendezvous']);
  const subnet = problems(r).filter((f) => f.rule === 'rendezvous.subnet');
  assert.ok(
    subnet.every((f) => f.severity === 'error'),
    dump(r),
  );
  const toHead = subnet.filter((f) =>
    /cannot reach the rendezvous 10\.0\.22\.1:\d+ on the head node 0 \(spark1\)/.test(f.message),
  );
  assert.deepEqual(
    toHead.map((f) => f.node),
    [{ rank: 2, host: 'spark3' }],
    dump(r),
  );
  assert.match(
    toHead[0]!.message,
    /^node 2 \(spark3\) cannot reach the rendezvous 10\.0\.22\.1:\d+ on the head node 0 \(spark1\) \(its fabric_addr; no dist_addr\): its fabric_addr 10\.0\.23\.3 is outside 10\.0\.22\.1\/24$/,
  );
  // On the nodes themselves: spark3 reaches 10.0.22.1 only through its LAN gateway.
  const route = problems(r).filter((f) => f.rule === 'rendezvous.route');
  assert.ok(
    route.some(
      (f) =>
        f.severity === 'warn' &&
        f.node?.rank === 2 &&
        /reaches only through its default gateway the rendezvous 10\.0\.22\.1/.test(f.message),
    ),
    dump(r),
  );
  // Without a prefix in the file, /24 is assumed and said.
  const bare = await check(c, three(c), c.clusterFile({ nccl: RING_NCCL, prefixes: false }), {}, ['rendezvous.subnet']);
  assert.match(
    problems(bare).find((f) => f.node?.rank === 2)!.message,
    /\(\/24 assumed: write fabric_addr = "10\.0\.22\.1\/N" to say otherwise\)/,
  );
});

test('a ring with dist_addr on the LAN: every node reaches the rendezvous, nothing to report', async () => {
  const c = await fakeCluster(ring(true));
  const r = await check(c, three(c), c.clusterFile({ nccl: RING_NCCL }), {}, ['rendezvous']);
  assert.deepEqual(problems(r), [], dump(r));
  assert.deepEqual(r.ran, ['rendezvous.subnet', 'rendezvous.route']);
});
