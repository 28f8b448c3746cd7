import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { decodeE4M3, decodeE8M0, dequantRow } from '../../src/engram/dequant.js';
import { openRowSource } from '../../src/stacks/local-copy.js';
import { synthRow } from '../../src/synth/synth-rows.js';
import { runRows } from '../../src/commands/rows.js';
import { cli } from '../helpers/cli.js';
import { writePackDir } from '../helpers/engram-files.js';
import { synthSnapshotLike } from '../helpers/snapshot-like.js';
import { makeFullSizeSnapshot, makeSnapshot } from '../helpers/synth.js';
import { tempDir } from '../helpers/tmp.js';

const io = { stdout: () => {}, stderr: () => {}, env: {}, cwd: '.', stderrIsTTY: false, color: false };

function packDir(layout: 'dense' | 'page'): string {
  const dir = join(tempDir(), `pack-${layout}`);
  mkdirSync(dir);
  writePackDir(
    dir,
    {
      rank: 1,
      world: 2,
      layout,
      dim: 256,
      layers: [
        { layer: 1, rows: 4000, start: 2000, end: 4000 },
        { layer: 14, rows: 4001, start: 2000, end: 4001 },
      ],
    },
    synthRow,
  );
  return dir;
}

test('F8_E4M3 and E8M0 decode to the values the formats define', () => {
  assert.equal(decodeE4M3(0x38), 1);
  assert.equal(decodeE4M3(0xb8), -1);
  assert.equal(decodeE4M3(0x7e), 448);
  assert.equal(decodeE4M3(0x01), 2 ** -9);
  assert.ok(Number.isNaN(decodeE4M3(0x7f)));
  assert.equal(decodeE8M0(127), 1);
  assert.equal(decodeE8M0(120), 2 ** -7);
  assert.ok(Number.isNaN(decodeE8M0(255)));
  const row = Buffer.alloc(64 + 2);
  row[0] = 0x38;
  row[32] = 0x40; // 2.0
  row[64] = 128;
  row[65] = 126;
  const v = dequantRow(row, 64);
  assert.equal(v[0], 2);
  assert.equal(v[32], 1);
});

test('spark rows on a packed directory prints the exact bytes (both layouts, both layers)', async () => {
  for (const layout of ['dense', 'page'] as const) {
    const dir = packDir(layout);
    const r = await cli(['rows', dir, '--layer', '14', '--ids', '2000,4000,3000,3000', '--json']);
    assert.equal(r.code, 0, r.stderr);
    const reply = JSON.parse(r.stdout);
    assert.equal(reply.layer, 14);
    assert.deepEqual(
      reply.rows.map((x: { id: number }) => x.id),
      [2000, 4000, 3000, 3000],
    );
    for (const row of reply.rows) {
      const want = synthRow(14, row.id, 256);
      assert.equal(row.weight, want.subarray(0, 256).toString('hex'));
      assert.equal(row.scale, want.subarray(256).toString('hex'));
      assert.equal(row.values, undefined);
    }
  }
});

test('spark rows: an id outside the pack range is exit 2 naming it; missing flags are usage errors', async () => {
  const dir = packDir('dense');
  const r = await cli(['rows', dir, '--layer', '1', '--ids', '2000,1999', '--json']);
  assert.equal(r.code, 2);
  const err = JSON.parse(r.stderr).error;
  assert.equal(err.code, 'E_ROW_RANGE');
  assert.match(err.message, /row id 1999 .*\[2000, 4000\) of layer 1/);
  const human = await cli(['rows', dir, '--layer', '1', '--ids', '4000']);
  assert.equal(human.code, 2);
  assert.match(human.stderr, /^spark: row id 4000 /);
  assert.equal((await cli(['rows', dir, '--ids', '1'])).code, 2);
  assert.equal((await cli(['rows', dir, '--layer', '7', '--ids', '1'])).code, 2);
  const env = await cli(['rows', '--layer', '1', '--ids', '2001', '--json'], { SPARK_ENGRAM_DIR: dir });
  assert.equal(env.code, 0, env.stderr);
  assert.equal(JSON.parse(env.stdout).rows[0].weight, synthRow(1, 2001, 256).subarray(0, 256).toString('hex'));
});

