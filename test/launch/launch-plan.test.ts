// The plan: per-node rank, rendezvous, snapshot resolution, env precedence, and the errors a
// recipe/cluster pair can hit before anything runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { cli } from '../helpers/cli.js';
import { AIDEN16, EUGR, PACKED, REV, hfCacheWith, writeCluster, writeRecipe } from '../helpers/launch-files.js';
import { argvForExec, parseRecipe } from '../../src/recipes/index.js';

interface PlanDoc {
  nodes: {
    rank: number;
    host: string;
    argv: string[];
    env: Record<string, string>;
    container: string;
    head: boolean;
  }[];
  model: { id: string; path: string; revision?: string; from?: string };
  healthUrl: string;
  notes: string[];
}

async function plan(argv: string[], env: NodeJS.ProcessEnv = { HOME: '/home/op' }): Promise<PlanDoc> {
  const r = await cli(['launch', ...argv, '--dry-run', '--json'], env);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as PlanDoc;
}

function valueAfter(argv: string[], flag: string): string | undefined {
  const i = argv.lastIndexOf(flag);
  return i < 0 ? undefined : argv[i + 1];
}

/** Index where `needle` occurs as a contiguous run inside `hay`, or -1. */
function indexOfRun(hay: string[], needle: string[]): number {
  for (let i = 0; i + needle.length <= hay.length; i++) if (needle.every((x, j) => hay[i + j] === x)) return i;
  return -1;
}

const FOUR = {
  name: 'lab4',
  hosts: ['spark1', 'ops@spark2', 'spark3', 'spark4'],
  fabric: ['10.9.0.1', '10.9.0.2', '10.9.0.3', '10.9.0.4'],
  distPort: 29555,
  // Differs from the recipe's [env] on three keys; NCCL_DEBUG is the cluster's alone.
  nccl: { NCCL_SOCKET_IFNAME: 'eth9', NCCL_IB_HCA: 'mlx5_0', NCCL_CROSS_NIC: '0', NCCL_DEBUG: 'WARN' },
};

test('aiden16 on a 4-node cluster: per-node rank, rendezvous, snapshot, args in order, [env] wins', async () => {
  // refs/main points elsewhere: the recipe's SPARK_ENGRAM_DIR names the snapshot it was written for.
  const cache = hfCacheWith('deepseek-ai/DeepSeek-V4.1-Flash', REV, { main: 'c'.repeat(40) });
  const cluster = writeCluster({ ...FOUR, hfCache: cache });
  const doc = await plan([AIDEN16, '--cluster', cluster]);
  const snap = `/root/.cache/huggingface/hub/models--deepseek-ai--DeepSeek-V4.1-Flash/snapshots/${REV}`;
  assert.deepEqual(doc.model, {
    id: 'deepseek-ai/DeepSeek-V4.1-Flash',
    path: snap,
    revision: REV,
    from: 'SPARK_ENGRAM_DIR',
    hostPath: `${cache}/hub/models--deepseek-ai--DeepSeek-V4.1-Flash/snapshots/${REV}`,
  });
  assert.equal(doc.nodes.length, 4);
  const recipe = parseRecipe(readFileSync(AIDEN16, 'utf8'), AIDEN16).recipe;
  for (const [r, n] of doc.nodes.entries()) {
    assert.equal(n.rank, r);
    assert.equal(n.host, FOUR.hosts[r]);
    assert.equal(n.head, r === 0);
    assert.equal(n.env.NODE_RANK, String(r));
    assert.ok(indexOfRun(n.argv, ['-e', `NODE_RANK=${r}`]) > 0);
    assert.equal(valueAfter(n.argv, '--node-rank'), String(r));
    assert.equal(valueAfter(n.argv, '--nnodes'), '4');
    assert.equal(valueAfter(n.argv, '--dist-init-addr'), '10.9.0.1:29555');
    assert.equal(valueAfter(n.argv, '--model-path'), snap);
    assert.equal(valueAfter(n.argv, '--port'), '30000');
    // Every recipe arg, in order, right after the wrapper entrypoint's script.
    const args = argvForExec(recipe.args);
    const at = indexOfRun(n.argv, ['/aiden4x-launch.sh', ...args]);
    assert.ok(at > 0, `node ${r}: recipe args not found in order`);
    assert.equal(n.argv[at + 1 + args.length], '--model-path');
    // The recipe [env] wins where the cluster's NCCL settings differ; the cluster's own keys stay.
    assert.equal(n.env.NCCL_SOCKET_IFNAME, 'enp1s0f0np0');
    assert.equal(n.env.NCCL_IB_HCA, 'rocep1s0f0,roceP2p1s0f0');
    assert.equal(n.env.NCCL_CROSS_NIC, '1');
    assert.equal(n.env.NCCL_DEBUG, 'WARN');
    assert.ok(n.argv.includes('NCCL_SOCKET_IFNAME=enp1s0f0np0'));
    assert.ok(!n.argv.includes('NCCL_SOCKET_IFNAME=eth9'));
    assert.equal(n.argv.filter((a) => a.startsWith('NCCL_SOCKET_IFNAME=')).length, 1);
    assert.ok(n.argv.includes(`type=bind,source=${cache},target=/root/.cache/huggingface`));
  }
  assert.equal(doc.healthUrl, 'http://spark1:30000/health');
  assert.ok(
    doc.notes.includes('NCCL_SOCKET_IFNAME: recipe [env] "enp1s0f0np0" wins over cluster [nccl] "eth9"'),
    doc.notes.join('\n'),
  );
  assert.ok(doc.notes.some((n) => n.startsWith('NCCL_CROSS_NIC: recipe [env] "1" wins')));
});

