// Fan-out of node-local work (spark fanout pack|verify), spark launch --stop, and the pieces
// under them: sh quoting, prefixed streaming with stop-the-others, the /health poll.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { cli } from '../helpers/cli.js';
import { fakeNodes } from '../helpers/fake-node.js';
import { writeCluster } from '../helpers/launch-files.js';
import { tempDir } from '../helpers/tmp.js';
import { fanOut, probe, shJoin, shQuote, waitForHealth } from '../../src/launch/index.js';

const SNAP =
  '/mnt/nas/hf/hub/models--deepseek-ai--DeepSeek-V4.1-Flash/snapshots/dba1be0a40aa45a94ad051997016db3960a90277';
const cluster3 = () =>
  writeCluster({
    name: 'ring3',
    hosts: ['r1', 'r2', 'r3'],
    fabric: ['10.0.22.1', '10.0.22.2', '10.0.23.3'],
    hfCache: '/mnt/nas/hf',
  });

test('sh quoting: every argument comes back byte for byte from sh', () => {
  const args = [
    '',
    'plain',
    "it's",
    'a b',
    '$HOME',
    '`id`',
    '\\',
    '"',
    "'",
    '\n',
    'x\ny',
    '*',
    '~',
    '{"a":[1,"b c"]}',
    'é ✓',
    '-e',
    '--x=1',
    '^LL128',
    "''",
  ];
  const r = spawnSync('/bin/sh', ['-c', `printf '%s\\0' ${shJoin(args)}`], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(r.stdout.split('\0').slice(0, -1), args);
  assert.equal(shQuote('plain'), 'plain');
  assert.equal(shQuote("it's"), `'it'\\''s'`);
  assert.equal(shQuote(''), "''");
});

test('fanout pack: each node packs its own rank of W, output prefixed, one summary', async () => {
  const fake = fakeNodes();
  const r = await cli(
    ['fanout', 'pack', SNAP, '--out', '/var/lib/spark/engram', '--cluster', cluster3(), '--threads', '64', '--json'],
    fake.env(),
  );
  assert.equal(r.code, 0, r.stderr);
  const packs = fake.calls().filter((c) => c.prog === 'spark');
  assert.equal(packs.length, 3);
  for (const [rank, host] of ['r1', 'r2', 'r3'].entries()) {
    const call = packs.find((c) => c.host === host)!;
    // --progress 30 (the fan-out's default interval): plain progress lines over ssh.
    assert.deepEqual(call.argv, [
      'pack',
      SNAP,
      '--out',
      '/var/lib/spark/engram',
      '--rank',
      String(rank),
      '--world',
      '3',
      '--json',
      '--progress',
      '30',
      '--threads',
      '64',
    ]);
  }
  const doc = JSON.parse(r.stdout) as {
    kind: string;
    world: number;
    nodes: { rank: number; host: string; status: string; result: { bytes: number; rank: number } }[];
  };
  assert.equal(doc.kind, 'pack');
  assert.equal(doc.world, 3);
  assert.deepEqual(
    doc.nodes.map((n) => [n.rank, n.host, n.status, n.result.rank, n.result.bytes]),
    [
      [0, 'r1', 'ok', 0, 1000],
      [1, 'r2', 'ok', 1, 1001],
      [2, 'r3', 'ok', 2, 1002],
    ],
  );
  assert.match(r.stderr, /^\[1 r2\] packing layer 1$/m);
  const human = await cli(['fanout', 'pack', SNAP, '--out', '/x', '--cluster', cluster3()], fake.env());
  assert.equal(human.code, 0, human.stderr);
  assert.match(human.stdout, /^rank {2}host {2}pack {2}bytes/m);
  assert.match(human.stdout, /3 of 3 node\(s\) ok\n$/);
});

test('fanout pack: a failing node is named with its error, the others still finish (exit 3)', async () => {
  const fake = fakeNodes();
  const err = JSON.stringify({
    error: { code: 'E_NO_SPACE', message: 'not enough space in /var/lib/spark/engram: need 47.2 GiB, 12.0 GiB free' },
  });
  const r = await cli(
    ['fanout', 'pack', SNAP, '--out', '/var/lib/spark/engram', '--cluster', cluster3(), '--json'],
    fake.env({
      'r2 spark pack': { exit: 3, stderr: err + '\n' },
      'r3 ssh': { exit: 255, stderr: 'ssh: connect to host r3 port 22: No route to host\n' },
    }),
  );
  assert.equal(r.code, 3);
  const last = JSON.parse(r.stderr.trim().split('\n').at(-1)!) as {
    error: { code: string; message: string; nodes: { status: string }[] };
  };
  assert.equal(last.error.code, 'E_NODE_FAILED');
  assert.equal(
    last.error.message,
    'pack failed on 2 of 3 node(s): node 1 (r2): not enough space in /var/lib/spark/engram: need 47.2 GiB, 12.0 GiB free; ' +
      'node 2 (r3): ssh failed: ssh: connect to host r3 port 22: No route to host',
  );
  assert.deepEqual(
    last.error.nodes.map((n) => n.status),
    ['ok', 'failed', 'failed'],
  );
});

test('fanout verify: a node reporting a mismatch makes the run exit 1', async () => {
  const fake = fakeNodes();
  const r = await cli(
    [
      'fanout',
      'verify',
      '/var/lib/spark/engram',
      '--cluster',
      cluster3(),
      '--source',
      SNAP,
      '--sample',
      '1000',
      '--json',
    ],
    fake.env({
      'r3 spark verify': {
        exit: 1,
        stdout: '{"ok":false}\n',
        stderr: 'engram-l14-r2of3.bin: layer 14 row 96004170: checksum mismatch in chunk 12\n',
      },
    }),
  );
  assert.equal(r.code, 1, r.stderr);
  const doc = JSON.parse(r.stdout) as { nodes: { status: string; error?: string }[] };
  assert.deepEqual(
    doc.nodes.map((n) => n.status),
    ['ok', 'ok', 'mismatch'],
  );
  assert.match(doc.nodes[2]!.error!, /row 96004170: checksum mismatch/);
  const call = fake.calls().find((c) => c.prog === 'spark' && c.host === 'r1')!;
  assert.deepEqual(call.argv, ['verify', '/var/lib/spark/engram', '--json', '--source', SNAP, '--sample', '1000']);
});

test("fanout pack --layout dense --env: each node packs its rank of W into the Mia stack's ENGRAM_DIR (a node's [nodes.env] wins)", async () => {
  const fake = fakeNodes();
  const dir = tempDir('spark-mia-env-');
  const env = join(dir, '.env');
  writeFileSync(env, 'TP_SIZE=3\nENGRAM_DIR=$HOME/dsv41-engram\nDSV41_PACKED_DIR=/engram\nDSV41_RESIDENT_SCALES=0\n');
  const cluster = cluster3();
  writeFileSync(
    cluster,
    readFileSync(cluster, 'utf8').replace('host = "r3"', 'host = "r3"\nenv = { ENGRAM_DIR = "/nvme2/engram" }'),
  );
  const r = await cli(
    ['fanout', 'pack', SNAP, '--layout', 'dense', '--env', env, '--cluster', cluster, '--json'],
    fake.env({}, { HOME: '/home/zurih' }),
  );
  assert.equal(r.code, 0, r.stderr);
  const packs = fake.calls().filter((c) => c.prog === 'spark');
  const out = ['/home/zurih/dsv41-engram', '/home/zurih/dsv41-engram', '/nvme2/engram'];
  for (const [rank, host] of ['r1', 'r2', 'r3'].entries()) {
    const call = packs.find((c) => c.host === host)!;
    assert.deepEqual(call.argv, [
      'pack',
      SNAP,
      '--out',
      out[rank]!,
      '--rank',
      String(rank),
      '--world',
      '3',
      '--json',
      '--progress',
      '30',
      '--layout',
      'dense',
    ]);
  }
  assert.equal(packs.length, 3);
  // --out given: the same directory everywhere; the env file is still checked.
  const given = await cli(
    ['fanout', 'pack', SNAP, '--layout', 'dense', '--env', env, '--out', '/x', '--cluster', cluster],
    fake.env({}, { HOME: '/home/zurih' }),
  );
  assert.equal(given.code, 0, given.stderr);
  // verify finds each node's directory the same way.
  const verify = await cli(
    ['fanout', 'verify', '--env', env, '--cluster', cluster, '--json'],
    fake.env({}, { HOME: '/home/zurih' }),
  );
  assert.equal(verify.code, 0, verify.stderr);
  const verified = fake.calls().filter((c) => c.prog === 'spark' && c.argv[0] === 'verify');
  assert.deepEqual(
    ['r1', 'r2', 'r3'].map((h) => verified.find((c) => c.host === h)!.argv),
    out.map((d) => ['verify', d, '--json']),
  );
});

test('fanout pack --env refuses, before any node runs, a TP_SIZE other than the node count, a layout the stack cannot read, no ENGRAM_DIR (exit 2)', async () => {
  const fake = fakeNodes();
  const dir = tempDir('spark-mia-env-');
  const write = (name: string, text: string) => {
    writeFileSync(join(dir, name), text);
    return join(dir, name);
  };
  const cases: [string, string[], RegExp][] = [
    [
      write('tp4.env', 'ENGRAM_DIR=/e\nTP_SIZE=4\n'),
      ['--layout', 'dense'],
      /tp4\.env:2: TP_SIZE=4, but \S+ has 3 nodes \(one rank each\): the packs carry the world in their names/,
    ],
    [
      write('page.env', 'ENGRAM_DIR=/e\nDSV41_PACKED_DIR=/engram\n'),
      ['--layout', 'page'],
      /page\.env:2: this env file's stack reads packed shards \(DSV41_PACKED_DIR\): pass --layout dense, not --layout page/,
    ],
    [
      write('nodir.env', 'DSV41_PACKED_DIR=/engram\n'),
      ['--layout', 'dense'],
      /nodir\.env sets no ENGRAM_DIR \(the host directory of the packs\) for node 0 \(r1\): set it there, or pass --out DIR/,
    ],
  ];
  for (const [env, flags, message] of cases) {
    const r = await cli(['fanout', 'pack', SNAP, ...flags, '--env', env, '--cluster', cluster3()], fake.env());
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, message);
  }
  assert.equal(fake.calls().filter((c) => c.prog === 'ssh').length, 0);
});

