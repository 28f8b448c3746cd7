// spark launch against fake ssh and docker executables: what each node's docker receives, the
// /health wait, and stopping the other nodes when one fails.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { cli, type CliRun } from '../helpers/cli.js';
import { healthServer } from '../helpers/health-server.js';
import { alive, fakeNodes, waitFor, type Behavior, type FakeCall } from '../helpers/fake-node.js';
import { AIDEN16, EUGR, REV, writeCluster, writeRecipe } from '../helpers/launch-files.js';
import type { Io } from '../../src/terminal/io.js';
import type { SparkError } from '../../src/errors/errors.js';
import { runLaunch, type LaunchRequest } from '../../src/launch/index.js';

interface LaunchDoc {
  nodes: { rank: number; host: string; argv: string[]; env: Record<string, string>; container: string }[];
  healthy: boolean;
}

const HOSTS4 = ['n1', 'n2', 'n3', 'n4'];
const cluster4 = () =>
  writeCluster({
    name: 'fake4',
    hosts: HOSTS4,
    fabric: ['192.168.200.11', '192.168.200.12', '192.168.200.13', '192.168.200.14'],
    hfCache: '/nonexistent/hf',
  });
const FAST = ['--revision', REV, '--interval', '0.05', '--timeout', '120'];
// The fake nodes hold none of the recipes' files, so preflight (which now asks every node)
// finds errors on them; the tests below are about what happens after it, hence --force.
// preflight-cluster.test.ts checks nodes that pass.
const FORCED = [...FAST, '--force'];

const runs = (calls: FakeCall[]) => calls.filter((c) => c.prog === 'docker' && c.argv[0] === 'run');
const byHost = (calls: FakeCall[], sub: string) =>
  new Map(calls.filter((c) => c.prog === 'docker' && c.argv[0] === sub).map((c) => [c.host, c]));

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

test('arguments with quotes, $, backslashes, newlines and JSON arrive byte-exact through ssh', async () => {
  const fake = fakeNodes();
  const health = await healthServer(0);
  const tricky = `it's $HOME \`id\` \\ "q" ; rm -rf / #\n\tnext line  `;
  const text = readFileSync(EUGR, 'utf8')
    .replace(
      '"--trust-remote-code",\n]',
      `"--trust-remote-code", "--x-note", ${JSON.stringify(tricky)}, "--x-empty", "",\n]`,
    )
    .replace('HF_HUB_OFFLINE = "1"', `HF_HUB_OFFLINE = "1"\nX_TRICKY = ${JSON.stringify(tricky)}`);
  const cluster = writeCluster({
    name: 'fake2',
    hosts: ['m1', 'm2'],
    fabric: ['10.8.0.1', '10.8.0.2'],
    hfCache: '~/hf',
  });
  try {
    const r = await cli(
      ['launch', writeRecipe(text), '--cluster', cluster, '--json', '--health-url', health.url, ...FORCED],
      fake.env({}, { HOME: '/home/o p' }),
    );
    assert.equal(r.code, 0, r.stderr);
    const doc = JSON.parse(r.stdout) as LaunchDoc;
    const started = byHost(fake.calls(), 'run');
    for (const n of doc.nodes) {
      const got = started.get(n.host)!.argv;
      assert.deepEqual(['docker', ...got], n.argv);
      const at = (flag: string) => got[got.indexOf(flag) + 1];
      assert.equal(at('--compilation-config'), '{"cudagraph_mode":"FULL_AND_PIECEWISE","custom_ops":["all"]}');
      assert.deepEqual(JSON.parse(at('--speculative-config')!), {
        method: 'dspark',
        num_speculative_tokens: 5,
        draft_sample_method: 'probabilistic',
        attention_backend: 'B12X_MLA_SPARSE',
      });
      assert.equal(
        at('--reasoning-config'),
        '{"reasoning_parser":"deepseek_v4","reasoning_start_str":"","reasoning_end_str":""}',
      );
      assert.equal(at('--x-note'), tricky);
      assert.equal(at('--x-empty'), '');
      assert.ok(got.includes(`X_TRICKY=${tricky}`));
      // ~ is each node's own home, asked over ssh (the fake nodes share this one).
      assert.ok(got.includes('type=bind,source=/home/o p/hf,target=/root/.cache/huggingface'), got.join('\n'));
      assert.ok(got.includes('/home/o p/.cache/vllm-ds4-eugr:/root/.cache/vllm'));
    }
  } finally {
    await health.close();
  }
});

async function failing(
  behavior: Behavior,
  extra: string[] = [],
  during?: (fake: ReturnType<typeof fakeNodes>) => Promise<void>,
) {
  const fake = fakeNodes();
  const health = await healthServer(-1);
  try {
    const pending = cli(
      ['launch', AIDEN16, '--cluster', cluster4(), '--health-url', health.url, ...FORCED, ...extra],
      fake.env(behavior),
    );
    if (during) await during(fake);
    const r: CliRun = await pending;
    return { r, calls: fake.calls() };
  } finally {
    await health.close();
  }
}

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