test('spark rows --dequant adds the D decoded values', async () => {
  const dir = packDir('page');
  const r = await cli(['rows', dir, '--layer', '1', '--ids', '2345', '--dequant', '--json']);
  assert.equal(r.code, 0, r.stderr);
  const values = JSON.parse(r.stdout).rows[0].values as number[];
  assert.equal(values.length, 256);
  // JSON has no negative zero: compare -0 as 0.
  assert.deepEqual(
    values,
    dequantRow(synthRow(1, 2345, 256), 256).map((v) => (v === 0 ? 0 : v)),
  );
  const text = await cli(['rows', dir, '--layer', '1', '--ids', '2345', '--dequant']);
  assert.match(
    text.stdout,
    /^layer 1 \(packed, 4000 rows of 256 \+ 8 bytes, this copy holds \[2000, 4000\)\):\nrow 2345\n {2}weight [0-9a-f]{512}\n {2}scale {2}[0-9a-f]{16}\n {2}values /,
  );
});

test('a synth snapshot read through the row source: two reads per row, or one with resident scales', async () => {
  const snap = makeSnapshot();
  for (const resident of [false, true]) {
    const src = await openRowSource(snap.dir, {
      openSnapshot: synthSnapshotLike,
      threads: 4,
      merge: false,
      mapCached: false,
      residentScales: resident,
    });
    try {
      assert.equal(src.kind, 'snapshot');
      for (const t of src.tables) {
        const ids = [0, 1, t.rows - 1, Math.floor(t.rows / 2), Math.floor(t.rows / 4), 1];
        const before = src.store.stats().reads;
        const out = await src.store.gather(t.layer, ids);
        ids.forEach((id, i) =>
          assert.ok(
            out.subarray(i * 264, (i + 1) * 264).equals(synthRow(t.layer, id, 256)),
            `layer ${t.layer} id ${id}`,
          ),
        );
        assert.equal(src.store.stats().reads - before, resident ? 5 : 10);
      }
      assert.equal(src.store.stats().residentBytes, resident ? src.tables.reduce((a, t) => a + t.rows * 8, 0) : 0);
    } finally {
      await src.close();
    }
  }
  const r = await runRows(
    { source: snap.dir, layer: 14, ids: [3], dequant: false, openSnapshot: synthSnapshotLike },
    io,
  );
  assert.equal(
    (r.json as { rows: { weight: string }[] }).rows[0].weight,
    synthRow(14, 3, 256).subarray(0, 256).toString('hex'),
  );
});

test('a full-size sparse DSV4.1 snapshot: rows at 0, rank boundaries and N-1 of both layers, through the API and spark rows', async () => {
  const snap = makeFullSizeSnapshot();
  const src = await openRowSource(snap.dir, { threads: 8 });
  try {
    assert.deepEqual(
      src.tables.map((t) => [t.layer, t.rows]),
      [
        [1, 384006168],
        [14, 384016682],
      ],
    );
    assert.ok(src.specs.every((s) => s.kind === 'snapshot' && Number(s.scale.offset) > 2 ** 32));
    for (const t of src.tables) {
      const bounds = [1, 2, 3].map((r) => Math.floor((t.rows * r) / 4));
      const ids = [0, 1, ...bounds.flatMap((b) => [b - 1, b]), t.rows - 1];
      const out = await src.store.gather(t.layer, ids);
      ids.forEach((id, i) =>
        assert.ok(out.subarray(i * 264, (i + 1) * 264).equals(synthRow(t.layer, id, 256)), `layer ${t.layer} id ${id}`),
      );
      const r = await cli(['rows', snap.dir, '--layer', String(t.layer), '--ids', ids.join(','), '--json']);
      assert.equal(r.code, 0, r.stderr);
      const reply = JSON.parse(r.stdout);
      assert.equal(reply.source, 'snapshot');
      reply.rows.forEach((row: { id: number; weight: string; scale: string }, i: number) => {
        assert.equal(row.id, ids[i]);
        assert.equal(row.weight + row.scale, synthRow(t.layer, ids[i], 256).toString('hex'));
      });
      const past = await cli(['rows', snap.dir, '--layer', String(t.layer), '--ids', String(t.rows), '--json']);
      assert.equal(past.code, 2);
      assert.match(JSON.parse(past.stderr).error.message, new RegExp(`row id ${t.rows} `));
    }
  } finally {
    await src.close();
  }
});

test('spark rows on a synth snapshot made by spark synth, with --dequant', async () => {
  const dir = join(tempDir(), 'snap');
  assert.equal((await cli(['synth', dir])).code, 0);
  const r = await cli(['rows', dir, '--layer', '14', '--ids', '5,5,0', '--dequant', '--json']);
  assert.equal(r.code, 0, r.stderr);
  const rows = JSON.parse(r.stdout).rows;
  assert.equal(rows[0].weight + rows[0].scale, synthRow(14, 5, 256).toString('hex'));
  assert.deepEqual(
    rows[2].values,
    dequantRow(synthRow(14, 0, 256), 256).map((v) => (v === 0 ? 0 : v)),
  );
});
