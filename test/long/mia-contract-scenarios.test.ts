// The Mia stack's packed shard against spark's, in full (the scenarios of
// test/stacks/mia/mia-contract.test.ts, which keeps one of each in npm test): every rank of
// worlds 2, 3 and 4 byte by byte, a stack-laid-out pack read through every spark command, and
// each of the stack's aborts verify names. A long trial (npm run test:long): dozens of CLI and
// Python processes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { packEngram } from '../../src/stacks/pack-engram.js';
import { packDirVerdict } from '../../src/stacks/mia/reader-verdict.js';
import { openSnapshot } from '../../src/engram/snapshot.js';
import { synthRow } from '../../src/synth/synth-rows.js';
import { packageRoot } from '../../src/addon/index.js';
import { bin } from '../helpers/cli.js';
import { makeSnapshot } from '../helpers/synth.js';
import { tempDir } from '../helpers/tmp.js';
import { packRequest } from '../helpers/pack-request.js';
import { needs } from '../helpers/external-tool.js';
import { floor, headerBytes, writeStackPack as writeStackPackOf } from '../helpers/mia-contract.js';

const snap = makeSnapshot({ vocab: 3000 });
const tables = (await openSnapshot(snap.dir, { engramOnly: true })).engram;
const reader = join(packageRoot(), 'python', 'spark_engram_reader.py');
const writeStackPack = (dir: string, rank: number, world: number, range = floor): void =>
  writeStackPackOf(tables, dir, rank, world, range);

test('dense is the Mia shard: every rank of worlds 2, 3 and 4, both layers, header, zeros, size, name and the rows at both range ends', async () => {
  for (const world of [2, 3, 4]) {
    for (let rank = 0; rank < world; rank++) {
      const out = join(tempDir(), `w${world}r${rank}`);
      await packEngram(packRequest(snap.dir, tables, out, { rank, world, layout: 'dense' }));
      for (const t of tables) {
        const [lo, hi] = floor(t.rows, rank, world);
        const data = readFileSync(join(out, `engram-l${t.layer}-r${rank}of${world}.bin`));
        const where = `layer ${t.layer} rank ${rank} of ${world}`;
        assert.deepEqual(data.subarray(0, 48), headerBytes(t.layer, lo, hi, t.rows), where);
        assert.ok(
          data.subarray(48, 4096).every((b) => b === 0),
          `${where}: bytes 48-4095 are zero`,
        );
        assert.equal(data.length, 4096 + (hi - lo) * 264, where);
        for (const id of [lo, lo + 1, hi - 2, hi - 1]) {
          const at = 4096 + (id - lo) * 264;
          assert.deepEqual(data.subarray(at, at + 264), synthRow(t.layer, id, 256), `${where}: row ${id}`);
        }
      }
      const v = await packDirVerdict(out);
      assert.equal(v.kind, 'spark-v2-dense');
      assert.deepEqual(
        v.shards.map((s) => [s.file, s.miaReader, s.exactSize]),
        tables.map((t) => [`engram-l${t.layer}-r${rank}of${world}.bin`, 'attach', true]),
      );
    }
  }
});

test("a pack laid out as the stack's packer lays it out reads the same through rows, verify, engram-ranges, bench gather, the wrapper and the Python reader", async (ctx) => {
  if (!needs(ctx, 'numpy')) return;
  const dir = join(tempDir(), 'stack');
  writeStackPack(dir, 1, 3);
  const t = tables[1];
  const [lo, hi] = floor(t.rows, 1, 3);
  const ids = [lo, lo + 7, hi - 1];
  const want = ids.map((id) => synthRow(t.layer, id, 256));

  const rows = bin(['rows', dir, '--layer', String(t.layer), '--ids', ids.join(','), '--json']);
  assert.equal(rows.code, 0, rows.stderr);
  const got = (JSON.parse(rows.stdout) as { rows: { weight: string; scale: string }[] }).rows;
  assert.deepEqual(
    got.map((r) => r.weight + r.scale),
    want.map((b) => b.toString('hex')),
  );
  const outside = bin(['rows', dir, '--layer', String(t.layer), '--ids', String(hi)]);
  assert.equal(outside.code, 2);

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

  const py = spawnSync('python3', [reader, dir, '--layer', String(t.layer), '--ids', ids.join(',')], {
    encoding: 'utf8',
  });
  assert.equal(py.status, 0, py.stderr);
  assert.deepEqual(
    (JSON.parse(py.stdout) as { rows: { weight: string; scale: string }[] }).rows.map((r) => r.weight + r.scale),
    want.map((b) => b.toString('hex')),
  );
  const pyv = spawnSync('python3', [reader, dir, '--verify'], { encoding: 'utf8' });
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

test('verify names what the stack aborts on in its own packs: a cut shard, a wrong header, ranges of no split it uses', async () => {
  const dir = join(tempDir(), 'stack');
  writeStackPack(dir, 0, 2);
  const name = `engram-l${tables[0].layer}-r0of2.bin`;
  const good = readFileSync(join(dir, name));
  writeFileSync(join(dir, name), good.subarray(0, good.length - 264));
  let v = bin(['verify', dir]);
  assert.equal(v.code, 1);
  assert.match(v.stderr, /truncated.*--layout dense --force/);
  assert.equal((await packDirVerdict(dir)).shards[0].miaReader, 'abort');
  const wrong = Buffer.from(good);
  wrong.writeBigUInt64LE(5n, 8); // another layer
  writeFileSync(join(dir, name), wrong);
  v = bin(['verify', dir]);
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
