// Launch plans on a ring of three nodes (recipes/clusters/3node-ring.toml): the rendezvous is
// the head's dist_addr on every node and each engine advertises its own node's; per-node env;
// and preflight and launch reaching the same conclusion from the same files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cli } from '../helpers/cli.js';
import { AIDEN16, EUGR, REV, hfCacheWith, writeCluster, writeRecipe } from '../helpers/launch-files.js';
import { defaultHosts, fakeCluster, type HostSpec } from '../helpers/fake-cluster.js';
import { runPreflight } from '../../src/preflight/index.js';

interface PlanDoc {
  rendezvous: string;
  nodes: { rank: number; host: string; argv: string[]; env: Record<string, string>; distAddr: string }[];
  notes: string[];
}

const RING = 'recipes/clusters/3node-ring.toml';
const valueAfter = (argv: string[], flag: string) => argv[argv.lastIndexOf(flag) + 1];
const onThree = (file: string) =>
  writeRecipe(
    readFileSync(file, 'utf8')
      .replace(/required_nodes = \d/, 'required_nodes = 3')
      .replace(/tensor_parallel_size = \d/, 'tensor_parallel_size = 3'),
  );

async function plan(recipe: string, cluster: string, extra: string[] = []): Promise<PlanDoc> {
  const r = await cli(['launch', recipe, '--cluster', cluster, '--dry-run', '--json', '--revision', REV, ...extra], {
    HOME: '/home/op',
  });
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as PlanDoc;
}

test('SGLang on the 3-node ring: every --dist-init-addr is the head dist_addr; SGLANG_HOST_IP is each node own', async () => {
  const doc = await plan(onThree(AIDEN16), RING);
  assert.equal(doc.rendezvous, '10.0.0.1:20000');
  assert.deepEqual(
    doc.nodes.map((n) => n.host),
    ['spark1', 'spark2', 'spark3'],
  );
  for (const n of doc.nodes) {
    assert.equal(valueAfter(n.argv, '--dist-init-addr'), '10.0.0.1:20000', `node ${n.rank}`);
    assert.equal(valueAfter(n.argv, '--nnodes'), '3');
    assert.equal(valueAfter(n.argv, '--node-rank'), String(n.rank));
    assert.equal(n.env.SGLANG_HOST_IP, `10.0.0.${n.rank + 1}`);
    assert.ok(n.argv.includes(`SGLANG_HOST_IP=10.0.0.${n.rank + 1}`));
    assert.equal(n.distAddr, `10.0.0.${n.rank + 1}`);
    assert.equal(n.env.VLLM_HOST_IP, undefined);
  }
});

test('vLLM on the 3-node ring: every --master-addr is the head dist_addr; VLLM_HOST_IP is each node own', async () => {
  const doc = await plan(onThree(EUGR), RING);
  for (const n of doc.nodes) {
    assert.equal(valueAfter(n.argv, '--master-addr'), '10.0.0.1', `node ${n.rank}`);
    assert.equal(valueAfter(n.argv, '--master-port'), '20000');
    assert.equal(valueAfter(n.argv, '--nnodes'), '3');
    assert.equal(n.argv.includes('--headless'), n.rank !== 0);
    assert.equal(n.env.VLLM_HOST_IP, `10.0.0.${n.rank + 1}`);
    assert.ok(n.argv.includes(`VLLM_HOST_IP=10.0.0.${n.rank + 1}`));
    assert.equal(n.env.SGLANG_HOST_IP, undefined);
    assert.equal(n.env.NCCL_SOCKET_IFNAME, 'enP7s7');
  }
});

test('without dist_addr the fabric address is the rendezvous; [nodes.env] wins on its node only; a shared VLLM_HOST_IP is replaced', async () => {
  const cache = hfCacheWith('deepseek-ai/DeepSeek-V4-Flash-0731', REV);
  const text = readFileSync(RING, 'utf8')
    .replace(/\ndist_addr = .*/g, '')
    .replace('# [nodes.env]\n# NCCL_SOCKET_IFNAME = "enP2p1s0"', '[nodes.env]\nNCCL_SOCKET_IFNAME = "enP2p1s0"')
    .replace('hf_cache = "/home/spark/.cache/huggingface"', `hf_cache = "${cache}"`);
  const file = join(
    writeCluster({ name: 'x', hosts: ['a'], fabric: ['10.0.0.1'], hfCache: cache }),
    '..',
    'ring-nodist.toml',
  );
  (await import('node:fs')).writeFileSync(file, text);
  const recipe = writeRecipe(
    readFileSync(onThree(EUGR), 'utf8').replace(
      'HF_HUB_OFFLINE = "1"',
      'HF_HUB_OFFLINE = "1"\nVLLM_HOST_IP = "10.0.0.9"',
    ),
  );
  const doc = await plan(recipe, file);
  assert.equal(doc.rendezvous, '10.0.22.1:20000');
  assert.deepEqual(
    doc.nodes.map((n) => [valueAfter(n.argv, '--master-addr'), n.env.VLLM_HOST_IP]),
    [
      ['10.0.22.1', '10.0.22.1'],
      ['10.0.22.1', '10.0.22.2'],
      ['10.0.22.1', '10.0.23.3'],
    ],
  );
  assert.deepEqual(
    doc.nodes.map((n) => n.env.NCCL_SOCKET_IFNAME),
    ['enP7s7', 'enP7s7', 'enP2p1s0'],
  );
  assert.ok(
    doc.notes.includes('NCCL_SOCKET_IFNAME: node 2 [nodes.env] "enP2p1s0" wins over cluster [nccl] "enP7s7"'),
    doc.notes.join('\n'),
  );
  assert.ok(
    doc.notes.some((n) => n.startsWith('VLLM_HOST_IP is set per node by the launcher')),
    doc.notes.join('\n'),
  );
});

