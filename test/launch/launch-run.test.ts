// spark launch against fake ssh and docker executables: what each node's docker receives, the
// /health wait, and stopping the other nodes when one fails. The other failures (a killed
// start, a container that exits, no /health, containers already running, a node down) and
// the quoting of every kind of argument are in test/long/launch-run-scenarios.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { cli } from '../helpers/cli.js';
import { healthServer } from '../helpers/health-server.js';
import { alive, fakeNodes, waitFor } from '../helpers/fake-node.js';
import { AIDEN16, EUGR, REV, writeCluster, writeRecipe } from '../helpers/launch-files.js';
import { byHost, cluster4, failing, FAST, FORCED, HOSTS4, runs, type LaunchDoc } from '../helpers/launch-run.js';
import type { Io } from '../../src/terminal/io.js';
import type { SparkError } from '../../src/errors/errors.js';
import { runLaunch, type LaunchRequest } from '../../src/launch/index.js';

test('a healthy launch: docker on every node receives the plan argv byte for byte', async () => {
  const fake = fakeNodes();
  // Healthy only once every node's log stream has printed, as on a real boot (minutes, not ms):
  // a stream that had only started could print after the launch has stopped following.
  const health = await healthServer(2, () => fake.logsPrinted().length === 4);
  try {
    const r = await cli(
      ['launch', AIDEN16, '--cluster', cluster4(), '--json', '--health-url', health.url, ...FORCED],
      fake.env(),
    );
    assert.equal(r.code, 0, r.stderr);
    const doc = JSON.parse(r.stdout) as LaunchDoc;
    assert.equal(doc.healthy, true);
    assert.ok(health.hits() >= 3);
    const calls = fake.calls();
    const started = byHost(calls, 'run');
    assert.equal(runs(calls).length, 4);
    for (const n of doc.nodes) {
      const got = started.get(n.host);
      assert.ok(got, `no docker run on ${n.host}`);
      assert.deepEqual(['docker', ...got.argv], n.argv, `node ${n.rank}`);
      // Detected on the node by spark gid (the fake answers 3) and exported to the container.
      assert.equal(n.env.B12X_ROCE_GID_INDEX, '3');
      assert.ok(n.argv.includes('B12X_ROCE_GID_INDEX=3'));
      assert.ok(n.argv.includes(`NODE_RANK=${n.rank}`));
    }
    // ssh: never prompt, `--` before the destination, one call per step per node.
    const sshCalls = calls.filter((c) => c.prog === 'ssh');
    for (const c of sshCalls)
      assert.deepEqual(c.argv.slice(0, 6), ['-o', 'BatchMode=yes', '-o', 'ConnectTimeout=15', '--', c.host]);
    const gid = calls.filter((c) => c.prog === 'spark' && c.argv[0] === 'gid');
    assert.deepEqual(gid[0]!.argv, [
      'gid',
      '--index-only',
      '--hca',
      'rocep1s0f0,roceP2p1s0f0',
      '--addr-range',
      '192.168.200.0/24',
      '--family',
      'AF_INET',
      '--roce-version',
      '2',
    ]);
    // A stale stopped container is removed before each start; the log followers are gone.
    assert.deepEqual(
      [...byHost(calls, 'rm').values()].map((c) => c.argv).sort(),
      HOSTS4.map((_, i) => ['rm', `spark-fake4-r${i}`]),
    );
    const logs = calls.filter((c) => c.prog === 'docker' && c.argv[0] === 'logs');
    assert.equal(logs.length, 4);
    assert.deepEqual(logs.find((c) => c.host === 'n3')!.argv, ['logs', '--follow', 'spark-fake4-r2']);
    await waitFor(() => (logs.every((c) => !alive(c.pid)) ? true : undefined), 30_000);
    assert.equal(calls.filter((c) => c.argv[0] === 'stop').length, 0, 'nothing stopped after a healthy launch');
    assert.match(r.stderr, /^\[2 n3\] server booting$/m);
    assert.match(r.stderr, /healthy: http:\/\/127\.0\.0\.1:\d+\/health answered 200/);
  } finally {
    await health.close();
  }
});

test('a node whose docker run fails stops the others, says which and why, exit 3', async () => {
  const mountError =
    'docker: Error response from daemon: invalid mount config for type "bind": bind source path does not exist: /home/kilork/aiden4x-launch.sh';
  const { r, calls } = await failing({
    'n3 docker run': { exit: 125, stderr: mountError + '\n' },
    // The other starts are still in flight (pulling a 33 GB image, say) when n3 fails.
    '* docker run': { sleep: true },
  });
  assert.equal(r.code, 3, r.stderr);
  const last = r.stderr.trim().split('\n').at(-1)!;
  assert.match(
    last,
    /^spark: node 2 \(n3\) failed to start: docker run exit 125: docker: Error response from daemon: invalid mount config .*aiden4x-launch\.sh; stopped the containers on nodes 0, 1, 2, 3$/,
  );
  for (const c of runs(calls)) assert.equal(alive(c.pid), false, `docker run on ${c.host} still running`);
  assert.deepEqual([...byHost(calls, 'stop').keys()].sort(), HOSTS4);
  assert.equal(calls.filter((c) => c.argv[0] === 'logs').length, 0, 'no log following after a failed start');
});

