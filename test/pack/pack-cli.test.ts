import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cli } from '../helpers/cli.js';
import { makeSnapshot } from '../helpers/synth.js';
import { tempDir } from '../helpers/tmp.js';
import { mountTmpfs } from '../helpers/tmpfs.js';
import { needsRoot } from '../helpers/external-tool.js';
import { fakeNodes } from '../helpers/fake-node.js';
import { writeCluster } from '../helpers/launch-files.js';
import { readManifest } from '../helpers/packed.js';
import { formatBytes } from '../../src/terminal/format.js';

const snap = makeSnapshot();

test('pack usage errors are exit 2 and name the flag', async () => {
  const out = join(tempDir(), 'p');
  let r = await cli(['pack', snap.dir, '--rank', '0', '--world', '2']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--out DIR is required/);
  r = await cli(['pack', snap.dir, '--out', out, '--rank', '2', '--world', '2']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /rank 2 is outside the world of 2 ranks/);
  r = await cli(['pack', snap.dir, '--out', out, '--rank', '0', '--world', '2', '--layout', 'tight']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--layout must be sparse, dense or page, got 'tight'/);
  r = await cli(['pack', snap.dir, '--out', '', '--rank', '0', '--world', '2']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--out is empty/);
  for (const bad of ['0', '-5', 'fast', '1e3']) {
    r = await cli(['pack', snap.dir, '--out', out, '--rank', '0', '--world', '2', '--rate-limit', bad]);
    assert.equal(r.code, 2, bad);
    assert.match(r.stderr, /--rate-limit must be a positive number of MB\/s/);
  }
  r = await cli(['pack', snap.dir, '--out', out, '--world', '2']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--rank is required \(or set NODE_RANK\)/);
  r = await cli([
    'pack',
    snap.dir,
    '--out',
    out,
    '--rank',
    '0',
    '--world',
    '2',
    '--layout',
    'page',
    '--chunk-rows',
    '100',
  ]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /multiple of the rows per page \(15\)/);
  r = await cli(['verify', out, '--sample', '10']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--sample compares rows with the snapshot: give --source/);
});

test('pack from the environment, JSON summary, no-op re-run, verify exit codes', async () => {
  const out = join(tempDir(), 'p');
  const env = { NODE_RANK: '1', SPARK_WORLD_SIZE: '3', SPARK_ENGRAM_DIR: snap.dir };
  const r = await cli(['pack', '--out', out, '--json', '--chunk-rows', '1000', '--layout', 'dense'], env);
  assert.equal(r.code, 0, r.stderr);
  const s = JSON.parse(r.stdout) as {
    bytes: number;
    seconds: number;
    noop: boolean;
    layers: { layer: number; start: number; end: number; bytes: number }[];
  };
  assert.equal(s.noop, false);
  assert.equal(s.layers.length, 2);
  // The data files: a 4096-byte header block each, then the rows.
  assert.equal(
    s.bytes,
    s.layers.reduce((a, l) => a + 4096 + l.bytes, 0),
  );
  for (const l of s.layers) assert.equal(statSync(join(out, `engram-l${l.layer}-r1of3.bin`)).size, 4096 + l.bytes);
  assert.equal(typeof s.seconds, 'number');
  const again = await cli(['pack', '--out', out, '--layout', 'dense'], env);
  assert.equal(again.code, 0);
  assert.match(again.stdout, /^already complete: rank 1 of 3 .* nothing to do/);
  const ok = await cli(['verify', out, '--source', snap.dir, '--full']);
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, /^ok: rank 1 of 3/);
  // One flipped byte in layer 14's chunk 4.
  const e = readManifest(out).layers[1];
  const path = join(out, e.file);
  const bytes = readFileSync(path);
  bytes[4096 + 4 * 1000 * 264 + 9] ^= 0x80;
  writeFileSync(path, bytes);
  const bad = await cli(['verify', out, '--json']);
  assert.equal(bad.code, 1);
  assert.equal(JSON.parse(bad.stdout).ok, false);
  assert.match(
    bad.stderr,
    new RegExp(
      `^spark verify: ${e.file}: layer 14: chunk 4 \\(bytes \\d+-\\d+, rows ${e.start + 4000}-${e.start + 4999}\\) fails its checksum\\n$`,
    ),
  );
  // Truncated.
  writeFileSync(path, bytes.subarray(0, 5000));
  const cut = await cli(['verify', out]);
  assert.equal(cut.code, 1);
  assert.match(cut.stdout, /the file is 5000 bytes, its layout implies \d+ \(truncated\)/);
});

