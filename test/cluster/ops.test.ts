// Cluster operations on the real bed (four network namespaces, each with its own sshd and
// Docker daemon; the nodes have Node and nothing of spark): spark fanout install of an x64
// bundle on every node, status and preflight naming the node left on an older bundle, an
// install whose ssh is killed mid-copy leaving the previous version working, and spark logs of
// two nodes merged in time order. Each node installs under its own files (the bed's localMount,
// which every node sees as its own directory).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startBed, type Bed } from './bed.js';
import { spark, writeBedCluster, writeBedRecipe, writeCache, type Cache } from './files.js';
import { IMAGE } from './image.js';
import { makeBundle } from '../helpers/bundle.js';
import type { NodeStatus } from '../../src/status/status.js';

const A = 'a0a0a0a0a0a000000000000000000000000000a0';
const B = 'b1b1b1b1b1b100000000000000000000000000b1';
let bed: Bed;
let cache: Cache;
let bundles: { a: string; b: string };

before(async () => {
  bed = await startBed({ nodes: 4 });
  cache = writeCache(bed);
  bundles = {
    a: makeBundle('x64', ['--commit', A], bed.dir),
    b: makeBundle('x64', ['--commit', B], join(bed.dir, 'shared')),
  };
});
after(() => {
  const { leftover } = bed?.teardown() ?? { leftover: [] };
  assert.deepEqual(leftover, [], 'the bed left processes running');
});

const where = () => [
  '--prefix',
  join(bed.localMount, 'spark'),
  '--bin-dir',
  join(bed.localMount, 'bin'),
  '--lib-dir',
  join(bed.localMount, 'lib'),
];
/** spark on the nodes: the link the install made (each node resolves it in its own files). */
const onNodes = () => ({ ...bed.env, SPARK_REMOTE_BIN: join(bed.localMount, 'bin', 'spark') });
/** What `spark --version` says on node r, asked through its own sshd. */
function versionOn(rank: number): string {
  const r = spawnSync(
    bed.env.SPARK_SSH!,
    ['-o', 'BatchMode=yes', '--', bed.nodes[rank]!.addr, `${join(bed.localMount, 'bin', 'spark')} --version`],
    {
      encoding: 'utf8',
      env: bed.env,
    },
  );
  return r.status === 0 ? r.stdout.trim() : `failed: ${r.stderr.trim()}`;
}

test('install on four nodes, then a newer bundle on three: status and preflight name the node left behind', async () => {
  const all = writeBedCluster(bed, { name: 'ops', hfCache: cache.hfCache });
  const began = performance.now();
  const first = await spark(bed, ['fanout', 'install', bundles.a, '--cluster', all, ...where(), '--json']);
  const seconds = (performance.now() - began) / 1000;
  assert.equal(first.code, 0, first.stderr);
  process.stderr.write(`# fanout install on 4 bed nodes: ${seconds.toFixed(1)} s\n`);
  const doc = JSON.parse(first.stdout) as { nodes: { status: string; version: string }[] };
  assert.deepEqual(
    doc.nodes.map((n) => [n.status, n.version]),
    [0, 1, 2, 3].map(() => ['installed', `0.1.0+${A.slice(0, 12)}`]),
  );
  for (const n of bed.nodes) assert.equal(versionOn(n.rank), `0.1.0+${A.slice(0, 12)}`);

  const three = writeBedCluster(bed, { name: 'ops3', hfCache: cache.hfCache, ranks: [0, 1, 2] });
  const second = await spark(bed, ['fanout', 'install', bundles.b, '--cluster', three, ...where()]);
  assert.equal(second.code, 0, second.stderr);
  assert.equal(versionOn(3), `0.1.0+${A.slice(0, 12)}`);

  const status = await spark(bed, ['status', '--cluster', all, '--json', '--pack-dir', bed.localMount], {
    env: onNodes(),
  });
  assert.equal(status.code, 1, status.stderr);
  const st = JSON.parse(status.stdout) as { nodes: NodeStatus[] };
  assert.deepEqual(st.nodes[3]!.problems[0], `spark 0.1.0+${A.slice(0, 12)}, the other nodes 0.1.0+${B.slice(0, 12)}`);
  assert.ok(
    st.nodes.slice(0, 3).every((n) => n.spark === `0.1.0+${B.slice(0, 12)}` && n.reachable && n.disk !== undefined),
  );

  // preflight run by the newer bundle's spark (this machine's spark is then that build).
  const recipe = writeBedRecipe(bed, 'ops-recipe', { nodes: 4 });
  const newer = join(
    bed.nodes[0]!.localDir,
    'spark',
    'versions',
    `0.1.0-${B.slice(0, 12)}-x64`,
    'dist',
    'src',
    'bin.js',
  );
  const pf = spawnSync(process.execPath, [newer, 'preflight', recipe, '--cluster', all, '--only', 'nodes', '--json'], {
    encoding: 'utf8',
    env: onNodes(),
    timeout: 60_000,
    maxBuffer: 64 << 20,
  });
  assert.ok(pf.stdout.startsWith('{'), `preflight: exit ${pf.status} ${pf.signal ?? ''}\n${pf.stderr}`);
  const findings = (JSON.parse(pf.stdout) as { findings: { rule: string; message: string }[] }).findings;
  const mine = findings.filter((f) => f.rule === 'nodes.spark-version');
  assert.deepEqual(
    mine.map((f) => f.message),
    [`node 3 (${bed.nodes[3]!.addr}) runs spark 0.1.0+${A.slice(0, 12)}, this machine runs 0.1.0+${B.slice(0, 12)}`],
    pf.stdout,
  );
});

