// The exact container command per node for the users' recipes on the example clusters.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cli } from '../helpers/cli.js';
import { AIDEN16, EUGR, PACKED, REV } from '../helpers/launch-files.js';

interface JsonNode {
  rank: number;
  host: string;
  argv: string[];
  env: Record<string, string>;
  container: string;
}

async function dryRun(recipe: string, cluster: string, extra: string[] = []): Promise<JsonNode[]> {
  const r = await cli(['launch', recipe, '--cluster', cluster, '--dry-run', '--json', '--revision', REV, ...extra], {
    HOME: '/home/op',
  });
  assert.equal(r.code, 0, r.stderr);
  return (JSON.parse(r.stdout) as { nodes: JsonNode[] }).nodes;
}

const e = (pairs: string[]) => pairs.flatMap((p) => ['-e', p]);
const SNAP41 = `/root/.cache/huggingface/hub/models--deepseek-ai--DeepSeek-V4.1-Flash/snapshots/${REV}`;
const FLAGS = [
  '--network',
  'host',
  '--gpus',
  'all',
  '--device',
  '/dev/infiniband',
  '--cap-add',
  'IPC_LOCK',
  '--ulimit',
  'memlock=-1',
  '--ulimit',
  'stack=67108864',
];

const SWITCH_NCCL = [
  'NCCL_NET=IB',
  'NCCL_IB_DISABLE=0',
  'NCCL_IB_HCA=rocep1s0f0,roceP2p1s0f0',
  'NCCL_SOCKET_IFNAME=enp1s0f0np0',
  'GLOO_SOCKET_IFNAME=enp1s0f0np0',
  'NCCL_IB_ROCE_VERSION_NUM=2',
  'NCCL_IB_ADDR_FAMILY=AF_INET',
  'NCCL_IB_ADDR_RANGE=192.168.200.0/24',
  'NCCL_IB_SUBNET_PREFIX_LEN=24',
  'B12X_ROCE_HCA=rocep1s0f0,roceP2p1s0f0',
];

const DSV41_ENGINE_ARGS = [
  '--trust-remote-code',
  '--served-model-name',
  'deepseek-v4.1-flash',
  '--load-format',
  'safetensors',
  '--ep-size',
  '4',
  '--attention-backend',
  'dsv4',
  '--moe-runner-backend',
  'flashinfer_mxfp4',
  '--fp8-gemm-backend',
  'flashinfer_cutlass',
  '--mem-fraction-static',
  '0.80',
  '--chunked-prefill-size',
  '2048',
  '--context-length',
  '524288',
  '--max-running-requests',
  '16',
  '--cuda-graph-max-bs-decode',
  '16',
  '--random-seed',
  '0',
  '--enable-decoder-swa-bounded-replay',
  '--speculative-algorithm',
  'DSPARK',
  '--speculative-dspark-block-size',
  '5',
  '--tool-call-parser',
  'deepseekv41',
  '--reasoning-parser',
  'deepseek-v41',
  '--watchdog-timeout',
  '1800',
  '--min-free-slots-delay',
  '1',
];

const sglangTail = (rank: number) => [
  '--model-path',
  SNAP41,
  '--tp-size',
  '4',
  '--nnodes',
  '4',
  '--node-rank',
  String(rank),
  '--dist-init-addr',
  '192.168.200.1:25000',
  '--host',
  '0.0.0.0',
  '--port',
  '30000',
];

test('aiden16 on 4node-switch: the exact docker run argv on every node', async () => {
  const nodes = await dryRun(AIDEN16, 'recipes/clusters/4node-switch.toml');
  assert.deepEqual(
    nodes.map((n) => n.host),
    ['spark1', 'spark2', 'spark3', 'spark4'],
  );
  const recipeEnv = [
    `SPARK_ENGRAM_DIR=${SNAP41}`,
    'SPARK_ENGRAM_MODE=hostnode',
    'SPARK_ENGRAM_EARLY=1',
    'SPARK_ENGRAM_PREFETCH=1',
    'SPARK_PAGE_CACHE_RELEASE=1',
    'SPARK_LATE_TAIL_SKIP=1',
    'SPARK_LATE_TAIL_SKIP_ALL=1',
    'SPARK_SM120_REAL_HEADS=1',
    'SPARK_ENGRAM_THREADS=64',
    'SPARK_ENGRAM_MAX_IDS=65536',
    'SPARK_MXFP8_BACKEND=b12x',
    'SPARK_ROCE_AR=1',
    'SPARK_ROCE_AR_MAX=1MB',
    'SPARK_ROCE_AG_MAX=16MB',
    'B12X_ROCE_SPIN_LIMIT=300000000',
    'SGLANG_ENABLE_DSV41_ENGRAM_HOST_TABLE=0',
    'SGLANG_FLASHINFER_MOE_FUSED_FINALIZE=0',
    'SGLANG_DSV41_REASONING_EFFORT=100',
    'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False',
    'CUDA_DEVICE_ORDER=PCI_BUS_ID',
    'NCCL_CROSS_NIC=1',
    'NCCL_IB_MERGE_NICS=0',
    'NCCL_IB_SUBNET_AWARE_ROUTING=1',
    'NCCL_CUMEM_ENABLE=0',
    'NCCL_P2P_DISABLE=1',
    'NCCL_SHM_DISABLE=1',
    'NCCL_BUFFSIZE=1048576',
    'NCCL_LL128_BUFFSIZE=262144',
    'NCCL_PROTO=^LL128',
    'NCCL_MAX_NCHANNELS=8',
  ];
  for (const n of nodes) {
    const expected = [
      'docker',
      'run',
      '-d',
      '--name',
      `spark-4nodes-switch-r${n.rank}`,
      ...FLAGS,
      '--shm-size',
      '32gb',
      '--mount',
      'type=bind,source=/mnt/nas/ai/huggingface,target=/root/.cache/huggingface',
      '--mount',
      'type=bind,source=/home/kilork/aiden4x-launch.sh,target=/aiden4x-launch.sh,readonly',
      // The launcher's own, last: the rank, the world, and the address this node advertises.
      ...e([
        ...SWITCH_NCCL,
        ...recipeEnv,
        `NODE_RANK=${n.rank}`,
        'SPARK_WORLD_SIZE=4',
        `SGLANG_HOST_IP=192.168.200.${n.rank + 1}`,
      ]),
      '--entrypoint',
      'sh',
      'aidendle94/sparkrun-sglang-dsv41-gb10:production-1.6',
      '/aiden4x-launch.sh',
      ...DSV41_ENGINE_ARGS,
      ...sglangTail(n.rank),
    ];
    assert.deepEqual(n.argv, expected, `node ${n.rank}`);
    assert.equal(n.env.NODE_RANK, String(n.rank));
  }
});