test('containers of an earlier launch still running: refused before anything starts or stops', async () => {
  const { r, calls } = await failing({ 'n3 docker container': { stdout: 'true\n' } });
  assert.equal(r.code, 3);
  assert.match(
    r.stderr,
    /spark: already running: spark-fake4-r2 on node 2 \(n3\); nothing was started; stop them first \(spark launch --stop --cluster \S+fake4\.toml\) or pick other names with --name\n$/,
  );
  // Preflight only asked about the image; then each node was asked about its container, and nothing else ran.
  assert.deepEqual(
    calls.filter((c) => c.prog === 'docker' && c.argv[0] !== 'image').map((c) => c.argv.slice(0, 2).join(' ')),
    Array(4).fill('container inspect'),
  );
  const noRoute = { 'n4 ssh': { exit: 255, stderr: 'ssh: connect to host n4 port 22: No route to host\n' } };
  const down = await failing(noRoute);
  assert.equal(down.r.code, 3);
  // Preflight names the node first (one error, the others still checked), then the launch stops on it.
  assert.match(
    down.r.stderr,
    /nodes\.reachable: node 3 \(n4\) did not answer: ssh failed: ssh: connect to host n4 port 22: No route to host; its node checks did not run/,
  );
  assert.match(
    down.r.stderr,
    /\nspark: node 3 \(n4\): cannot reach the node over ssh: ssh: connect to host n4 port 22: No route to host; check that `ssh n4` works without a password\n$/,
  );
  const noGid = await failing(noRoute, ['--no-detect-gid']);
  assert.equal(noGid.r.code, 3);
  assert.match(
    noGid.r.stderr,
    /cannot run docker on 1 node\(s\), nothing was started: node 3 \(n4\): ssh: connect to host n4 port 22: No route to host\n$/,
  );
  assert.equal(runs([...down.calls, ...noGid.calls]).length, 0);
  assert.equal(noGid.calls.filter((c) => c.prog === 'spark' && c.argv[0] === 'gid').length, 0);
});

test("killing one node's start makes the launch stop the others and exit non-zero", async () => {
  let victim: FakeCall | undefined;
  const { r, calls } = await failing({ '* docker run': { sleep: true } }, [], async (fake) => {
    // Wait until every node's docker run is in flight, then kill n2's.
    await waitFor(() => (runs(fake.calls()).length === 4 ? true : undefined));
    victim = runs(fake.calls()).find((c) => c.host === 'n2')!;
    process.kill(victim.pid, 'SIGKILL');
  });
  assert.equal(r.code, 3, r.stderr);
  assert.match(
    r.stderr,
    /spark: node 1 \(n2\) failed to start: docker run exit 137 \(killed\)(: Killed)?; stopped the containers on nodes 0, 1, 2, 3\n$/,
  );
  for (const c of runs(calls)) assert.equal(alive(c.pid), false, `docker run on ${c.host} still running`);
  assert.equal(byHost(calls, 'stop').size, 4);
});

test('a container that exits before the server is healthy stops the others', async () => {
  const { r, calls } = await failing({
    'n2 docker logs': { stdout: 'loading shards\nRuntimeError: NCCL error: unhandled system error\n', exit: 0 },
    'n2 docker inspect': { stdout: 'exited 137 true\n' },
  });
  assert.equal(r.code, 3, r.stderr);
  assert.match(
    r.stderr,
    /spark: node 1 \(n2\): the container exited with status 137 \(out of memory\) before the server was healthy; last output: loading shards \| RuntimeError: NCCL error: unhandled system error; stopped the containers on nodes 0, 1, 2, 3\n$/,
  );
  const logs = calls.filter((c) => c.argv[0] === 'logs');
  for (const c of logs) assert.equal(alive(c.pid), false);
  assert.equal(byHost(calls, 'stop').size, 4);
  assert.deepEqual(byHost(calls, 'inspect').get('n2')!.argv, [
    'inspect',
    '--format',
    '{{.State.Status}} {{.State.ExitCode}} {{.State.OOMKilled}}',
    'spark-fake4-r1',
  ]);
});

test('no /health within the timeout: exit 3 naming the URL; --keep-on-failure leaves them running', async () => {
  const { r, calls } = await failing({}, ['--timeout', '0.4', '--json']);
  assert.equal(r.code, 3);
  const err = JSON.parse(r.stderr.trim().split('\n').at(-1)!) as { error: { code: string; message: string } };
  assert.equal(err.error.code, 'E_HEALTH_TIMEOUT');
  assert.match(
    err.error.message,
    /health did not answer 200 within 0\.4s \(last: HTTP 503\); stopped the containers on nodes 0, 1, 2, 3; see the logs with: ssh n1 docker logs spark-fake4-r0/,
  );
  assert.equal(r.stdout, '');
  assert.equal(byHost(calls, 'stop').size, 4);
  const kept = await failing({}, ['--timeout', '0.3', '--keep-on-failure']);
  assert.equal(kept.r.code, 3);
  assert.match(kept.r.stderr, /the containers were left running \(--keep-on-failure\)/);
  assert.equal(byHost(kept.calls, 'stop').size, 0);
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
