// spark logs: docker's timestamps split off and compared as times, the merge order of several
// nodes (held lines overtaken by earlier ones of another node), and on fake nodes: two nodes'
// lines merged, --grep, --rank, and a --follow whose end leaves no docker logs running.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LogMerger, splitStamp, startLogs, type LogLine } from '../../src/status/logs.js';
import { alive, fakeNodes, waitFor } from '../helpers/fake-node.js';
import { cli } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';
import type { Io } from '../../src/terminal/io.js';
import { writeCluster } from '../helpers/launch-files.js';

test("docker's timestamps: fractions of any length compare as times, offsets as UTC, a line without one is kept whole", () => {
  const a = splitStamp('2026-12-06T14:00:00.1Z first');
  const b = splitStamp('2026-12-06T14:00:00.12Z second');
  assert.equal(a.text, 'first');
  assert.equal(a.stamp, '2026-12-06T14:00:00.1Z');
  assert.ok(a.key < b.key, `${a.key} < ${b.key}`);
  assert.equal(splitStamp('2026-12-06T16:00:00.5+02:00 x').key, '2026-12-06T14:00:00.500000000');
  assert.deepEqual(splitStamp('no stamp here'), { key: '', stamp: '', text: 'no stamp here' });
});

test('the merge: time order across nodes, each node in its own order, held lines let out only when due', () => {
  const out: LogLine[] = [];
  const m = new LogMerger((l) => out.push(l), 500);
  m.push(1, 'b', '2026-12-06T14:00:02Z b2', 0);
  m.push(0, 'a', '2026-12-06T14:00:01Z a1', 100);
  m.push(0, 'a', '2026-12-06T14:00:03Z a3', 100);
  m.push(0, 'a', 'continued', 100);
  m.push(1, 'b', '2026-12-06T14:00:01Z b1', 300);
  m.flush(550); // only b2 is due, but a1 and b1 sort before it and are not: nothing yet
  assert.equal(out.length, 0);
  m.flush(850);
  assert.deepEqual(
    out.map((l) => l.text),
    ['a1', 'b1', 'b2', 'a3', 'continued'],
  );
});

function twoNodes() {
  const fake = fakeNodes();
  const cluster = writeCluster({
    name: 'two',
    hosts: ['n1', 'n2'],
    fabric: ['192.168.1.1', '192.168.1.2'],
    hfCache: '/nonexistent/hf',
  });
  return { fake, cluster };
}

test('two nodes: every line once, in time order, with the [rank host] prefix; --grep and --rank', async () => {
  const { fake, cluster } = twoNodes();
  const env = fake.env({
    'n1 docker logs': {
      stdout:
        '2026-12-06T14:00:00.100Z boot\n2026-12-06T14:00:00.300Z libengram_rows: calls=1\n2026-12-06T14:00:02Z ready\n',
    },
    'n2 docker logs': { stdout: '2026-12-06T14:00:00.2Z boot\n2026-12-06T14:00:01.05Z libengram_rows: calls=2\n' },
  });
  const all = await cli(['logs', '--cluster', cluster], env);
  assert.equal(all.code, 0, all.stderr);
  assert.equal(
    all.stdout,
    [
      '[0 n1] boot',
      '[1 n2] boot',
      '[0 n1] libengram_rows: calls=1',
      '[1 n2] libengram_rows: calls=2',
      '[0 n1] ready',
      '',
    ].join('\n'),
  );
  const calls = fake.calls().filter((c) => c.prog === 'docker');
  assert.deepEqual(calls.map((c) => c.argv.join(' ')).sort(), [
    'logs --timestamps spark-two-r0',
    'logs --timestamps spark-two-r1',
  ]);
  const grep = await cli(['logs', '--cluster', cluster, '--grep', '^libengram', '--rank', '1', '--since', '10m'], env);
  assert.equal(grep.stdout, '[1 n2] libengram_rows: calls=2\n');
  assert.ok(
    fake.calls().some((c) => c.prog === 'docker' && c.argv.join(' ') === 'logs --timestamps --since 10m spark-two-r1'),
  );
});

test('a node without the container: exit 3 naming it; a bad --since is a usage error', async () => {
  const { fake, cluster } = twoNodes();
  const env = fake.env({
    'n1 docker logs': { stdout: '2026-12-06T14:00:00Z boot\n' },
    'n2 docker logs': { exit: 1, stderr: 'Error response from daemon: No such container: spark-two-r1\n' },
  });
  const r = await cli(['logs', '--cluster', cluster], env);
  assert.equal(r.code, 3);
  assert.match(
    r.stderr,
    /no logs from 1 of 2 node\(s\): node 1 \(n2\): Error response from daemon: No such container: spark-two-r1/,
  );
  const bad = await cli(['logs', '--cluster', cluster, '--since', '1h; rm -rf /'], env);
  assert.equal(bad.code, 2);
});

test('--follow: lines arrive while it runs; its end stops docker logs on every node (nothing left running there)', async () => {
  const { fake, cluster } = twoNodes();
  // A docker whose logs --follow prints a stamped line, then runs until killed, as docker logs -f does.
  const dir = tempDir('spark-follow-');
  const docker = join(dir, 'docker');
  writeFileSync(
    docker,
    `#!/bin/sh\necho $$ > "${dir}/pid.$FAKE_HOST"\necho "$(date -u +%Y-%m-%dT%H:%M:%S.%NZ) following $*"\nexec sleep 100000\n`,
    { mode: 0o755 },
  );
  const env = fake.env({}, { SPARK_DOCKER: docker });
  let out = '';
  const io: Io = {
    stdout: (t) => (out += t),
    stderr: () => {},
    env,
    cwd: process.cwd(),
    stderrIsTTY: false,
    color: false,
  };
  const run = await startLogs({ cluster, follow: true, holdMs: 50 }, io, io.stdout);
  await waitFor(() => (out.split('\n').length > 2 ? true : undefined));
  assert.match(out, /^\[0 n1\] following logs --timestamps --follow spark-two-r0$/m);
  assert.match(out, /^\[1 n2\] following logs --timestamps --follow spark-two-r1$/m);
  const pids = ['n1', 'n2'].map((h) => Number(readFileSync(join(dir, `pid.${h}`), 'utf8')));
  assert.ok(pids.every(alive));
  run.stop();
  const done = await run.done;
  assert.equal(done.interrupted, true);
  // Every session ended by itself once its stdin closed (exit 143: its follower was stopped on
  // the node), not by the signal the local ssh gets 3 s later (which would leave code null).
  assert.ok(
    done.nodes.every((n) => n.code !== null),
    JSON.stringify(done.nodes),
  );
  // Before the 3 s after which the local ssh is signalled: the node itself ended its follower.
  await waitFor(() => (pids.every((p) => !alive(p)) ? true : undefined), 2000);
});