test('packed recipe on 4node-switch: python entrypoint, the node-local shard mounted read-only', async () => {
  const nodes = await dryRun(PACKED, 'recipes/clusters/4node-switch.toml');
  assert.equal(nodes.length, 4);
  const n = nodes[2]!;
  const head = n.argv.slice(0, n.argv.indexOf('-e'));
  assert.deepEqual(head, [
    'docker',
    'run',
    '-d',
    '--name',
    'spark-4nodes-switch-r2',
    ...FLAGS,
    '--shm-size',
    '32gb',
    '--mount',
    'type=bind,source=/mnt/nas/ai/huggingface,target=/root/.cache/huggingface',
    '--mount',
    'type=bind,source=/var/lib/spark/engram,target=/engram,readonly',
  ]);
  const image = n.argv.indexOf('aidendle94/sparkrun-sglang-dsv41-gb10:production-1.6');
  assert.deepEqual(n.argv.slice(image - 2), [
    '--entrypoint',
    'python3',
    'aidendle94/sparkrun-sglang-dsv41-gb10:production-1.6',
    '-m',
    'sglang.launch_server',
    ...DSV41_ENGINE_ARGS,
    ...sglangTail(2),
  ]);
  // The recipe's [env] comes after the cluster's [nccl]; its own keys only where the cluster has none.
  assert.equal(n.env.SPARK_ENGRAM_DIR, '/engram');
  assert.equal(n.env.NCCL_SOCKET_IFNAME, 'enp1s0f0np0');
  assert.equal(n.env.HF_HUB_OFFLINE, '1');
  assert.equal(n.env.NODE_RANK, '2');
  assert.deepEqual(Object.keys(n.env).slice(-3), ['NODE_RANK', 'SPARK_WORLD_SIZE', 'SGLANG_HOST_IP']);
  assert.equal(n.env.SGLANG_HOST_IP, '192.168.200.3');
});

const EUGR_ARGS = [
  '--kv-cache-dtype',
  'fp8',
  '--block-size',
  '256',
  '--load-format',
  'instanttensor',
  '--max-model-len',
  '1048576',
  '--max-num-seqs',
  '6',
  '--max-num-batched-tokens',
  '2048',
  '--max-cudagraph-capture-size',
  '36',
  '--gpu-memory-utilization',
  '0.78',
  '--served-model-name',
  'deepseek-v4-flash',
  '--attention-backend',
  'B12X_MLA_SPARSE',
  '--moe-backend',
  'b12x',
  '--linear-backend',
  'b12x',
  '--enable-prefix-caching',
  '--compilation-config',
  '{"cudagraph_mode":"FULL_AND_PIECEWISE","custom_ops":["all"]}',
  '--speculative-config',
  '{"method":"dspark","num_speculative_tokens":5,"draft_sample_method":"probabilistic","attention_backend":"B12X_MLA_SPARSE"}',
  '--tokenizer-mode',
  'deepseek_v4',
  '--tool-call-parser',
  'deepseek_v4',
  '--reasoning-parser',
  'deepseek_v4',
  '--reasoning-config',
  '{"reasoning_parser":"deepseek_v4","reasoning_start_str":"","reasoning_end_str":""}',
  '--enable-auto-tool-choice',
  '--generation-config',
  'vllm',
  '--default-chat-template-kwargs.thinking=true',
  '--default-chat-template-kwargs.reasoning_effort=high',
  '--disable-custom-all-reduce',
  '--trust-remote-code',
];