test('launch --stop: docker stop on every node; a missing container is fine, an unreachable node is not', async () => {
  const fake = fakeNodes();
  const ok = await cli(
    ['launch', '--stop', '--cluster', cluster3(), '--json'],
    fake.env({
      'r2 docker stop': { exit: 1, stderr: 'Error response from daemon: No such container: spark-ring3-r1\n' },
    }),
  );
  assert.equal(ok.code, 0, ok.stderr);
  const doc = JSON.parse(ok.stdout) as { nodes: { container: string; status: string }[] };
  assert.deepEqual(
    doc.nodes.map((n) => [n.container, n.status]),
    [
      ['spark-ring3-r0', 'stopped'],
      ['spark-ring3-r1', 'not found'],
      ['spark-ring3-r2', 'stopped'],
    ],
  );
  const stops = fake.calls().filter((c) => c.prog === 'docker');
  assert.deepEqual(stops.map((c) => c.argv).sort(), [
    ['stop', 'spark-ring3-r0'],
    ['stop', 'spark-ring3-r1'],
    ['stop', 'spark-ring3-r2'],
  ]);
  const named = await cli(['launch', '--stop', '--cluster', cluster3(), '--name', 'dsv41'], fake.env());
  assert.equal(named.code, 0, named.stderr);
  assert.ok(fake.calls().some((c) => c.argv.join(' ') === 'stop dsv41-r2'));
  const bad = await cli(
    ['launch', '--stop', '--cluster', cluster3()],
    fake.env({ 'r3 ssh': { exit: 255, stderr: 'ssh: connect to host r3 port 22: Connection refused\n' } }),
  );
  assert.equal(bad.code, 3);
  assert.match(
    bad.stderr,
    /spark: could not stop 1 container\(s\): node 2 \(r3\): ssh: connect to host r3 port 22: Connection refused; check ssh and docker on those nodes\n$/,
  );
});

