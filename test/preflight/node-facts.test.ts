// A node's facts, gathered two ways: by spark's own collector (in-process here, `spark preflight
// --node-facts` on a node) and by the sh probe sent over ssh to nodes without spark. Both must
// answer the same request the same way, so a node gets one verdict whichever way it answered.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodeMiaHeader } from '../../src/stacks/mia/mia-shard.js';
import { collectFacts, dumpSysfs, freeBytes, localHello } from '../../src/preflight/facts/collect.js';
import { probeScript } from '../../src/preflight/facts/probe-sh.js';
import { factsFromProbe } from '../../src/preflight/facts/remote.js';
import { collectEngineLibs, ENGINE_LIB_MAX_BYTES } from '../../src/preflight/facts/engine-lib.js';
import { judgeProbedSnapshot, rebuildSysfs } from '../../src/preflight/facts/rebuild.js';
import { parseAddresses, parseListeners, parseNvidiaSmi, parseRoutes } from '../../src/preflight/facts/parse.js';
import { routeTo } from '../../src/preflight-api/view.js';
import { parseFactsRequest } from '../../src/preflight/facts/answer.js';
import type { FactsRequest, NodeFacts } from '../../src/preflight-api/node-facts.js';
import { busyPort, freePort, REVISION, world, write } from '../helpers/preflight.js';
import { procRoutes } from '../helpers/fake-cluster.js';
import { makeSnapshot } from '../helpers/synth.js';
import { writeSyntheticCopy } from '../helpers/sparse-copy.js';
import { tempDir } from '../helpers/tmp.js';
import { buildSysfs, FE80, V1, V2, ZERO, type FakeGid } from '../helpers/sysfs.js';
import { factsRequest } from '../helpers/facts-request.js';
import { needs } from '../helpers/external-tool.js';
import { engineLibAnswer, engineLibVerdicts, randomFile } from '../helpers/engine-lib-answer.js';