test('eugr on 2node-pair: vllm serve <snapshot>, mp multi-node flags, --headless off the head', async () => {
  const nodes = await dryRun(EUGR, 'recipes/clusters/2node-pair.toml');
  const snap = `/root/.cache/huggingface/hub/models--deepseek-ai--DeepSeek-V4-Flash-0731/snapshots/${REV}`;
  for (const n of nodes) {
    const envStart = n.argv.indexOf('-e');
    assert.deepEqual(n.argv.slice(0, envStart), [
      'docker',
      'run',
      '-d',
      '--name',
      `spark-2nodes-pair-r${n.rank}`,
      ...FLAGS,
      '--shm-size',
      '32gb',
      '--mount',
      'type=bind,source=/home/spark/.cache/huggingface,target=/root/.cache/huggingface',
      // Writable cache: -v, so docker creates it on a node that has none yet; ~ is the home.
      '-v',
      '/home/op/.cache/vllm-ds4-eugr:/root/.cache/vllm',
    ]);
    const entry = n.argv.indexOf('--entrypoint');
    assert.deepEqual(n.argv.slice(entry), [
      '--entrypoint',
      'vllm',
      'eugr/spark-vllm-b12x:sm121',
      'serve',
      snap,
      ...EUGR_ARGS,
      '--tensor-parallel-size',
      '2',
      '--pipeline-parallel-size',
      '1',
      '--distributed-executor-backend',
      'mp',
      '--nnodes',
      '2',
      '--node-rank',
      String(n.rank),
      '--master-addr',
      '192.168.100.1',
      '--master-port',
      '25000',
      ...(n.rank === 0 ? [] : ['--headless']),
      '--host',
      '0.0.0.0',
      '--port',
      '8000',
    ]);
    const env = n.argv.slice(envStart, entry);
    assert.equal(env.length % 2, 0);
    assert.ok(env.every((a, i) => (i % 2 === 0 ? a === '-e' : /^[A-Z_][A-Z0-9_]*=/.test(a))));
    assert.deepEqual(env.slice(-6), [
      '-e',
      `NODE_RANK=${n.rank}`,
      '-e',
      'SPARK_WORLD_SIZE=2',
      '-e',
      `VLLM_HOST_IP=192.168.100.${n.rank + 1}`,
    ]);
    assert.ok(env.includes('PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True'));
    assert.ok(env.includes('NCCL_IB_HCA=rocep1s0f1,roceP2p1s0f1'));
  }
});

test('the human dry run prints one pasteable docker command per node', async () => {
  const r = await cli(
    ['launch', EUGR, '--cluster', 'recipes/clusters/2node-pair.toml', '--dry-run', '--revision', REV],
    { HOME: '/home/op' },
  );
  assert.equal(r.code, 0, r.stderr);
  assert.match(
    r.stdout,
    /^# node 0: run on spark1 \(192\.168\.100\.1\), head\ndocker run -d --name spark-2nodes-pair-r0 \\$/m,
  );
  assert.match(r.stdout, /^# node 1: run on spark2 \(192\.168\.100\.2\)\n/m);
  assert.match(r.stdout, /^# rendezvous 192\.168\.100\.1:25000; health http:\/\/spark1:8000\/health$/m);
  assert.match(
    r.stdout,
    /^ {2}--compilation-config '\{"cudagraph_mode":"FULL_AND_PIECEWISE","custom_ops":\["all"\]\}' \\$/m,
  );
  assert.match(r.stdout, /^ {2}--headless \\$/m);
  assert.match(r.stdout, /# note: ~ in host paths is shown as this machine's home \(\/home\/op\)/);
});

test('--cpu-only: the same command without the GPU and RDMA flags, and a note saying so', async () => {
  const cluster = 'recipes/clusters/4node-switch.toml';
  const full = await dryRun(AIDEN16, cluster);
  const cpu = await dryRun(AIDEN16, cluster, ['--cpu-only']);
  const gone = ['--gpus', 'all', '--device', '/dev/infiniband', '--cap-add', 'IPC_LOCK', '--ulimit', 'memlock=-1'];
  for (const [i, node] of cpu.entries()) {
    const start = full[i]!.argv.indexOf('--network');
    assert.deepEqual(full[i]!.argv.slice(start, start + FLAGS.length), FLAGS);
    const expected = [
      ...full[i]!.argv.slice(0, start),
      '--network',
      'host',
      '--ulimit',
      'stack=67108864',
      ...full[i]!.argv.slice(start + FLAGS.length),
    ];
    assert.deepEqual(node.argv, expected);
    for (const flag of ['--gpus', '--device', '--cap-add', 'memlock=-1']) assert.ok(!node.argv.includes(flag), flag);
  }
  const r = await cli(['launch', AIDEN16, '--cluster', cluster, '--dry-run', '--revision', REV, '--cpu-only'], {
    HOME: '/home/op',
  });
  assert.ok(
    r.stdout.includes(`# note: --cpu-only: the containers get no GPU and no RDMA device (${gone.join(' ')} left out)`),
    r.stdout,
  );
});
