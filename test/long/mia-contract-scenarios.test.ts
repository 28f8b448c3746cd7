// The Mia stack's packed shard against spark's, beyond what test/stacks/mia/mia-contract.test.ts
// checks in npm test (world 3, a stack-laid-out pack's rows, a cut shard): every rank of worlds
// 2 and 4 byte by byte, a stack-laid-out pack through every other spark command, and the other
// aborts verify names. A long trial (npm run test:long): dozens of CLI and Python processes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { packDirVerdict } from '../../src/stacks/mia/reader-verdict.js';
import { openSnapshot } from '../../src/engram/snapshot.js';
import { packageRoot } from '../../src/addon/index.js';
import { bin } from '../helpers/cli.js';
import { makeSnapshot } from '../helpers/synth.js';
import { tempDir } from '../helpers/tmp.js';
import { needs } from '../helpers/external-tool.js';
import { checkDenseShards, floor, writeStackPack as writeStackPackOf } from '../helpers/mia-contract.js';
import { python3 } from '../helpers/python3.js';

const snap = makeSnapshot({ vocab: 3000 });
const tables = (await openSnapshot(snap.dir, { engramOnly: true })).engram;
const reader = join(packageRoot(), 'python', 'spark_engram_reader.py');
const writeStackPack = (dir: string, rank: number, world: number, range = floor): void =>
  writeStackPackOf(tables, dir, rank, world, range);

test('dense is the Mia shard: every rank of worlds 2 and 4 (npm test checks world 3), both layers, header, zeros, size, name and the rows at both range ends', async () => {
  for (const world of [2, 4]) await checkDenseShards(snap.dir, tables, world);
});

test("a pack laid out as the stack's packer lays it out reads the same through verify, engram-ranges, bench gather, the wrapper and the Python reader's verify (npm test reads its rows)", async (ctx) => {
  if (!needs(ctx, 'numpy')) return;
  const dir = join(tempDir(), 'stack');
  writeStackPack(dir, 1, 3);

  const v = bin(['verify', dir, '--source', snap.dir, '--full', '--json']);
  assert.equal(v.code, 0, v.stderr);
  const report = JSON.parse(v.stdout);
  assert.equal(report.split, 'floor');
  assert.match(report.checked.join('; '), /no checksums to check/);
  assert.equal(
    report.layers.reduce((s: number, l: { rows: { compared: number } }) => s + l.rows.compared, 0),
    tables.reduce((s, x) => s + floor(x.rows, 1, 3)[1] - floor(x.rows, 1, 3)[0], 0),
  );

  const spec = tables.map((x) => `${x.layer}:${floor(x.rows, 1, 3).join(':')}`).join(',');
  const ranges = bin(['engram-ranges', dir, '--rank', '1', '--world', '3']);
  assert.equal(ranges.code, 0, ranges.stderr);
  assert.equal(ranges.stdout.trim(), spec);
  assert.equal(bin(['engram-ranges', dir, '--rank', '0', '--world', '3']).code === 0, false, 'another rank is refused');
  assert.notEqual(
    bin(['engram-ranges', dir, '--rank', '1', '--world', '3', '--split', 'heads']).code,
    0,
    'a floor pack never stands for a heads one',
  );

  const w = bin(
    ['wrapper', '--dry-run', '--json', '--skip-gid', '--', 'python3', '-m', 'sglang.launch_server', '--tp', '3'],
    {
      env: { SPARK_ENGRAM_DIR: dir, NODE_RANK: '1' },
    },
  );
  assert.equal(w.code, 0, w.stderr);
  assert.equal(JSON.parse(w.stdout).exported.SPARK_ENGRAM_ROWS, spec);

  const pyv = spawnSync(python3(), [reader, dir, '--verify'], { encoding: 'utf8' });
  assert.equal(pyv.status, 0, pyv.stderr);
  assert.equal(JSON.parse(pyv.stdout).checksums, false);

  const g = bin(['bench', 'gather', dir, '--threads', '1', '--batch', '16', '--seconds', '1', '--json']);
  assert.equal(g.code, 0, g.stderr);
  // The row store and, beside it on the same shards, the Mia stack's own read path.
  const results = (JSON.parse(g.stdout) as { results: { source: string; layout: string; reader: string }[] }).results;
  assert.deepEqual(
    results.map((r) => [r.source, r.layout]),
    [
      ['packed', 'dense'],
      ['packed', 'dense'],
    ],
  );
  assert.equal(results.filter((r) => r.reader === 'mia-pool').length, 1, 'one case is the Mia reader');

  // The registry's receipt beside the shards: checked when present.
  writeFileSync(
    join(dir, 'identity.json'),
    JSON.stringify({
      format: 'DSV41EN1',
      tp: 3,
      revision: 'x',
      rows: Object.fromEntries(tables.map((x) => [String(x.layer), x.rows])),
    }),
  );
  assert.equal(bin(['verify', dir]).code, 0);
  writeFileSync(join(dir, 'identity.json'), JSON.stringify({ format: 'DSV41EN1', tp: 4, rows: {} }));
  const bad = bin(['verify', dir]);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /identity\.json: tp is 4, engram-l\d+-r1of3\.bin is of 3/);

  const verdict = await packDirVerdict(dir, { rows: new Map(tables.map((x) => [x.layer, x.rows])) });
  assert.equal(verdict.kind, 'mia-native');
  assert.equal(verdict.split, 'floor');
  assert.ok(verdict.shards.every((s) => s.miaReader === 'attach'));
});

test('verify names what the stack aborts on in its own packs beyond a cut shard (npm test): a wrong header, ranges of no split it uses', async () => {
  const dir = join(tempDir(), 'stack');
  writeStackPack(dir, 0, 2);
  const name = `engram-l${tables[0].layer}-r0of2.bin`;
  const good = readFileSync(join(dir, name));
  const wrong = Buffer.from(good);
  wrong.writeBigUInt64LE(5n, 8); // another layer
  writeFileSync(join(dir, name), wrong);
  let v = bin(['verify', dir]);
  assert.equal(v.code, 1);
  assert.match(v.stderr, /header says layer 5/);
  // Ranges of no split the stack uses (one row more than floor's): unknown from the headers
  // alone, refused once the source's config.json lets the heads split be checked too.
  const odd = join(tempDir(), 'odd');
  writeStackPack(odd, 0, 2, (n, r, tp) => [0, floor(n, r, tp)[1] + 1]);
  v = bin(['verify', odd, '--json']);
  assert.equal(JSON.parse(v.stdout).split, 'unknown');
  assert.match(JSON.parse(v.stdout).checked.join('; '), /heads needs --source/);
  v = bin(['verify', odd, '--source', snap.dir, '--json']);
  assert.equal(v.code, 1);
  assert.match(v.stderr, /no floor or heads split's share of rank 0 of 2/);
  assert.notEqual(bin(['engram-ranges', odd, '--rank', '0', '--world', '2', '--split', 'floor']).code, 0);
});
