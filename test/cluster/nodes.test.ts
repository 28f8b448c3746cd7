// Node-local work and node checks over real ssh on the bed (test/cluster/bed.ts): spark fanout
// pack and verify writing each node's own disk, preflight's node checks answered by spark on
// the node and by the sh probe, and the wrapper `spark wrapper --emit-sh` writes as the
// container's real entrypoint, reading each node's own copy.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startBed, type Bed } from './bed.js';
import { spark, writeBedCluster, writeBedRecipe, writeCache, type Cache } from './files.js';
import { ENGINE } from './image.js';

let bed: Bed;
let cache: Cache;
let cluster: string;

before(async () => {
  bed = await startBed({ nodes: 3 });
  cache = writeCache(bed);
  cluster = writeBedCluster(bed, { name: 'work3', hfCache: cache.hfCache });
});
after(() => {
  const { leftover } = bed?.teardown() ?? { leftover: [] };
  assert.deepEqual(leftover, [], 'the bed left processes running');
});

const expectedRows = async (rank: number): Promise<string> => {
  const r = await spark(bed, ['engram-ranges', cache.snapshot, '--rank', String(rank), '--world', '3']);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout.trim();
};

test('spark fanout pack writes each rank to its own node over ssh; fanout verify checks them there', async () => {
  const out = join(bed.localMount, 'engram');
  const r = await spark(bed, ['fanout', 'pack', cache.snapshot, '--out', out, '--cluster', cluster, '--json']);
  assert.equal(r.code, 0, r.stderr);
  const doc = JSON.parse(r.stdout) as { world: number; nodes: { rank: number; host: string; status: string }[] };
  assert.equal(doc.world, 3);
  assert.deepEqual(
    doc.nodes.map((n) => [n.rank, n.host, n.status]),
    bed.nodes.map((n) => [n.rank, n.addr, 'ok']),
  );
  // Each node's copy is on that node alone, made for its own rank.
  for (const node of bed.nodes) {
    const manifest = JSON.parse(readFileSync(join(node.localDir, 'engram', 'engram-local.json'), 'utf8')) as {
      spark: { rank: number; world: number };
    };
    assert.deepEqual([manifest.spark.rank, manifest.spark.world], [node.rank, 3]);
  }
  assert.equal(existsSync(out), false, "nothing was written to this machine's own view of the path");
  const verify = await spark(bed, [
    'fanout',
    'verify',
    out,
    '--cluster',
    cluster,
    '--source',
    cache.snapshot,
    '--json',
  ]);
  assert.equal(verify.code, 0, verify.stderr);
  assert.deepEqual(
    (JSON.parse(verify.stdout) as { nodes: { status: string }[] }).nodes.map((n) => n.status),
    ['ok', 'ok', 'ok'],
  );
});

interface Report {
  nodes: { rank: number; host: string; via?: string; reached?: boolean }[];
  findings: { rule: string; severity: string; message: string; node?: { rank: number } }[];
}

test("preflight's node checks over ssh: spark on the node and the sh probe see each node's own files", async () => {
  const recipe = writeBedRecipe(bed, 'checks', {
    nodes: 3,
    mounts: [{ host: join(bed.localMount, 'engram'), container: '/engram', readOnly: true }],
    env: { SPARK_ENGRAM_DIR: '/engram' },
  });
  // Node 2's copy is gone: only node 2 may be reported.
  const node2 = join(bed.nodes[2]!.localDir, 'engram');
  const kept = join(bed.dir, 'engram-n2');
  cpSync(node2, kept, { recursive: true });
  rmSync(node2, { recursive: true });
  try {
    for (const [env, via] of [
      [bed.env, 'spark'],
      [{ ...bed.env, SPARK_REMOTE_BIN: '/nonexistent/spark' }, 'probe'],
    ] as const) {
      const r = await spark(bed, ['preflight', recipe, '--cluster', cluster, '--json'], { env });
      assert.equal(r.code, 1, r.stderr);
      const report = JSON.parse(r.stdout) as Report;
      assert.deepEqual(
        report.nodes.map((n) => [n.rank, n.host, n.via]),
        bed.nodes.map((n) => [n.rank, n.addr, via]),
        r.stdout,
      );
      const errors = report.findings.filter((f) => f.severity === 'error');
      assert.ok(errors.length > 0);
      for (const e of errors) assert.equal(e.node?.rank, 2, `${via}: ${e.rule}: ${e.message}`);
      assert.ok(
        errors.some((e) => e.rule === 'mounts.host-path' && e.message.includes(join(bed.localMount, 'engram'))),
        JSON.stringify(errors),
      );
    }
  } finally {
    cpSync(kept, node2, { recursive: true });
  }
});