test('a full disk is exit 3 with the numbers; mid-pack it keeps what was written and a run with room completes', async (t) => {
  if (!needsRoot(t, 'mounts a small tmpfs to fill')) return;
  const fs = mountTmpfs(8 << 20);
  try {
    const out = join(fs.dir, 'p');
    const args = [
      'pack',
      snap.dir,
      '--out',
      out,
      '--rank',
      '0',
      '--world',
      '1',
      '--chunk-rows',
      '512',
      '--layout',
      'dense',
    ];
    const refused = await cli(args);
    assert.equal(refused.code, 3);
    assert.match(
      refused.stderr,
      /not enough free space in .*: the pack needs [\d.]+ MiB more .* 8\.0 MiB \(8388608 bytes\) are free/,
    );
    const mid = await cli([...args, '--no-space-check', '--json']);
    assert.equal(mid.code, 3);
    assert.equal(JSON.parse(mid.stderr).error.code, 'E_NO_SPACE');
    assert.equal(existsSync(join(out, 'spark-pack.json')), false);
    assert.ok(readdirSync(out).includes('engram-l1-r0of1.bin'), 'the finished first layer is kept');
    const verify = await cli(['verify', out]);
    assert.equal(verify.code, 1);
    fs.resize(32 << 20);
    const done = await cli([...args, '--json']);
    assert.equal(done.code, 0, done.stderr);
    const s = JSON.parse(done.stdout) as { resumed: boolean; files: { chunks: number; chunksKept: number }[] };
    assert.equal(s.resumed, true);
    assert.equal(s.files[0].chunksKept, s.files[0].chunks);
    const full = await cli(['verify', out, '--source', snap.dir, '--full']);
    assert.equal(full.code, 0, full.stderr);
  } finally {
    fs.unmount();
  }
});

// One progress line as `spark pack --progress` prints it: the unit, its place, the phase, bytes
// done of the whole pack and the percentage; after half a second of copying also the rate and an
// ETA. Which lines appear (and whether they carry a rate) depends on how fast the machine is, so
// every line is checked against the format and the sequence against what progress means.
const SIZE = String.raw`\d+ B|\d+(?:\.\d+)? [KMGT]iB`;
const PROGRESS_LINE = new RegExp(
  String.raw`^pack (.+) \((\d+)/(\d+)\) (preparing|checking|copying|finishing|done): (${SIZE}) / (${SIZE}) (\d+)%(?:  (?:${SIZE})/s  ETA \d+:\d\d)?$`,
);

/** Checks a --progress log of a pack whose units are `units` (in order) and `bytes` in all. */
function assertProgressLog(stderr: string, units: string[], bytes: number): void {
  assert.ok(!stderr.includes('\r') && !stderr.includes('\x1b'), 'no terminal control characters in a log');
  assert.ok(stderr.endsWith('\n'), 'whole lines only');
  const lines = stderr.slice(0, -1).split('\n');
  const seen = lines.map((line) => {
    const m = PROGRESS_LINE.exec(line);
    assert.ok(m, `not a progress line: ${JSON.stringify(line)}`);
    const [, unit, index, count, phase, done, total, pct] = m;
    assert.equal(Number(count), units.length, line);
    assert.equal(unit, units[Number(index) - 1], line);
    assert.equal(total, formatBytes(bytes), `${line}: the total is the whole pack`);
    return { index: Number(index), phase, done, pct: Number(pct) };
  });
  // The first update is always shown, the last one always closes the log.
  assert.equal(seen[0].index, 1, 'the log starts with the first unit');
  for (let i = 1; i < seen.length; i++) {
    assert.ok(seen[i].index >= seen[i - 1].index, `units in order: ${lines.join(' | ')}`);
    assert.ok(seen[i].pct >= seen[i - 1].pct, `the percentage never goes back: ${lines.join(' | ')}`);
  }
  const last = seen[seen.length - 1];
  assert.deepEqual(
    last,
    { index: units.length, phase: 'done', done: formatBytes(bytes), pct: 100 },
    `ends complete: ${lines.at(-1)}`,
  );
}

