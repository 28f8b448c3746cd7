// spark launch on fake nodes, the rest of test/launch/launch-run.test.ts: arguments of every
// kind through ssh, and each other way a launch fails (containers already running, a node
// down, a killed start, a container that exits while booting, no /health in time).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { cli } from '../helpers/cli.js';
import { healthServer } from '../helpers/health-server.js';
import { alive, fakeNodes, waitFor, type FakeCall } from '../helpers/fake-node.js';
import { EUGR, writeCluster, writeRecipe } from '../helpers/launch-files.js';
import { byHost, failing, FORCED, runs, type LaunchDoc } from '../helpers/launch-run.js';

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
