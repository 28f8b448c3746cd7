// spark status: the parsers (both libraries' stats lines, status.sh's answer), the verdict per
// node, and a run on fake nodes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { judge, parseInspect, parseNodeAnswer, parseStatsLine, type NodeStatus } from '../../src/status/status.js';
import { formatStatus } from '../../src/commands/status.js';
import { fakeNodes } from '../helpers/fake-node.js';
import { cli } from '../helpers/cli.js';
import { VERSION } from '../../src/domain/version.js';
import { writeCluster } from '../helpers/launch-files.js';

const OVERLAY =
  'libengram_rows: calls=120 rows=30720 hit_rate=87.5% reads=3840 reads_per_s=12800 p50_us=41 p99_us=310 cache_bytes=1073741824 pinned_scale_bytes=0 lines_dropped=0';
const MIA =
  'librow_store: lookups=4096 hit_rate=62.3% reads=1544 packed=1 calls=64 reads_per_s=5100 p50_us=88 p99_us=902 cache_bytes=268435456 pinned_scale_bytes=8388608 lines_dropped=2';

test('stats lines of both libraries: hit rate, p50/p99 µs, reads/s and cache bytes; a prefix before the line is allowed', () => {
  assert.deepEqual(parseStatsLine(OVERLAY), {
    lib: 'libengram_rows',
    hitRate: 87.5,
    p50Us: 41,
    p99Us: 310,
    readsPerS: 12800,
    cacheBytes: 1073741824,
    line: OVERLAY,
  });
  const mia = parseStatsLine(`[2026-12-06 14:00:01 TP3] ${MIA}`)!;
  assert.equal(mia.lib, 'librow_store');
  assert.equal(mia.hitRate, 62.3);
  assert.equal(mia.p99Us, 902);
  assert.equal(mia.cacheBytes, 268435456);
  assert.equal(mia.line, MIA);
  assert.equal(parseStatsLine('server booting'), undefined);
  // A field that is not a number is left out, not read as NaN.
  assert.equal(parseStatsLine('librow_store: lookups=1 hit_rate=abc% p50_us=3')!.hitRate, undefined);
});

test("docker inspect's line: state, start, restarts, exit code; anything else is not a container", () => {
  assert.deepEqual(parseInspect('c', 'exited|2026-12-06T14:00:00.1Z|3|137|2026-12-06T14:05:00Z'), {
    name: 'c',
    state: 'exited',
    startedAt: '2026-12-06T14:00:00.1Z',
    restarts: 3,
    exitCode: 137,
    finishedAt: '2026-12-06T14:05:00Z',
  });
  assert.equal(parseInspect('c', 'Error: No such object: c'), undefined);
});

test('a node answer: exited container with its last lines, stats, disk, GPUs; no such container', () => {
  const n = parseNodeAnswer(
    1,
    'h',
    'spark-x-r1',
    [
      'spark 0.1.0+abc',
      'inspect exited|2026-12-06T14:00:00Z|0|1|2026-12-06T14:01:00Z',
      `stats ${OVERLAY}`,
      'tail Traceback (most recent call last):',
      'tail RuntimeError: CUDA out of memory',
      'df 1048576 2097152',
      'gpu 1024, 122880',
      '',
    ].join('\n'),
  );
  assert.equal(n.spark, '0.1.0+abc');
  assert.equal(n.container?.state, 'exited');
  assert.deepEqual(n.container?.tail, ['Traceback (most recent call last):', 'RuntimeError: CUDA out of memory']);
  assert.equal(n.stats?.hitRate, 87.5);
  assert.deepEqual(n.disk, { free: 2 ** 30, size: 2 ** 31 });
  assert.deepEqual(n.gpus, [{ usedMiB: 1024, totalMiB: 122880 }]);
  const none = parseNodeAnswer(0, 'h', 'c', 'spark \ninspect-error Error: No such object: c\n');
  assert.equal(none.spark, undefined);
  assert.equal(none.containerError, 'no such container');
});