test('pack --progress prints whole progress lines without a terminal, up to 100% of the bytes', async () => {
  const snap = makeSnapshot({ vocab: 3000 });
  const page = await cli([
    'pack',
    snap.dir,
    '--out',
    join(tempDir(), 'p'),
    '--rank',
    '0',
    '--world',
    '1',
    '--progress',
    '1',
    '--layout',
    'page',
    '--json',
  ]);
  assert.equal(page.code, 0, page.stderr);
  assertProgressLog(page.stderr, ['layer 1', 'layer 14'], (JSON.parse(page.stdout) as { bytes: number }).bytes);
  // The limiter makes one worker wait for every chunk it read before: 10 chunks of ~2 MB per
  // ~20 MB shard at 40 MB/s hold the pack to at least 0.9 s however fast the machine, so the
  // closing line is past the half second after which a line shows the rate and an ETA.
  const slow = ['--threads', '1', '--chunk-rows', '8192', '--rate-limit', '40'];
  const sparse = await cli([
    'pack',
    snap.dir,
    '--out',
    join(tempDir(), 's'),
    '--rank',
    '0',
    '--world',
    '1',
    '--progress',
    '1',
    ...slow,
    '--json',
  ]);
  assert.equal(sparse.code, 0, sparse.stderr);
  const shards = ['shard model-00002-of-00003.safetensors', 'shard model-00003-of-00003.safetensors'];
  assertProgressLog(sparse.stderr, shards, (JSON.parse(sparse.stdout) as { bytes: number }).bytes);
  assert.match(sparse.stderr, /\(2\/2\) done: .* 100% {2}\d+(\.\d+)? [KM]iB\/s {2}ETA 0:00\n$/);
  const bad = await cli([
    'pack',
    snap.dir,
    '--out',
    join(tempDir(), 'q'),
    '--rank',
    '0',
    '--world',
    '1',
    '--progress',
    '0',
  ]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--progress/);
});

test('spark fanout pack passes --layout, --rate-limit and --no-drop-cache through to every node', async () => {
  const fake = fakeNodes();
  const cluster = writeCluster({
    name: 'pair',
    hosts: ['n1', 'n2'],
    fabric: ['10.0.0.1', '10.0.0.2'],
    hfCache: '/mnt/nas/hf',
  });
  const r = await cli(
    [
      'fanout',
      'pack',
      '/mnt/nas/snap',
      '--out',
      '/engram',
      '--cluster',
      cluster,
      '--layout',
      'sparse',
      '--rate-limit',
      '600',
      '--no-drop-cache',
      '--json',
    ],
    fake.env(),
  );
  assert.equal(r.code, 0, r.stderr);
  const packs = fake.calls().filter((c) => c.prog === 'spark');
  assert.equal(packs.length, 2);
  for (const [rank, host] of ['n1', 'n2'].entries()) {
    const argv = packs.find((c) => c.host === host)!.argv;
    assert.deepEqual(argv.slice(0, 7), [
      'pack',
      '/mnt/nas/snap',
      '--out',
      '/engram',
      '--rank',
      String(rank),
      '--world',
    ]);
    assert.deepEqual(argv.slice(argv.indexOf('--layout')), [
      '--layout',
      'sparse',
      '--rate-limit',
      '600',
      '--no-drop-cache',
    ]);
  }
  const bad = await cli(
    ['fanout', 'pack', '/mnt/nas/snap', '--out', '/engram', '--cluster', cluster, '--rate-limit', 'lots'],
    fake.env(),
  );
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--rate-limit must be a positive number of MB\/s/);
});