test('preflight errors stop the launch before anything starts on a node, unless --force', async () => {
  const fake = fakeNodes();
  // `args` below a table header belongs to that table: preflight reports it as an error.
  const text = readFileSync(EUGR, 'utf8').replace(
    /\nargs = \[/,
    '\n[[extra_mounts]]\nhost = "/tmp"\ncontainer = "/x"\nargs = [',
  );
  const recipe = writeRecipe(text);
  const cluster = writeCluster({
    name: 'pf',
    hosts: ['p1', 'p2'],
    fabric: ['10.6.0.1', '10.6.0.2'],
    hfCache: '/nonexistent/hf',
  });
  const r = await cli(['launch', recipe, '--cluster', cluster, ...FAST], fake.env());
  assert.equal(r.code, 1, r.stderr);
  assert.match(
    r.stderr,
    /spark: preflight found \d+ error\(s\), nothing was started; fix them, or pass --force to launch anyway\n$/,
  );
  assert.match(r.stderr, /args on line \d+ is inside the \[\[extra_mounts\]\] table/);
  // Preflight asked each node for its facts (ssh, docker image inspect, spark --version); nothing ran.
  const asked = fake.calls();
  assert.deepEqual([...new Set(asked.filter((c) => c.prog === 'ssh').map((c) => c.host))].sort(), ['p1', 'p2']);
  assert.deepEqual(
    asked.filter((c) => c.prog === 'docker').map((c) => c.argv[0]),
    ['image', 'image'],
  );
  const health = await healthServer(0);
  try {
    const forced = await cli(
      ['launch', recipe, '--cluster', cluster, '--force', '--health-url', health.url, ...FAST],
      fake.env(),
    );
    assert.equal(forced.code, 0, forced.stderr);
    assert.equal(runs(fake.calls()).length, 2);
  } finally {
    await health.close();
  }
});

test('a node named 127.0.0.1 runs docker directly, without ssh', async () => {
  const fake = fakeNodes();
  const health = await healthServer(0);
  const cluster = writeCluster({
    name: 'loc',
    hosts: ['127.0.0.1', 'far'],
    fabric: ['10.5.0.1', '10.5.0.2'],
    hfCache: '/nonexistent/hf',
  });
  try {
    const r = await cli(
      ['launch', EUGR, '--cluster', cluster, '--health-url', health.url, '--json', ...FORCED],
      fake.env(),
    );
    assert.equal(r.code, 0, r.stderr);
    const calls = fake.calls();
    assert.deepEqual([...byHost(calls, 'run').keys()].sort(), ['far', 'local']);
    assert.ok(calls.filter((c) => c.prog === 'ssh').every((c) => c.host === 'far'));
    const doc = JSON.parse(r.stdout) as LaunchDoc;
    assert.deepEqual(['docker', ...byHost(calls, 'run').get('local')!.argv], doc.nodes[0]!.argv);
  } finally {
    await health.close();
  }
});

/** An Io that records stderr and can be watched while a launch runs. */
function recordingIo(env: NodeJS.ProcessEnv): { io: Io; err: () => string } {
  let err = '';
  return {
    io: { stdout: () => {}, stderr: (t) => (err += t), env, cwd: process.cwd(), stderrIsTTY: false, color: false },
    err: () => err,
  };
}

function request(cluster: string, url: string, extra: Partial<LaunchRequest> = {}): LaunchRequest {
  return {
    recipe: AIDEN16,
    cluster,
    revision: REV,
    healthUrl: url,
    timeoutMs: 120_000,
    intervalMs: 50,
    progressEveryMs: 0,
    force: true,
    ...extra,
  };
}

test('Ctrl-C while booting stops every container; with --follow after healthy it only ends the log stream', async () => {
  const fake = fakeNodes();
  const never = await healthServer(-1);
  const abort = new AbortController();
  const { io } = recordingIo(fake.env());
  try {
    const pending = runLaunch(request(cluster4(), never.url, { signal: abort.signal }), io);
    await waitFor(() => (fake.calls().filter((c) => c.argv[0] === 'logs').length === 4 ? true : undefined));
    abort.abort();
    await assert.rejects(
      pending,
      (e: SparkError) =>
        e.code === 'E_NODE_FAILED' &&
        /^launch interrupted; stopped the containers on nodes 0, 1, 2, 3$/.test(e.message),
    );
    assert.equal(byHost(fake.calls(), 'stop').size, 4);
  } finally {
    await never.close();
  }

  const fake2 = fakeNodes();
  const health = await healthServer(0, () => fake2.calls().filter((c) => c.argv[0] === 'logs').length === 4);
  const follow = new AbortController();
  const rec = recordingIo(fake2.env());
  try {
    const pending = runLaunch(request(cluster4(), health.url, { signal: follow.signal, follow: true }), rec.io);
    await waitFor(() => (rec.err().includes('healthy:') ? true : undefined)).catch((e: Error) =>
      assert.fail(e.message + '\n' + rec.err()),
    );
    await new Promise((r) => setTimeout(r, 100));
    const logs = fake2.calls().filter((c) => c.argv[0] === 'logs');
    assert.ok(
      logs.every((c) => alive(c.pid)),
      'still following after healthy',
    );
    follow.abort();
    const result = await pending;
    assert.equal(result.plan.nodes.length, 4);
    await waitFor(() => (logs.every((c) => !alive(c.pid)) ? true : undefined), 30_000);
    assert.equal(byHost(fake2.calls(), 'stop').size, 0, 'ending --follow leaves the server running');
  } finally {
    await health.close();
  }
});