test('on a ring without dist_addr, spark launch stops at its preflight, naming the node that cannot reach the rendezvous', async () => {
  const hosts: HostSpec[] = defaultHosts(3).map((h, i) => ({
    ...h,
    fabric: ['10.0.22.1/24', '10.0.22.2/24', '10.0.23.3/24'][i]!,
  }));
  const c = await fakeCluster(hosts);
  const recipe = c.recipe(
    c.dsv41Text
      .replace('required_nodes = 4', 'required_nodes = 3')
      .replace('tensor_parallel_size = 4', 'tensor_parallel_size = 3'),
  );
  const cluster = c.clusterFile({ nccl: { NCCL_IB_ADDR_RANGE: '10.0.0.0/16' } });
  const r = await cli(['launch', recipe, '--cluster', cluster, '--revision', REV], c.env());
  assert.equal(r.code, 1, r.stderr);
  assert.match(
    r.stderr,
    /rendezvous\.subnet: node 2 \(spark3\) cannot reach the rendezvous 10\.0\.22\.1:\d+ on the head node 0 \(spark1\)/,
  );
  assert.match(r.stderr, /spark: preflight found \d+ error\(s\), nothing was started/);
  assert.equal(c.fake.calls().filter((x) => x.prog === 'docker' && x.argv[0] === 'run').length, 0);
});

test('--tp given only in args: preflight and launch agree (same tp), and refuse together when it contradicts the key', async () => {
  const cache = hfCacheWith('deepseek-ai/DeepSeek-V4.1-Flash', REV);
  const cluster = writeCluster({
    name: 'four',
    hosts: ['s1', 's2', 's3', 's4'],
    fabric: ['10.1.0.1', '10.1.0.2', '10.1.0.3', '10.1.0.4'],
    hfCache: cache,
  });
  const argsOnly = writeRecipe(
    readFileSync(AIDEN16, 'utf8')
      .replace('tensor_parallel_size = 4\n', '')
      .replace('"--trust-remote-code",', '"--trust-remote-code", "--tp", "4",'),
  );
  const pre = await runPreflight({ recipe: argsOnly, cluster, local: true, only: ['parallel.nodes'] }, quiet());
  assert.deepEqual(pre.findings, []);
  const doc = await plan(argsOnly, cluster);
  for (const n of doc.nodes) {
    assert.equal(valueAfter(n.argv, '--tp'), '4');
    assert.equal(n.argv.includes('--tp-size'), false, 'the same value is not appended again');
  }
  const contradicts = writeRecipe(
    readFileSync(AIDEN16, 'utf8').replace('"--trust-remote-code",', '"--trust-remote-code", "--tp", "2",'),
  );
  const bad = await runPreflight({ recipe: contradicts, cluster, local: true, only: ['parallel.nodes'] }, quiet());
  assert.equal(bad.counts.error, 1);
  assert.match(
    bad.findings[0]!.message,
    /^tensor_parallel_size = 4 but args sets --tp 2; the launcher appends --tp-size 4/,
  );
  const launch = await cli(['launch', contradicts, '--cluster', cluster, '--dry-run', '--revision', REV]);
  assert.equal(launch.code, 2);
  assert.match(
    launch.stderr,
    /recipe\.toml:\d+: tensor_parallel_size = 4 but args sets --tp 2; .*remove --tp from args/,
  );
});

test('a 1-node recipe on a 4-node cluster: preflight warns, launch runs on the first node, both say which nodes stay idle', async () => {
  const cache = hfCacheWith('deepseek-ai/DeepSeek-V4-Flash-0731', REV);
  const cluster = writeCluster({
    name: 'four',
    hosts: ['s1', 's2', 's3', 's4'],
    fabric: ['10.1.0.1', '10.1.0.2', '10.1.0.3', '10.1.0.4'],
    hfCache: cache,
  });
  const one = writeRecipe(
    readFileSync(EUGR, 'utf8')
      .replace('required_nodes = 2', 'required_nodes = 1')
      .replace('tensor_parallel_size = 2', 'tensor_parallel_size = 1'),
  );
  const pre = await runPreflight({ recipe: one, cluster, local: true, only: ['parallel.nodes'] }, quiet());
  assert.equal(pre.counts.error, 0);
  assert.equal(pre.findings.length, 1);
  assert.match(
    pre.findings[0]!.message,
    /^the recipe needs 1 node and cluster four has 4: the launch runs on s1 and leaves s2, s3, s4 idle$/,
  );
  const doc = await plan(one, cluster);
  assert.deepEqual(
    doc.nodes.map((n) => n.host),
    ['s1'],
  );
  assert.ok(
    doc.notes.some((n) => n.includes('runs on s1; s2 (rank 1), s3 (rank 2), s4 (rank 3) of four stay idle')),
    doc.notes.join('\n'),
  );
  // One node: no multi-node flags.
  assert.equal(doc.nodes[0]!.argv.includes('--nnodes'), false);
});

function quiet() {
  return { stdout: () => {}, stderr: () => {}, env: {}, cwd: process.cwd(), stderrIsTTY: false, color: false };
}
