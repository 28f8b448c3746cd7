// spark launch and --stop on a real cluster: three network namespaces, each with its own sshd
// and Docker daemon (test/cluster/bed.ts). What is left running is asked of each node's daemon
// directly, never taken from spark's word.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startBed, type Bed } from './bed.js';
import { PORT, spark, stderrShows, writeBedCluster, writeBedRecipe, writeCache, type Cache } from './files.js';
import type { NodeStatus } from '../../src/status/status.js';

let bed: Bed;
let cache: Cache;

before(async () => {
  bed = await startBed({ nodes: 3 });
  cache = writeCache(bed);
});
after(() => {
  const { leftover } = bed?.teardown() ?? { leftover: [] };
  assert.deepEqual(leftover, [], 'the bed left processes running');
});

const WAIT = ['--interval', '0.2', '--timeout', '60', '--cpu-only'];

/** Every container of every node's daemon: `rank name state exit`. */
function everyContainer(): string[] {
  return bed.nodes.flatMap((n) =>
    [...bed.containers(n.rank)].map(([name, c]) => `${n.rank} ${name} ${c.state} ${c.exitCode}`),
  );
}
function running(): string[] {
  return everyContainer().filter((c) => c.split(' ')[2] === 'running');
}

test('a 3-node launch becomes healthy; each engine got its rank, address and args; status and logs see every node; --stop leaves nothing running', async () => {
  const stats =
    'libengram_rows: calls=12 rows=960 hit_rate=62.5% reads=360 reads_per_s=120 p50_us=41 p99_us=870 cache_bytes=1048576 pinned_scale_bytes=0 lines_dropped=0';
  const recipe = writeBedRecipe(bed, 'healthy', {
    nodes: 3,
    env: { FAKE_ENGINE_HEALTHY_AFTER: '2', FAKE_ENGINE_STATS: stats },
  });
  const cluster = writeBedCluster(bed, { name: 'ok3', hfCache: cache.hfCache });
  const head = `[0 ${bed.nodes[0]!.addr}]`;
  // --follow: the logs stream from the real containers until Ctrl-C, which then ends only that.
  const r = await spark(bed, ['launch', recipe, '--cluster', cluster, '--json', '--follow', ...WAIT], {
    during: (child) =>
      void stderrShows(child, 'healthy: ')
        .then(() => stderrShows(child, `${head} fake-engine: ready`))
        .then(() => child.kill('SIGINT')),
  });
  assert.equal(r.code, 0, r.stderr);
  assert.ok(r.stderr.indexOf(`${head} fake-engine: listening on port ${PORT}`) >= 0, r.stderr);
  const doc = JSON.parse(r.stdout) as {
    healthy: boolean;
    nodes: { rank: number; argv: string[]; container: string }[];
  };
  assert.equal(doc.healthy, true);
  assert.match(r.stderr, /healthy: http:\/\/[\d.]+:30000\/health answered 200/);
  assert.deepEqual(running().sort(), [
    '0 spark-ok3-r0 running 0',
    '1 spark-ok3-r1 running 0',
    '2 spark-ok3-r2 running 0',
  ]);

  for (const node of bed.nodes) {
    const logs = bed.logs(node.rank, `spark-ok3-r${node.rank}`);
    // The argument vector arrived byte for byte through ssh, the node's login shell and docker.
    const args = [...logs.matchAll(/^fake-engine arg: (.*)$/gm)].map((m) => m[1]);
    assert.deepEqual(
      args,
      doc.nodes[node.rank]!.argv.slice(doc.nodes[node.rank]!.argv.indexOf('spark-bed/engine:1') + 1),
    );
    assert.ok(args.includes('{"a": "b c"}'));
    assert.match(logs, new RegExp(`^fake-engine env: NODE_RANK=${node.rank}$`, 'm'));
    assert.match(logs, new RegExp(`^fake-engine env: SGLANG_HOST_IP=${node.addr.replace(/\./g, '\\.')}$`, 'm'));
    const host = JSON.parse(
      bed.docker(node.rank, ['inspect', '--format', '{{json .HostConfig}}', `spark-ok3-r${node.rank}`]),
    ) as {
      NetworkMode: string;
      ShmSize: number;
      Mounts: { Source: string; Target: string }[] | null;
    };
    assert.equal(host.NetworkMode, 'host');
    assert.equal(host.ShmSize, 1024 ** 3);
    assert.deepEqual(
      host.Mounts?.map((m) => [m.Source, m.Target]),
      [[cache.hfCache, '/root/.cache/huggingface']],
    );
  }
  // Only the head serves, on its own address: the container shares the node's network.
  assert.match(bed.logs(0, 'spark-ok3-r0'), new RegExp(`listening on port ${PORT}`));

  // status: every node's container running, its engine library's stats line read, the head's
  // /health answered (spark itself is not installed on these nodes: the ops tests install it).
  const status = await spark(bed, ['status', '--cluster', cluster, recipe, '--json']);
  const st = JSON.parse(status.stdout) as { nodes: NodeStatus[] };
  assert.deepEqual(
    st.nodes.map((n) => [n.rank, n.reachable, n.container?.state, n.stats?.hitRate, n.stats?.p99Us]),
    [0, 1, 2].map((rank) => [rank, true, 'running', 62.5, 870]),
    status.stdout + status.stderr,
  );
  assert.equal(st.nodes[0]!.health, '200', status.stdout);
  // logs: the three containers' lines in one stream, each with launch's prefix.
  const logs = await spark(bed, ['logs', '--cluster', cluster, '--grep', 'fake-engine: (ready|started)']);
  assert.equal(logs.code, 0, logs.stderr);
  for (const n of bed.nodes) assert.ok(logs.stdout.includes(`[${n.rank} ${n.addr}] fake-engine: started`), logs.stdout);
  assert.ok(logs.stdout.includes(`${head} fake-engine: ready`), logs.stdout);

  const stop = await spark(bed, ['launch', '--stop', '--cluster', cluster]);
  assert.equal(stop.code, 0, stop.stderr);
  assert.equal((stop.stdout.match(/ stopped/g) ?? []).length, 3, stop.stdout);
  // Stopped, not removed (docker logs still works), and each engine ended on SIGTERM itself.
  assert.deepEqual(everyContainer().sort(), [
    '0 spark-ok3-r0 exited 0',
    '1 spark-ok3-r1 exited 0',
    '2 spark-ok3-r2 exited 0',
  ]);
  assert.match(bed.logs(1, 'spark-ok3-r1'), /fake-engine: SIGTERM, exiting/);
});