test('fanOut: prefixed lines (a \\r progress bar keeps its last state), first failure stops the rest', async () => {
  const lines: string[] = [];
  const sleeper = ['/bin/sh', '-c', 'echo started; exec sleep 30'];
  const jobs = [
    { rank: 0, host: 'a', argv: sleeper },
    { rank: 1, host: 'bb', argv: ['/bin/sh', '-c', 'sleep 0.3; printf "10%%\\r50%%\\r100%%\\nboom\\n" >&2; exit 4'] },
    { rank: 2, host: 'c', argv: sleeper },
  ];
  const began = Date.now();
  const results = await fanOut(jobs, {
    env: process.env,
    write: (t) => lines.push(t),
    stopOthersOnFailure: true,
    graceMs: 500,
  });
  assert.ok(Date.now() - began < 5000, 'the sleepers were stopped');
  assert.deepEqual(
    results.map((r) => [r.code, r.signal, r.ok, r.stopped]),
    [
      [null, 'SIGTERM', false, true],
      [4, null, false, false],
      [null, 'SIGTERM', false, true],
    ],
  );
  assert.ok(lines.includes('[1 bb] 100%\n'));
  assert.ok(lines.includes('[1 bb] boom\n'));
  assert.ok(lines.includes('[0 a]  started\n'));
  assert.deepEqual(results[1]!.tail, ['100%', 'boom']);
  const missing = await fanOut([{ rank: 0, host: 'x', argv: ['/nonexistent/prog'] }], {
    env: process.env,
    write: () => {},
  });
  assert.equal(missing[0]!.code, 127);
});