test('refs/main gives the revision when nothing pins one (packed recipe: SPARK_ENGRAM_DIR is /engram)', async () => {
  const rev = 'b'.repeat(40);
  const cache = hfCacheWith('deepseek-ai/DeepSeek-V4.1-Flash', rev);
  const doc = await plan([PACKED, '--cluster', writeCluster({ ...FOUR, hfCache: cache })]);
  assert.equal(doc.model.revision, rev);
  assert.equal(doc.model.from, 'refs/main');
  assert.equal(
    valueAfter(doc.nodes[3]!.argv, '--model-path'),
    `/root/.cache/huggingface/hub/models--deepseek-ai--DeepSeek-V4.1-Flash/snapshots/${rev}`,
  );
});

test('a pinned revision wins over refs/main; a ref name is read from refs/', async () => {
  const other = 'a'.repeat(40);
  const cache = hfCacheWith('deepseek-ai/DeepSeek-V4.1-Flash', REV, { main: REV, stable: other });
  const cluster = writeCluster({ ...FOUR, hfCache: cache });
  const byFlag = await plan([AIDEN16, '--cluster', cluster, '--revision', other]);
  assert.equal(byFlag.model.revision, other);
  assert.equal(byFlag.model.from, '--revision');
  // SPARK_ENGRAM_DIR names dba1be0a…: reading rows from another revision than the weights is flagged.
  assert.ok(
    byFlag.notes.some((n) => n.includes(`SPARK_ENGRAM_DIR reads Engram rows from revision ${REV}`)),
    byFlag.notes.join('\n'),
  );
  const byRef = await plan([AIDEN16, '--cluster', cluster, '--revision', 'stable']);
  assert.equal(byRef.model.revision, other);
  assert.equal(byRef.model.from, 'refs/stable');
  const recipe = writeRecipe(
    readFileSync(AIDEN16, 'utf8').replace('"--trust-remote-code",', `"--trust-remote-code", "--revision", "${other}",`),
  );
  const inRecipe = await plan([recipe, '--cluster', cluster]);
  assert.equal(inRecipe.model.revision, other);
  assert.equal(inRecipe.model.from, 'recipe --revision');
});

test('a dry run off the cluster shows the model id where refs/main is unreadable here; a bad ref is exit 2', async () => {
  const empty = writeCluster({ ...FOUR, hfCache: '/nonexistent/hf' });
  const r = await cli(['launch', PACKED, '--cluster', empty, '--dry-run', '--json']);
  assert.equal(r.code, 0, r.stderr);
  const doc = JSON.parse(r.stdout) as PlanDoc;
  assert.deepEqual(doc.model, { id: 'deepseek-ai/DeepSeek-V4.1-Flash', path: 'deepseek-ai/DeepSeek-V4.1-Flash' });
  for (const n of doc.nodes) assert.equal(valueAfter(n.argv, '--model-path'), 'deepseek-ai/DeepSeek-V4.1-Flash');
  assert.ok(
    doc.notes.some(
      (n) =>
        n.startsWith(
          '/nonexistent/hf/hub/models--deepseek-ai--DeepSeek-V4.1-Flash/refs/main is not readable on this machine',
        ) && n.includes('--revision'),
    ),
    doc.notes.join('\n'),
  );
  const bad = writeCluster({
    ...FOUR,
    hfCache: hfCacheWith('deepseek-ai/DeepSeek-V4.1-Flash', REV, { main: 'not-a-hash' }),
  });
  const r2 = await cli(['launch', PACKED, '--cluster', bad, '--dry-run', '--json']);
  assert.equal(r2.code, 2);
  assert.equal((JSON.parse(r2.stderr) as { error: { code: string } }).error.code, 'E_SNAPSHOT');
});