test('a container that exits at start: the others are stopped, the message names the node and its last output', async () => {
  const recipe = writeBedRecipe(bed, 'exits', { nodes: 3, env: { FAKE_ENGINE_HEALTHY_AFTER: 'never' } });
  const cluster = writeBedCluster(bed, {
    name: 'exit3',
    hfCache: cache.hfCache,
    nodeEnv: { 1: { FAKE_ENGINE_EXIT: '3' } },
  });
  const r = await spark(bed, ['launch', recipe, '--cluster', cluster, ...WAIT]);
  assert.equal(r.code, 3, r.stderr);
  const addr = bed.nodes[1]!.addr;
  const message = r.stderr.trim().split('\n').at(-1)!;
  assert.ok(
    message.startsWith(`spark: node 1 (${addr}): the container exited with status 3 before the server was healthy`),
    message,
  );
  assert.match(
    message,
    /last output: .*fake-engine: cannot open the model \(asked to fail\) \| fake-engine: exiting with status 3;/,
  );
  assert.match(message, /stopped the containers on nodes 0, 1, 2$/);
  // Its log lines were streamed with the node's prefix as they came.
  assert.match(
    r.stderr,
    new RegExp(`^\\[1 ${addr.replace(/\./g, '\\.')}\\] +fake-engine: exiting with status 3$`, 'm'),
  );
  assert.deepEqual(running(), []);
  assert.deepEqual(
    everyContainer()
      .filter((c) => c.includes('exit3'))
      .sort(),
    ['0 spark-exit3-r0 exited 0', '1 spark-exit3-r1 exited 3', '2 spark-exit3-r2 exited 0'],
  );

  // --stop after the failure: nothing was running, and it says so without error.
  const stop = await spark(bed, ['launch', '--stop', '--cluster', cluster]);
  assert.equal(stop.code, 0, stop.stderr);
  assert.deepEqual(running(), []);
});

test('--stop after a failed launch that kept its containers (--keep-on-failure): nothing is left running', async () => {
  const recipe = writeBedRecipe(bed, 'kept', { nodes: 3, env: { FAKE_ENGINE_HEALTHY_AFTER: 'never' } });
  const cluster = writeBedCluster(bed, {
    name: 'kept3',
    hfCache: cache.hfCache,
    nodeEnv: { 2: { FAKE_ENGINE_EXIT: '1' } },
  });
  const r = await spark(bed, ['launch', recipe, '--cluster', cluster, '--keep-on-failure', ...WAIT]);
  assert.equal(r.code, 3, r.stderr);
  assert.match(
    r.stderr.trim().split('\n').at(-1)!,
    /^spark: node 2 .*; the containers were left running \(--keep-on-failure\)$/,
  );
  assert.deepEqual(running().sort(), ['0 spark-kept3-r0 running 0', '1 spark-kept3-r1 running 0']);
  const stop = await spark(bed, ['launch', '--stop', '--cluster', cluster, '--json']);
  assert.equal(stop.code, 0, stop.stderr);
  const doc = JSON.parse(stop.stdout) as { nodes: { rank: number; status: string }[] };
  assert.deepEqual(
    doc.nodes.map((n) => n.status),
    ['stopped', 'stopped', 'stopped'],
  );
  assert.deepEqual(running(), []);
  assert.deepEqual(
    everyContainer()
      .filter((c) => c.includes('kept3'))
      .sort(),
    ['0 spark-kept3-r0 exited 0', '1 spark-kept3-r1 exited 0', '2 spark-kept3-r2 exited 1'],
  );
});