/** Runs the probe for `req` on this machine under `shell`, as ssh would on a node. */
async function probe(req: FactsRequest, shell = 'sh'): Promise<NodeFacts> {
  const r = spawnSync(shell, ['-c', probeScript(req)], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  assert.equal(r.status, 0, r.stderr);
  return factsFromProbe(r.stdout, req, localHello('/home/x', '0.1.0'), tempDir('spark-shadow-'));
}

test('the sh probe and spark answer the same request the same way (dash and bash)', async (t) => {
  if (!needs(t, 'dash')) return;
  const w = await world();
  const dir = join(w.root, 'facts-case');
  const file = write(join(dir, "odd name $x 'q'.sh"), '#!/bin/sh\necho "é ✓"\nexport SPARK_ENGRAM_ROWS=1\n');
  mkdirSync(join(dir, 'sub dir'), { recursive: true });
  const held = await busyPort();
  const free = await freePort();
  try {
    const req = factsRequest({
      paths: [file, join(dir, 'sub dir'), join(dir, 'missing'), w.snapshotDir],
      texts: [file, join(dir, 'missing.json'), join(dir, 'sub dir')],
      free: [dir, join(dir, 'not', 'yet', 'made')],
      ports: [held.port, free],
      sysfs: w.sysfs,
      snapshot: [
        { dir: join(dir, 'missing') },
        {
          hfCache: w.hfCache,
          model: 'deepseek-ai/DeepSeek-V4.1-Flash',
          modelDir: join(w.hfCache, 'hub', 'models--deepseek-ai--DeepSeek-V4.1-Flash'),
        },
      ],
    });
    const spark = await collectFacts(req, localHello('/home/x', '0.1.0'), { via: 'spark', dumpSysfs: true });
    for (const shell of ['dash', 'bash']) {
      const sh = await probe(req, shell);
      assert.deepEqual(sh.paths, spark.paths, shell);
      assert.deepEqual(
        sh.paths.map((p) => p.kind),
        ['file', 'dir', 'missing', 'dir'],
      );
      assert.deepEqual(sh.texts, spark.texts);
      assert.equal(sh.texts[0], '#!/bin/sh\necho "é ✓"\nexport SPARK_ENGRAM_ROWS=1\n');
      assert.deepEqual(sh.texts.slice(1), [null, null]);
      await sameFreeSpace(req, shell);
      assert.deepEqual(sh.ports, ['in-use', 'free']);
      assert.deepEqual(spark.ports, ['in-use', 'free']);
      assert.deepEqual(sh.sysfs, spark.sysfs);
      assert.ok(Object.keys(sh.sysfs!.files).some((f) => f.endsWith('/gids/3')));
      assert.deepEqual(sh.snapshot, spark.snapshot);
      assert.equal(sh.snapshot!.candidate, 1);
      assert.ok('facts' in sh.snapshot!.result && sh.snapshot!.result.facts.revision === REVISION);
      assert.deepEqual(sh.routes, spark.routes);
      assert.deepEqual(sh.addresses, spark.addresses);
    }
  } finally {
    await held.close();
  }
});

test("the probe reads a port's GID table with one od, however many entries it has; each value as spark reads it", async () => {
  // A port of 4 entries and one of 256 (a real table's size): od runs as often for both.
  const table = (n: number) => ({
    linkLayer: 'Ethernet',
    state: '4: ACTIVE',
    gids: Array.from({ length: n }, (_, i): FakeGid => [i % 2 ? ZERO : FE80, i % 3 ? V2 : V1, `enp${i}s0\tx y`]),
  });
  const bin = tempDir('spark-od-');
  const count = join(bin, 'count');
  const od = spawnSync('sh', ['-c', 'command -v od'], { encoding: 'utf8' }).stdout.trim();
  writeFileSync(join(bin, 'od'), `#!/bin/sh\necho >> '${count}'\nexec '${od}' "$@"\n`, { mode: 0o755 });
  const runs = async (n: number) => {
    const req = factsRequest({ sysfs: buildSysfs({ mlx5_0: { 1: table(n) }, mlx5_1: { 1: table(2) } }) });
    writeFileSync(count, '');
    const r = spawnSync('sh', ['-c', probeScript(req)], {
      encoding: 'utf8',
      env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}` },
    });
    assert.equal(r.status, 0, r.stderr);
    const sh = await factsFromProbe(r.stdout, req, localHello('/home/x', '0.1.0'), tempDir('spark-shadow-'));
    const spark = await collectFacts(req, localHello('/home/x', '0.1.0'), { via: 'spark', dumpSysfs: true });
    assert.deepEqual(sh.sysfs, spark.sysfs);
    assert.equal(sh.sysfs!.files['class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/1'], 'enp1s0\tx y');
    assert.equal(Object.keys(sh.sysfs!.files).length, 2 + 3 * n + 2 + 3 * 2);
    return readFileSync(count, 'utf8').length;
  };
  assert.equal(await runs(256), await runs(4));
});

/**
 * df's free space (KiB) is statfs's (bytes), rounded down. Others write to the same disk
 * meanwhile, so the probe's figure is taken between two of spark's until one pair brackets it.
 */
async function sameFreeSpace(req: FactsRequest, shell: string): Promise<void> {
  const only = factsRequest({ free: req.free });
  let last = '';
  for (let attempt = 0; attempt < 8; attempt++) {
    const before = only.free.map((p) => freeBytes(p)!);
    const got = (await probe(only, shell)).free;
    const after = only.free.map((p) => freeBytes(p)!);
    const inside = got.every(
      (b, i) => b !== null && b >= Math.min(before[i]!, after[i]!) - 1024 && b <= Math.max(before[i]!, after[i]!),
    );
    if (inside) return;
    last = `${JSON.stringify(got)} vs ${JSON.stringify(before)}..${JSON.stringify(after)}`;
  }
  assert.fail(`${shell}: df's free space never matched statfs's: ${last}`);
}

/** A file of `size` random bytes that cannot start like an ELF file (its first byte is 0). */
test('the library command sends a file of 256 KiB whole, read as spark reads it; one byte over the limit is not sent', (t) => {
  if (!needs(t, 'dash')) return;
  const dir = tempDir();
  const small = randomFile(join(dir, 'small.so'), 256 << 10);
  const over = join(dir, 'over.so');
  writeFileSync(over, '');
  truncateSync(over, ENGINE_LIB_MAX_BYTES + 1);
  // Files of 5 MiB (a library's size) and of exactly the limit (64 MiB), slow through od, are
  // in test/long/engine-lib-limit.test.ts.
  for (const shell of ['dash', 'bash']) {
    const sh = engineLibAnswer([small, over], shell);
    assert.deepEqual(sh, collectEngineLibs([small, over]), shell);
    assert.deepEqual(engineLibVerdicts(sh.files), [
      ['file', 256 << 10, 'not an ELF file'],
      ['file', ENGINE_LIB_MAX_BYTES + 1, `larger than ${ENGINE_LIB_MAX_BYTES} bytes`],
    ]);
  }
});

test("a truncated shard: the probe and spark report the same error, with the node's paths", async () => {
  const dir = join(tempDir(), 'snap');
  makeSnapshot({ dir });
  const shard = join(dir, 'model-00003-of-00003.safetensors');
  truncateSync(shard, statSync(shard).size - 10);
  const req = factsRequest({ snapshot: [{ dir }] });
  const spark = await collectFacts(req, localHello('/home/x', '0.1.0'), { via: 'spark', dumpSysfs: false });
  const sh = await probe(req);
  assert.ok('error' in spark.snapshot!.result);
  assert.deepEqual(sh.snapshot, spark.snapshot);
  const e = (sh.snapshot!.result as { error: { code: string; message: string; path?: string } }).error;
  assert.equal(e.code, 'E_SHARD_TRUNCATED');
  assert.equal(e.path, shard);
  assert.ok(e.message.includes(shard), e.message);
});

test('rebuilding a dump accepts only sysfs-shaped names inside its root', () => {
  const root = tempDir('spark-rebuild-');
  rebuildSysfs(
    {
      dirs: ['class/infiniband/mlx5_0/ports/1', 'class/net/eth0', '../escape', 'class/infiniband/../../x'],
      files: {
        'class/infiniband/mlx5_0/ports/1/gids/0': 'fe80:0000:0000:0000:0000:0000:0000:0001',
        'class/infiniband/mlx5_0/ports/1/gid_attrs/types/0': 'RoCE v2',
        '../../etc/owned': 'x',
        'class/net/eth0/../../../../tmp/x': 'x',
        '/abs/path': 'x',
      },
    },
    root,
  );
  const dump = dumpSysfs(root);
  assert.deepEqual(dump.dirs, ['class/infiniband', 'class/infiniband/mlx5_0/ports/1', 'class/net/eth0']);
  assert.deepEqual(Object.keys(dump.files).sort(), [
    'class/infiniband/mlx5_0/ports/1/gid_attrs/types/0',
    'class/infiniband/mlx5_0/ports/1/gids/0',
  ]);
});

test('a probed shard name that is not a plain file name is not written', async () => {
  const root = join(tempDir('spark-shadow-'), 'snapshot');
  const fact = await judgeProbedSnapshot(
    {
      candidate: 0,
      path: '/nas/snap',
      files: { 'model.safetensors.index.json': '{"weight_map":{}}', '../evil': 'x' },
      shards: [{ name: '../../x.safetensors', size: 10, headerLength: 2 }],
    },
    root,
  );
  assert.ok('facts' in fact.result || 'error' in fact.result);
  assert.equal(spawnSync('ls', [join(root, '..')], { encoding: 'utf8' }).stdout.trim(), 'snapshot');
});

test('readers of node output: routes, listening sockets, addresses, nvidia-smi', () => {
  const routes = parseRoutes(
    procRoutes([
      { iface: 'eth0', dest: '10.0.0.0/24' },
      { iface: 'eth0', dest: 'default', via: '10.0.0.254' },
      { iface: 'ib0', dest: '10.0.22.0/24' },
    ]),
  );
  assert.deepEqual(routes, [
    { iface: 'eth0', destination: '10.0.0.0', gateway: '0.0.0.0', prefix: 24 },
    { iface: 'eth0', destination: '0.0.0.0', gateway: '10.0.0.254', prefix: 0 },
    { iface: 'ib0', destination: '10.0.22.0', gateway: '0.0.0.0', prefix: 24 },
  ]);
  const facts = { addresses: ['10.0.0.2'], routes } as unknown as NodeFacts;
  assert.equal(routeTo(facts, '10.0.0.2'), 'own');
  assert.equal(routeTo(facts, '10.0.0.7'), 'direct');
  assert.equal(routeTo(facts, '10.0.22.1'), 'direct');
  assert.equal(routeTo(facts, '10.0.23.1'), 'default');
  assert.equal(routeTo({ ...facts, routes: routes.filter((r) => r.prefix > 0) }, '10.0.23.1'), 'none');
  assert.equal(routeTo({ ...facts, routes: [] }, '10.0.23.1'), 'unknown');
  const tcp =
    '  sl  local_address rem_address   st\n   0: 00000000:75BC 00000000:0000 0A 0\n   1: 0100007F:1F90 0200007F:1234 01 0\n';
  assert.deepEqual([...parseListeners(tcp)], [0x75bc]);
  assert.deepEqual(
    parseAddresses(
      '1: lo    inet 127.0.0.1/8 scope host lo\n2: eth0    inet 10.0.0.2/24 brd 10.0.0.255\n2: eth0    inet6 fe80::1/64 scope link\n',
    ),
    ['127.0.0.1', '10.0.0.2', 'fe80::1'],
  );
  assert.deepEqual(parseAddresses('10.0.0.2 192.168.200.2 \n'), ['10.0.0.2', '192.168.200.2']);
  assert.deepEqual(parseNvidiaSmi('| NVIDIA-SMI 580.95.05   Driver Version: 580.95.05   CUDA Version: 13.0 |'), {
    driver: '580.95.05',
    cuda: '13.0',
  });
  assert.deepEqual(parseNvidiaSmi('command not found'), {});
});

test('spark preflight --node-facts refuses a malformed request (exit 2 naming what is wrong)', () => {
  assert.throws(() => parseFactsRequest('{'), /--node-facts: not JSON/);
  assert.throws(
    () => parseFactsRequest(JSON.stringify({ ...factsRequest({}), version: 99 })),
    /request version 99, this spark answers 3/,
  );
  assert.throws(
    () => parseFactsRequest(JSON.stringify({ ...factsRequest({}), paths: [1] })),
    /paths must be a list of strings/,
  );
  assert.throws(
    () => parseFactsRequest(JSON.stringify({ ...factsRequest({}), ports: [70000] })),
    /ports must be a list of port numbers/,
  );
  for (const readerDir of [
    { dir: '/d', glob: 'a b*.bin', headBytes: 48 },
    { dir: '/d', glob: "x'*", headBytes: 48 },
    { dir: '/d', glob: '*.bin', headBytes: 0 },
    { dir: '/d', glob: '*.bin', headBytes: 48, receipt: '../id.json' },
    { dir: 1, glob: '*.bin', headBytes: 48 },
  ])
    assert.throws(
      () => parseFactsRequest(JSON.stringify({ ...factsRequest({}), readerDir })),
      /readerDir must be \{dir, glob, headBytes, receipt\?\} with a plain glob/,
      JSON.stringify(readerDir),
    );
  assert.deepEqual(parseFactsRequest(JSON.stringify(factsRequest({ paths: ['/x'] }))).paths, ['/x']);
});

test("a node-local copy: the probe and spark read it alike (spark's sparse copy, the overlay tool's, a broken one)", async () => {
  const tables = [
    { layer: 1, rows: 4000, dim: 256 },
    { layer: 14, rows: 4004, dim: 256 },
  ];
  const cases: [string, (dir: string) => void][] = [
    [
      'spark',
      (dir) =>
        writeSyntheticCopy(dir, {
          tables,
          ranges: [
            { layer: 1, start: 1000, end: 2000 },
            { layer: 14, start: 1001, end: 2002 },
          ],
          spark: { rank: 1, world: 4, split: 'floor' },
        }),
    ],
    // No spark key: rank and world are inferred from the ranges and the copy's own headers.
    [
      'overlay',
      (dir) =>
        writeSyntheticCopy(dir, {
          tables,
          ranges: [
            { layer: 1, start: 2000, end: 3000 },
            { layer: 14, start: 2002, end: 3003 },
          ],
        }),
    ],
    ['broken', (dir) => writeFileSync(join(dir, 'engram-local.json'), '{"layers": 5}')],
  ];
  for (const [name, make] of cases) {
    const dir = join(tempDir(), 'engram');
    mkdirSync(dir, { recursive: true });
    make(dir);
    const req = factsRequest({ copyDir: dir });
    const spark = await collectFacts(req, localHello('/home/x', '0.1.0'), { via: 'spark', dumpSysfs: false });
    const sh = await probe(req);
    assert.ok(spark.copy, name);
    assert.deepEqual(sh.copy, spark.copy, name);
    if (name === 'overlay') {
      const r = sh.copy!.result as {
        copy: { identity?: { rank: number; world: number; from: string }; manifestPath: string };
      };
      assert.deepEqual([r.copy.identity?.rank, r.copy.identity?.world, r.copy.identity?.from], [2, 4, 'inferred']);
      assert.equal(r.copy.manifestPath, join(dir, 'engram-local.json'));
    }
    if (name === 'broken')
      assert.ok('error' in sh.copy!.result && sh.copy!.result.error.message.includes(join(dir, 'engram-local.json')));
  }
});

test("a stack's reader directory (the Mia stack's packs): the probe and spark report it alike, reading only what they may", async (t) => {
  if (!needs(t, 'dash')) return;
  const dir = join(tempDir(), 'engram');
  mkdirSync(dir);
  const header = encodeMiaHeader({ layer: 1, lo: 0, hi: 10, rows: 40, rowBytes: 264 });
  writeFileSync(join(dir, 'engram-l1-r0of4.bin'), Buffer.concat([header, Buffer.alloc(10 * 264, 7)]));
  writeFileSync(join(dir, 'engram-l14-r0of4.bin'), header.subarray(0, 20));
  writeFileSync(join(dir, 'engram-l14-r1of4.bin'), '');
  spawnSync('mkfifo', [join(dir, 'engram-l1-r1of4.bin')]);
  mkdirSync(join(dir, 'engram-l1-r2of4.bin'));
  symlinkSync('engram-l1-r0of4.bin', join(dir, 'engram-l1-r3of4.bin'));
  symlinkSync('nowhere', join(dir, 'engram-l14-r3of4.bin'));
  writeFileSync(join(dir, 'engram-local.json'), '{}');
  writeFileSync(join(dir, 'identity.json'), '{"format":"DSV41EN1","tp":4}');
  const mia = { glob: 'engram-l*-r*of*.bin', headBytes: 48, receipt: 'identity.json' };
  const req = factsRequest({ readerDir: { dir, ...mia } });
  const spark = await collectFacts(req, localHello('/home/x', '0.1.0'), { via: 'spark', dumpSysfs: false });
  const direct = spark.readerDir!.files[0]!.direct!;
  const file = (name: string, size: number, head: string) => ({ name, kind: 'file', size, head, direct });
  assert.deepEqual(spark.readerDir, {
    dir,
    kind: 'dir',
    files: [
      file('engram-l1-r0of4.bin', 4096 + 2640, header.subarray(0, 48).toString('hex')),
      { name: 'engram-l1-r1of4.bin', kind: 'other' },
      { name: 'engram-l1-r2of4.bin', kind: 'dir' },
      file('engram-l1-r3of4.bin', 4096 + 2640, header.subarray(0, 48).toString('hex')),
      file('engram-l14-r0of4.bin', 20, header.subarray(0, 20).toString('hex')),
      file('engram-l14-r1of4.bin', 0, ''),
      { name: 'engram-l14-r3of4.bin', kind: 'missing' },
    ],
    receipt: '{"format":"DSV41EN1","tp":4}',
  });
  for (const shell of ['dash', 'bash']) assert.deepEqual((await probe(req, shell)).readerDir, spark.readerDir, shell);
  // Another stack's names and header size: only what its glob names, only as many bytes as it asks.
  const other = factsRequest({ readerDir: { dir, glob: '*-r0of4.bin', headBytes: 8 } });
  const otherFacts = await collectFacts(other, localHello('/home/x', '0.1.0'), { via: 'spark', dumpSysfs: false });
  assert.deepEqual(otherFacts.readerDir, {
    dir,
    kind: 'dir',
    files: [
      file('engram-l1-r0of4.bin', 4096 + 2640, header.subarray(0, 8).toString('hex')),
      file('engram-l14-r0of4.bin', 20, header.subarray(0, 8).toString('hex')),
    ],
  });
  assert.deepEqual((await probe(other)).readerDir, otherFacts.readerDir);
  const gone = factsRequest({ readerDir: { dir: join(dir, 'not-there'), ...mia } });
  assert.deepEqual((await probe(gone)).readerDir, { dir: join(dir, 'not-there'), kind: 'missing', files: [] });
  assert.deepEqual(
    (await collectFacts(gone, localHello('/home/x', '0.1.0'), { via: 'spark', dumpSysfs: false })).readerDir,
    { dir: join(dir, 'not-there'), kind: 'missing', files: [] },
  );
});