test('waitForHealth: 200 ends the wait, a closed port times out within its bound', async () => {
  let hits = 0;
  const { createServer: http } = await import('node:http');
  const server = http((_req, res) => {
    res.statusCode = ++hits >= 3 ? 200 : 503;
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  try {
    const ok = await waitForHealth({ url: `http://127.0.0.1:${port}/health`, timeoutMs: 5000, intervalMs: 20 });
    // The third answer is the 200; on a loaded machine a probe may give up before its answer
    // and count as one more attempt.
    assert.deepEqual([ok.ok, hits], [true, 3]);
    assert.ok(ok.attempts >= 3, `${ok.attempts} attempts`);
  } finally {
    await new Promise((r) => server.close(r));
  }
  // A port nobody listens on: take one and close it again.
  const tmp = createServer();
  await new Promise<void>((r) => tmp.listen(0, '127.0.0.1', r));
  const closed = (tmp.address() as { port: number }).port;
  await new Promise((r) => tmp.close(r));
  const began = Date.now();
  const late = await waitForHealth({ url: `http://127.0.0.1:${closed}/health`, timeoutMs: 300, intervalMs: 50 });
  assert.equal(late.ok, false);
  assert.ok(!late.ok && late.reason === 'timeout' && late.last === 'ECONNREFUSED', JSON.stringify(late));
  assert.ok(Date.now() - began < 2000);
  assert.deepEqual(await probe('not a url', 100), { error: 'invalid URL' });
  const abort = new AbortController();
  abort.abort();
  const aborted = await waitForHealth({
    url: `http://127.0.0.1:${closed}/`,
    timeoutMs: 5000,
    intervalMs: 50,
    signal: abort.signal,
  });
  assert.ok(!aborted.ok && aborted.reason === 'aborted');
});

test('launch --stop --dry-run runs nothing on any node and says what it would stop', async () => {
  const fake = fakeNodes();
  const r = await cli(['launch', '--stop', '--dry-run', '--cluster', cluster3(), '--json'], fake.env());
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(fake.calls(), [], 'no ssh, no docker');
  const doc = JSON.parse(r.stdout) as { dryRun: boolean; nodes: { container: string; argv: string[] }[] };
  assert.equal(doc.dryRun, true);
  assert.deepEqual(
    doc.nodes.map((n) => [n.container, n.argv.slice(-3)]),
    [
      ['spark-ring3-r0', ['--', 'r1', 'docker stop spark-ring3-r0']],
      ['spark-ring3-r1', ['--', 'r2', 'docker stop spark-ring3-r1']],
      ['spark-ring3-r2', ['--', 'r3', 'docker stop spark-ring3-r2']],
    ],
  );
  const text = await cli(['launch', '--stop', '--dry-run', '--cluster', cluster3()], fake.env());
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /^rank {2}host {2}container {6,}would run/m);
  assert.doesNotMatch(text.stdout, /stopped/);
  assert.deepEqual(fake.calls(), []);
});

test("launch --stop --name: a name outside docker's grammar is refused before anything runs (exit 2)", async () => {
  const fake = fakeNodes();
  for (const name of ['--signal=KILL --time=0 x', '-x', 'a b', 'x;id', '', '.hidden']) {
    const r = await cli(['launch', '--stop', '--cluster', cluster3(), `--name=${name}`], fake.env());
    assert.equal(r.code, 2, `${name}: ${r.stderr}`);
    assert.match(r.stderr, /--name must be a docker container name \(\[A-Za-z0-9\]\[A-Za-z0-9_\.-\]\*\), got "/);
  }
  assert.deepEqual(fake.calls(), []);
});