test("the emitted wrapper as the container's entrypoint: each rank exports its own copy's rows and becomes the engine", async () => {
  const wrapper = join(bed.shared, 'spark-wrapper.sh');
  const emit = await spark(bed, [
    'wrapper',
    '--emit-sh',
    '--snapshot',
    cache.snapshot,
    '--world',
    '3',
    '--out',
    wrapper,
  ]);
  assert.equal(emit.code, 0, emit.stderr);
  const recipe = writeBedRecipe(bed, 'wrapped', {
    nodes: 3,
    entrypoint: ['sh', '/spark-wrapper.sh', ENGINE],
    mounts: [
      { host: wrapper, container: '/spark-wrapper.sh', readOnly: true },
      { host: join(bed.localMount, 'engram'), container: '/engram', readOnly: true },
    ],
    env: { SPARK_ENGRAM_DIR: '/engram', FAKE_ENGINE_HEALTHY_AFTER: '1' },
  });
  const wrapped = writeBedCluster(bed, { name: 'wrap3', hfCache: cache.hfCache });
  const r = await spark(bed, [
    'launch',
    recipe,
    '--cluster',
    wrapped,
    '--cpu-only',
    '--interval',
    '0.2',
    '--timeout',
    '60',
  ]);
  assert.equal(r.code, 0, r.stderr);
  for (const node of bed.nodes) {
    const logs = bed.logs(node.rank, `spark-wrap3-r${node.rank}`);
    const rows = await expectedRows(node.rank);
    assert.match(logs, new RegExp(`spark wrapper: rank ${node.rank} of 3 `));
    assert.match(logs, new RegExp(`^fake-engine env: SPARK_ENGRAM_ROWS=${rows}$`, 'm'));
  }
  const stop = await spark(bed, ['launch', '--stop', '--cluster', wrapped]);
  assert.equal(stop.code, 0, stop.stderr);
  // The engine replaced the wrapper as PID 1: it got docker stop's SIGTERM and exited 0.
  for (const node of bed.nodes) {
    assert.deepEqual(bed.containers(node.rank).get(`spark-wrap3-r${node.rank}`), { state: 'exited', exitCode: 0 });
    assert.match(bed.logs(node.rank, `spark-wrap3-r${node.rank}`), /fake-engine: SIGTERM, exiting/);
  }
});

test("the wrapper refuses another rank's copy on one node: that node's container exits 2 and the launch names it", async () => {
  const wrapper = join(bed.shared, 'spark-wrapper.sh');
  const recipe = join(bed.dir, 'wrapped.toml');
  // A real head never serves with a rank missing; this one is told not to either.
  const swapped = writeBedCluster(bed, {
    name: 'swap3',
    hfCache: cache.hfCache,
    nodeEnv: { 0: { FAKE_ENGINE_HEALTHY_AFTER: 'never' } },
  });
  const node1 = join(bed.nodes[1]!.localDir, 'engram');
  const kept = join(bed.dir, 'engram-n1');
  cpSync(node1, kept, { recursive: true });
  rmSync(node1, { recursive: true });
  cpSync(join(bed.nodes[0]!.localDir, 'engram'), node1, { recursive: true });
  try {
    assert.ok(existsSync(wrapper) && existsSync(recipe), 'runs after the wrapper test');
    const r = await spark(bed, [
      'launch',
      recipe,
      '--cluster',
      swapped,
      '--cpu-only',
      '--force',
      '--interval',
      '0.2',
      '--timeout',
      '60',
    ]);
    assert.equal(r.code, 3, r.stderr);
    const message = r.stderr.trim().split('\n').at(-1)!;
    assert.ok(
      message.startsWith(
        `spark: node 1 (${bed.nodes[1]!.addr}): the container exited with status 2 before the server was healthy`,
      ),
      message,
    );
    assert.match(message, /holds the rows of rank 0 of 3/);
    assert.equal(bed.containers(1).get('spark-swap3-r1')?.exitCode, 2);
    for (const node of bed.nodes)
      assert.notEqual(bed.containers(node.rank).get(`spark-swap3-r${node.rank}`)?.state, 'running');
  } finally {
    rmSync(node1, { recursive: true });
    cpSync(kept, node1, { recursive: true });
  }
});
