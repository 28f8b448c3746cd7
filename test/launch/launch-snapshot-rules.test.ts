// The rules the dry run and the launch once applied each their own way, now made once
// (src/launch/prepare.ts, facts.ts): where `~` in hf_cache points when the ref is read, when the
// model id may stand in for an unreadable ref, and which docker program the plan names.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cli } from '../helpers/cli.js';
import { fakeNodes } from '../helpers/fake-node.js';
import { healthServer } from '../helpers/health-server.js';
import { PACKED, hfCacheWith, writeCluster } from '../helpers/launch-files.js';
import { tempDir } from '../helpers/tmp.js';
import { dockerRuns, errorOf, FABRIC, HOSTS, MAIN, MODEL, RUN } from '../helpers/launch-snapshot-rules.js';

interface Doc {
  model: { id: string; path: string; revision?: string; from?: string; hostPath?: string };
  nodes: { argv: string[] }[];
  notes: string[];
}

test("~ in hf_cache is the head's home when the launch reads the ref, as in the cache it mounts", async () => {
  // The nodes' home holds the cache; this machine's home holds nothing (a workstation).
  const nodeHome = hfCacheWith(MODEL, MAIN);
  const fake = fakeNodes();
  for (const h of HOSTS) fake.setHome(h, nodeHome);
  const env = fake.env({}, { HOME: tempDir('spark-home-') });
  const cluster = writeCluster({ name: 'tilde', hosts: HOSTS, fabric: FABRIC, hfCache: '~' });
  const health = await healthServer(0);
  try {
    const r = await cli(['launch', PACKED, '--cluster', cluster, '--health-url', health.url, ...RUN], env);
    assert.equal(r.code, 0, r.stderr);
    const doc = JSON.parse(r.stdout) as Doc;
    const snapshot = `hub/models--deepseek-ai--DeepSeek-V4.1-Flash/snapshots/${MAIN}`;
    assert.deepEqual(
      [doc.model.revision, doc.model.from, doc.model.hostPath],
      [MAIN, 'refs/main', `${nodeHome}/${snapshot}`],
    );
    // The ref was read under the head's home (the fake nodes share this machine's files, so
    // here); the same home is the mount's source on every node.
    for (const n of doc.nodes)
      assert.ok(n.argv.includes(`type=bind,source=${nodeHome},target=/root/.cache/huggingface`));
  } finally {
    await health.close();
  }
  // A dry run knows only this machine's home, where the ref is not: the model id stands in.
  const dry = await cli(['launch', PACKED, '--cluster', cluster, '--dry-run', '--json'], env);
  assert.equal(dry.code, 0, dry.stderr);
  const doc = JSON.parse(dry.stdout) as Doc;
  assert.deepEqual(doc.model, { id: MODEL, path: MODEL });
  assert.ok(
    doc.notes.some((n) =>
      n.startsWith(
        `${env.HOME}/hub/models--deepseek-ai--DeepSeek-V4.1-Flash/refs/main is not readable on this machine`,
      ),
    ),
    doc.notes.join('\n'),
  );
});

test('a ref neither this machine nor the head can read: the dry run stands the model id in, the launch refuses after preflight (exit 2)', async () => {
  const fake = fakeNodes();
  const env = fake.env();
  const cluster = writeCluster({ name: 'noref', hosts: HOSTS, fabric: FABRIC, hfCache: '/nonexistent/hf' });
  const dry = await cli(['launch', PACKED, '--cluster', cluster, '--dry-run', '--json'], env);
  assert.equal(dry.code, 0, dry.stderr);
  assert.equal((JSON.parse(dry.stdout) as Doc).model.path, MODEL);
  const r = await cli(['launch', PACKED, '--cluster', cluster, ...RUN], env);
  assert.equal(r.code, 2, r.stderr);
  const err = errorOf(r.stderr);
  assert.equal(err.code, 'E_SNAPSHOT');
  assert.match(
    err.message,
    /cannot resolve deepseek-ai\/DeepSeek-V4\.1-Flash@main: \/nonexistent\/hf\/hub\/\S+\/refs\/main is not readable/,
  );
  const calls = fake.calls();
  assert.ok(
    calls.some((c) => c.prog === 'ssh' && c.host === 'k1' && c.argv.join(' ').includes('cat /nonexistent/hf/')),
    'asked the head for the ref',
  );
  // Preflight asked every node first (its report says why better than the missing ref); nothing started.
  assert.deepEqual([...new Set(calls.filter((c) => c.prog === 'ssh').map((c) => c.host))].sort(), HOSTS);
  assert.equal(dockerRuns(calls).length, 0);
});

test('the dry run names the docker program the launch runs (SPARK_DOCKER), as --stop --dry-run does', async () => {
  const cluster = writeCluster({ name: 'pod', hosts: HOSTS, fabric: FABRIC, hfCache: hfCacheWith(MODEL, MAIN) });
  const env = { HOME: '/home/op', SPARK_DOCKER: '/opt/bin/podman' };
  const r = await cli(['launch', PACKED, '--cluster', cluster, '--dry-run', '--json'], env);
  assert.equal(r.code, 0, r.stderr);
  for (const n of (JSON.parse(r.stdout) as Doc).nodes) assert.deepEqual(n.argv.slice(0, 2), ['/opt/bin/podman', 'run']);
  const stop = await cli(['launch', '--stop', '--cluster', cluster, '--dry-run', '--json'], env);
  assert.equal(stop.code, 0, stop.stderr);
  for (const n of (JSON.parse(stop.stdout) as { nodes: { argv: string[] }[] }).nodes)
    assert.match(n.argv.join(' '), /\/opt\/bin\/podman stop spark-pod-r\d/);
});