test('an install whose ssh is killed mid-copy leaves the node on its previous version, working', async () => {
  // ssh that gets 200 KB of the bundle, then is killed.
  const cut = join(bed.dir, 'bin', 'ssh-cut');
  writeFileSync(
    cut,
    `#!/bin/sh\nhead -c 200000 | ${bed.env.SPARK_SSH} "$@" &\npid=$!\nsleep 1\nkill -9 $pid 2>/dev/null\nwait $pid\n`,
    {
      mode: 0o755,
    },
  );
  const one = writeBedCluster(bed, { name: 'ops1', hfCache: cache.hfCache, ranks: [1] });
  const before = versionOn(1);
  const r = await spark(bed, ['fanout', 'install', bundles.a, '--cluster', one, ...where()], {
    env: { ...bed.env, SPARK_SSH: cut },
  });
  assert.equal(r.code, 3, r.stderr);
  assert.match(
    r.stderr,
    /node 0 \(\S+\): (received \d+ of \d+ bytes \(the copy was cut\); the previous version stays|ssh ended \(exit 137 \(killed\)\) before the node said the install was done)/,
  );
  assert.equal(versionOn(1), before);
  const lib = spawnSync(
    bed.env.SPARK_SSH!,
    ['-o', 'BatchMode=yes', '--', bed.nodes[1]!.addr, `${join(bed.localMount, 'bin', 'spark')} engine-lib --stack mia`],
    {
      encoding: 'utf8',
      env: bed.env,
    },
  );
  assert.equal(lib.status, 0, lib.stderr);
});

test("logs of two nodes merged in time order with launch's prefix; status reads the container and its stats line", async () => {
  const two = writeBedCluster(bed, { name: 'logs2', hfCache: cache.hfCache, ranks: [0, 1] });
  const stats =
    'librow_store: lookups=10 hit_rate=75.0% reads=3 packed=1 calls=2 reads_per_s=40 p50_us=12 p99_us=99 cache_bytes=4096 pinned_scale_bytes=0 lines_dropped=0';
  // Both start printing at the same whole second, whenever docker got each running.
  const at = Math.ceil(Date.now() / 1000) + 4;
  const wait = `while [ $(date +%s) -lt ${at} ]; do sleep 0.05; done`;
  const run = (rank: number, script: string) =>
    bed.docker(rank, [
      'run',
      '-d',
      '--name',
      `spark-logs2-r${rank}`,
      '--network',
      'host',
      IMAGE,
      'sh',
      '-c',
      `${wait}; ${script}; sleep 1000`,
    ]);
  run(0, `echo one; sleep 1; echo three; sleep 0.3; echo '${stats}' >&2`);
  run(1, 'sleep 0.5; echo two; sleep 1; echo four');
  await new Promise((r) => setTimeout(r, Math.max(0, at * 1000 + 2500 - Date.now())));
  const logs = await spark(bed, ['logs', '--cluster', two]);
  assert.equal(logs.code, 0, logs.stderr);
  const [a0, a1] = [bed.nodes[0]!.addr, bed.nodes[1]!.addr];
  assert.equal(
    logs.stdout,
    [`[0 ${a0}] one`, `[1 ${a1}] two`, `[0 ${a0}] three`, `[0 ${a0}] ${stats}`, `[1 ${a1}] four`, ''].join('\n'),
  );
  const status = await spark(bed, ['status', '--cluster', two, '--json'], { env: onNodes() });
  const st = JSON.parse(status.stdout) as { nodes: NodeStatus[] };
  assert.equal(st.nodes[0]!.container?.state, 'running');
  assert.equal(st.nodes[0]!.stats?.hitRate, 75);
  assert.equal(st.nodes[0]!.stats?.p99Us, 99);
  assert.equal(st.nodes[1]!.stats, undefined);
  // --follow ended by Ctrl-C: no docker logs is left on either node.
  const follow = await spark(bed, ['logs', '--cluster', two, '--follow'], {
    during: (child) => void new Promise((r) => setTimeout(r, 3000)).then(() => child.kill('SIGINT')),
  });
  assert.equal(follow.code, 0, follow.stderr);
  await new Promise((r) => setTimeout(r, 500));
  for (const n of bed.nodes.slice(0, 2)) {
    const ps = spawnSync('sh', ['-c', `ps -eo pid,args | grep '[d]ocker logs' || true`], { encoding: 'utf8' });
    assert.doesNotMatch(ps.stdout, /docker logs --timestamps --follow spark-logs2/, `node ${n.rank}`);
  }
  for (const n of bed.nodes.slice(0, 2)) bed.docker(n.rank, ['rm', '-f', `spark-logs2-r${n.rank}`]);
});