test('cluster and recipe shapes the launcher refuses (exit 2), before touching any node', async () => {
  const cache = hfCacheWith('deepseek-ai/DeepSeek-V4-Flash-0731', REV);
  const cases: [string[], RegExp][] = [
    [
      [EUGR, '--cluster', writeCluster({ name: 'one', hosts: ['a'], fabric: ['10.0.0.1'], hfCache: cache })],
      /the recipe needs 2 nodes and cluster one \(.*one\.toml\) has 1; use a cluster file with enough nodes/,
    ],
    [
      [
        EUGR,
        '--cluster',
        writeCluster({ name: 'h1', hosts: ['a', 'b'], fabric: ['10.0.0.1', '10.0.0.2'], hfCache: cache, head: 1 }),
      ],
      /head = 1, but SGLang and vLLM host the rendezvous .* on rank 0/,
    ],
    [
      [
        writeRecipe(readFileSync(EUGR, 'utf8').replace('distributed_backend = "mp"', 'distributed_backend = "ray"')),
        '--cluster',
        writeCluster({ name: 'p2', hosts: ['a', 'b'], fabric: ['10.0.0.1', '10.0.0.2'], hfCache: cache }),
      ],
      /distributed_backend = "ray" is not supported/,
    ],
    [
      [
        writeRecipe(readFileSync(EUGR, 'utf8').replace('host = "~/.cache/vllm-ds4-eugr"', 'host = "cache/vllm"')),
        '--cluster',
        writeCluster({ name: 'p3', hosts: ['a', 'b'], fabric: ['10.0.0.1', '10.0.0.2'], hfCache: cache }),
      ],
      /extra_mounts\[0\]\.host "cache\/vllm" is relative/,
    ],
    [
      [
        writeRecipe(readFileSync(EUGR, 'utf8').replace('tensor_parallel_size = 2', 'tensor_parallel_size = 4')),
        '--cluster',
        writeCluster({ name: 'p4', hosts: ['a', 'b'], fabric: ['10.0.0.1', '10.0.0.2'], hfCache: cache }),
      ],
      /tensor_parallel_size 4 × pipeline_parallel_size 1 = 4 ranks, but required_nodes = 2/,
    ],
  ];
  for (const [argv, message] of cases) {
    const r = await cli(['launch', ...argv, '--dry-run']);
    assert.equal(r.code, 2, `${argv.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, message);
    assert.equal(r.stderr.trim().split('\n').length, 1);
  }
  const noCache = writeRecipe('x');
  assert.equal((await cli(['launch', noCache, '--cluster', 'recipes/clusters/2node-pair.toml', '--dry-run'])).code, 2);
  assert.equal((await cli(['launch', EUGR, '--dry-run'])).code, 2, 'no --cluster');
  assert.equal(
    (await cli(['launch', '--cluster', 'recipes/clusters/2node-pair.toml', '--dry-run'])).code,
    2,
    'no recipe',
  );
});

test('launcher flags a recipe already sets: same value not repeated, a different one noted and overridden', async () => {
  const cache = hfCacheWith('deepseek-ai/DeepSeek-V4-Flash-0731', REV);
  const cluster = writeCluster({ name: 'p5', hosts: ['a', 'b'], fabric: ['10.0.0.1', '10.0.0.2'], hfCache: cache });
  const text = readFileSync(EUGR, 'utf8').replace(
    '"--trust-remote-code",\n]',
    '"--trust-remote-code", "--port", "9000", "--tensor-parallel-size", "2",\n]',
  );
  const doc = await plan([writeRecipe(text), '--cluster', cluster]);
  const argv = doc.nodes[0]!.argv;
  assert.equal(argv.filter((a) => a === '--tensor-parallel-size').length, 1, 'same value: not appended again');
  assert.equal(argv.filter((a) => a === '--port').length, 1, "the recipe's --port (no port key) is the serving port");
  assert.equal(valueAfter(argv, '--port'), '9000');
  assert.equal(doc.healthUrl, 'http://a:9000/health');
  const withKey = await plan([
    writeRecipe(text.replace('required_nodes = 2', 'required_nodes = 2\nport = 8100')),
    '--cluster',
    cluster,
  ]);
  assert.deepEqual(withKey.nodes[1]!.argv.slice(-2), ['--port', '8100']);
  assert.ok(
    withKey.notes.includes("recipe args set --port 9000; the launcher's --port 8100 comes last and wins"),
    withKey.notes.join('\n'),
  );
});

test('mount paths: ~ is the home, commas are CSV-quoted for --mount, user@ is dropped from the health URL', async () => {
  const cache = hfCacheWith('deepseek-ai/DeepSeek-V4-Flash-0731', REV);
  const cluster = writeCluster({
    name: 'p6',
    hosts: ['ops@10.1.1.1', 'b'],
    fabric: ['10.0.0.1', '10.0.0.2'],
    hfCache: cache,
  });
  const text = readFileSync(EUGR, 'utf8').replace(
    '[env]',
    '[[extra_mounts]]\nhost = "/srv/a,b \\"c\\""\ncontainer = "/data"\nread_only = true\n\n[env]',
  );
  const doc = await plan([writeRecipe(text), '--cluster', cluster], { HOME: '/home/x y' });
  const argv = doc.nodes[0]!.argv;
  assert.ok(argv.includes('/home/x y/.cache/vllm-ds4-eugr:/root/.cache/vllm'));
  assert.ok(argv.includes('type=bind,"source=/srv/a,b ""c""",target=/data,readonly'), argv.join('\n'));
  assert.equal(doc.healthUrl, 'http://10.1.1.1:8000/health');
});