test('a read-only mount source missing on one node: preflight names it; forced, docker refuses it there and the others are stopped', async () => {
  const script = join(bed.localMount, 'launch.sh');
  for (const rank of [0, 2])
    writeFileSync(join(bed.nodes[rank]!.localDir, 'launch.sh'), '#!/bin/sh\nexec /engine "$@"\n', { mode: 0o755 });
  const recipe = writeBedRecipe(bed, 'mount', {
    nodes: 3,
    entrypoint: ['sh', '/launch.sh'],
    mounts: [{ host: script, container: '/launch.sh', readOnly: true }],
    env: { FAKE_ENGINE_HEALTHY_AFTER: 'never' },
  });
  const cluster = writeBedCluster(bed, { name: 'mount3', hfCache: cache.hfCache });
  const checked = await spark(bed, ['launch', recipe, '--cluster', cluster, ...WAIT]);
  assert.equal(checked.code, 1, checked.stderr);
  assert.ok(
    checked.stderr.includes(
      `mounts.host-path: extra_mounts host ${script} (${script}) does not exist on node 1 (${bed.nodes[1]!.addr})`,
    ),
    checked.stderr,
  );
  assert.match(checked.stderr, /nothing was started/);
  assert.deepEqual(
    everyContainer().filter((c) => c.includes('mount3')),
    [],
  );

  const forced = await spark(bed, ['launch', recipe, '--cluster', cluster, '--force', ...WAIT]);
  assert.equal(forced.code, 3, forced.stderr);
  const message = forced.stderr.trim().split('\n').at(-1)!;
  assert.ok(
    message.startsWith(`spark: node 1 (${bed.nodes[1]!.addr}) failed to start: docker run exit 125: `),
    message,
  );
  assert.ok(
    message.includes(
      `docker run exit 125: docker: Error response from daemon: invalid mount config for type "bind": bind source path does not exist: ${script};`,
    ),
    message,
  );
  assert.match(message, /stopped the containers on nodes 0, 1, 2$/);
  assert.deepEqual(running(), []);
});

test('Ctrl-C during the health wait stops every container it started', async () => {
  const recipe = writeBedRecipe(bed, 'never', { nodes: 3, env: { FAKE_ENGINE_HEALTHY_AFTER: 'never' } });
  const cluster = writeBedCluster(bed, { name: 'int3', hfCache: cache.hfCache });
  const r = await spark(bed, ['launch', recipe, '--cluster', cluster, ...WAIT], {
    during: (child) =>
      void stderrShows(child, 'waiting for http://').then(async () => {
        // The containers are up and the head answers 404: interrupt mid-wait.
        await new Promise((res) => setTimeout(res, 1000));
        child.kill('SIGINT');
      }),
  });
  assert.equal(r.code, 3, r.stderr);
  assert.match(
    r.stderr.trim().split('\n').at(-1)!,
    /^spark: launch interrupted; stopped the containers on nodes 0, 1, 2$/,
  );
  assert.deepEqual(running(), []);
  assert.deepEqual(
    everyContainer()
      .filter((c) => c.includes('int3'))
      .sort(),
    ['0 spark-int3-r0 exited 0', '1 spark-int3-r1 exited 0', '2 spark-int3-r2 exited 0'],
  );
});

test('an unreachable node: preflight names it and nothing starts; forced, the launch stops before any container', async () => {
  const recipe = writeBedRecipe(bed, 'down', { nodes: 3 });
  const cluster = writeBedCluster(bed, { name: 'down3', hfCache: cache.hfCache, ranks: [0, 1], down: true });
  const r = await spark(bed, ['launch', recipe, '--cluster', cluster, ...WAIT]);
  assert.equal(r.code, 1, r.stderr);
  assert.match(
    r.stderr,
    new RegExp(`nodes.reachable: node 2 \\(${bed.unusedAddr.replace(/\./g, '\\.')}\\) did not answer: ssh failed: `),
  );
  const forced = await spark(bed, ['launch', recipe, '--cluster', cluster, '--force', ...WAIT]);
  assert.equal(forced.code, 3, forced.stderr);
  assert.match(forced.stderr, new RegExp(`node 2 \\(${bed.unusedAddr.replace(/\./g, '\\.')}\\)`));
  assert.match(forced.stderr.trim().split('\n').at(-1)!, /nothing was started/);
  assert.deepEqual(
    everyContainer().filter((c) => c.includes('down3')),
    [],
  );
});