function node(rank: number, spark: string, state = 'running'): NodeStatus {
  return {
    rank,
    host: `h${rank}`,
    reachable: true,
    spark,
    container: {
      name: `c${rank}`,
      state,
      startedAt: '',
      restarts: 0,
      exitCode: state === 'exited' ? 1 : 0,
      finishedAt: '',
    },
    gpus: [],
    head: rank === 0,
    healthy: false,
    problems: [],
  };
}

test('the verdict: a node on an older bundle, one another spark than this machine, an exited container, a head whose /health fails, one unreachable', () => {
  const nodes = [node(0, '0.1.0+new'), node(1, '0.1.0+new'), node(2, '0.1.0+old'), node(3, '0.1.0+new', 'exited')];
  nodes[0]!.health = '200';
  judge(nodes, '0.1.0');
  assert.deepEqual(
    nodes.map((n) => n.problems),
    [[], [], ['spark 0.1.0+old, the other nodes 0.1.0+new'], ['container exited (exit 1)']],
  );
  const other = [node(0, '0.0.9'), { ...node(1, ''), reachable: false, error: 'Connection refused' }];
  other[0]!.health = 'HTTP 503';
  judge(other, '0.1.0');
  assert.deepEqual(other[0]!.problems, ['spark 0.0.9, this machine 0.1.0', '/health: HTTP 503']);
  assert.deepEqual(other[1]!.problems, ['not reachable: Connection refused']);
  const text = formatStatus({ cluster: 'c', local: '0.1.0', packDir: '/p', healthy: false, nodes }, Date.now());
  assert.match(text, /^2\s+h2\s+0\.1\.0\+old\s+running/m);
  assert.match(text, /2 of 4 node\(s\) healthy/);
});

test('spark status on fake nodes: one ssh per node, the table, exit 1 naming the node whose container exited', async () => {
  const fake = fakeNodes();
  const cluster = writeCluster({
    name: 'two',
    hosts: ['n1', 'n2'],
    fabric: ['192.168.1.1', '192.168.1.2'],
    hfCache: '/nonexistent/hf',
  });
  const env = fake.env({
    'n1 docker inspect': { stdout: 'running|2026-12-06T14:00:00Z|0|0|0001-01-01T00:00:00Z\n' },
    'n2 docker inspect': { stdout: 'exited|2026-12-06T14:00:00Z|2|3|2026-12-06T14:02:00Z\n' },
    'n1 docker logs': { stdout: `booting\n${MIA}\nserving\n` },
    'n2 docker logs': { stdout: 'boot failed: no such file\n' },
  });
  const ok = await cli(['status', '--cluster', cluster, '--json'], env);
  assert.equal(ok.code, 1, ok.stderr);
  const r = JSON.parse(ok.stdout) as { healthy: boolean; nodes: NodeStatus[] };
  assert.equal(r.healthy, false);
  assert.equal(r.nodes[0]!.spark, VERSION);
  assert.equal(r.nodes[0]!.healthy, true, r.nodes[0]!.problems.join());
  assert.equal(r.nodes[0]!.stats?.hitRate, 62.3);
  assert.equal(r.nodes[0]!.container?.name, 'spark-two-r0');
  assert.deepEqual(r.nodes[1]!.problems, ['container exited (exit 3)']);
  assert.deepEqual(r.nodes[1]!.container?.tail, ['boot failed: no such file']);
  assert.equal(fake.calls().filter((c) => c.prog === 'ssh').length, 2);
  const text = await cli(['status', '--cluster', cluster], env);
  assert.match(text.stdout, /^1\s+n2\s+0\.1\.0\s+exited 3/m);
  assert.match(text.stdout, /\[1 n2\] spark-two-r1 exited 3, its last lines:\n {2}boot failed: no such file/);
});
