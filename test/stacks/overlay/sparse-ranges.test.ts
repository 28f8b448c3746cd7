// Sparse copies as a range source: spark's (rank and world in its manifest) and the overlay
// tool's (no spark key: rank and world inferred from the ranges and the copy's own headers).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { inferIdentity } from '../../../src/engram/copy-ranges.js';
import { loadLayerSource } from '../../../src/stacks/local-copy.js';
import { tileLayers, type RankLayerRange } from '../../../src/engram/ranges.js';
import { runWrapper, type Exec } from '../../../src/commands/wrapper.js';
import type { Io } from '../../../src/terminal/io.js';
import { cli } from '../../helpers/cli.js';
import { writeSyntheticCopy, type SyntheticCopySpec } from '../../helpers/sparse-copy.js';
import { tempDir } from '../../helpers/tmp.js';

const TABLES = [
  { layer: 1, rows: 1000, dim: 256 },
  { layer: 14, rows: 1010, dim: 256 },
];
const REAL = [
  { layer: 1, rows: 384006168 },
  { layer: 14, rows: 384016682 },
];

function copy(spec: Omit<SyntheticCopySpec, 'tables'> & { tables?: SyntheticCopySpec['tables'] }): string {
  const dir = join(tempDir(), 'copy');
  mkdirSync(dir);
  writeSyntheticCopy(dir, { tables: TABLES, ...spec });
  return dir;
}

test('every rank of every world up to 6, floor and front, is inferred from its ranges alone', () => {
  for (const tables of [TABLES.map(({ layer, rows }) => ({ layer, rows })), REAL]) {
    for (let world = 1; world <= 6; world++) {
      for (const split of ['floor', 'front'] as const) {
        tileLayers(tables, world, split).forEach((ranges, rank) => {
          const id = inferIdentity(ranges, tables);
          assert.ok(!('unknown' in id), `rank ${rank} of ${world} ${split}: ${JSON.stringify(id)}`);
          assert.deepEqual(
            [id.rank, id.world, id.from],
            [rank, world, 'inferred'],
            `rank ${rank} of ${world} ${split}`,
          );
          // floor is tried first: a share both rules give is reported as floor's
          const floorToo = JSON.stringify(tileLayers(tables, world, 'floor')[rank]) === JSON.stringify(ranges);
          assert.equal(id.split, floorToo ? 'floor' : split);
        });
      }
    }
  }
});

test('a partition no rule gives, or one that two (rank, world) pairs give, is unknown, saying why', () => {
  const custom: RankLayerRange[] = [
    { layer: 1, rows: 1000, start: 0, end: 10 },
    { layer: 14, rows: 1010, start: 0, end: 700 },
  ];
  assert.deepEqual(inferIdentity(custom, custom), {
    unknown: "its ranges 1:0:10,14:0:700 are no single rank's floor or front share of the tables",
  });
  // 3 rows: [0, 1) is rank 0's floor share of 2 ranks and of 3.
  const tiny = [{ layer: 1, rows: 3, start: 0, end: 1 }];
  assert.deepEqual(inferIdentity(tiny, tiny), {
    unknown: 'its ranges 1:0:1 are the share of rank 0 of 2 or rank 0 of 3',
  });
  // With sub-table sizes the heads split is tried too: [0, 12) is rank 0's 3 whole heads of
  // [3, 4, 5, 10, 20] with 2 ranks (ceil(5/2)), and no rank's floor or front share of 42 rows.
  const heads = [{ layer: 1, rows: 42, start: 0, end: 12 }];
  assert.deepEqual(inferIdentity(heads, [{ layer: 1, rows: 42, subTables: [3, 4, 5, 10, 20] }]), {
    rank: 0,
    world: 2,
    split: 'heads',
    from: 'inferred',
  });
  assert.match((inferIdentity(heads, heads) as { unknown: string }).unknown, /no single rank's floor or front share/);
});

test("engram-ranges prints a sparse copy's manifest ranges: spark's key, or inferred, or unknown", async () => {
  const spark = copy({
    ranges: [
      { layer: 1, start: 250, end: 500 },
      { layer: 14, start: 252, end: 505 },
    ],
    spark: { rank: 1, world: 4, split: 'floor' },
  });
  // The overlay's tool: keys in its own order, one line, strings holding brackets, quotes and keys.
  const overlay = copy({
    ranges: [
      { layer: 14, start: 505, end: 757 },
      { layer: 1, start: 500, end: 750 },
    ],
    style: 'one-line',
  });
  const custom = copy({
    ranges: [
      { layer: 1, start: 0, end: 10 },
      { layer: 14, start: 0, end: 700 },
    ],
  });

  assert.deepEqual(await cli(['engram-ranges', spark]), { code: 0, stdout: '1:250:500,14:252:505\n', stderr: '' });
  assert.deepEqual(await cli(['engram-ranges', overlay, '--format', 'shell']), {
    code: 0,
    stdout: "export SPARK_ENGRAM_ROWS='1:500:750,14:505:757'\n",
    stderr: '',
  });
  const json = JSON.parse((await cli(['engram-ranges', overlay, '--json'])).stdout);
  assert.deepEqual(json, {
    rank: 2,
    world: 4,
    split: 'floor',
    layers: [
      { layer: 1, rows: 1000, start: 500, end: 750 },
      { layer: 14, rows: 1010, start: 505, end: 757 },
    ],
    copy: {
      kind: 'sparse',
      manifest: join(overlay, 'engram-local.json'),
      rank: 2,
      world: 4,
      split: 'floor',
      from: 'inferred',
    },
  });
  assert.equal(
    (await cli(['engram-ranges', overlay, '--all'])).stdout,
    '1:0:250,14:0:252\n1:250:500,14:252:505\n1:500:750,14:505:757\n1:750:1000,14:757:1010\n',
  );

  const wrong = await cli(['engram-ranges', overlay, '--rank', '1', '--world', '4']);
  assert.equal(wrong.code, 2);
  assert.equal(
    wrong.stderr,
    `spark: ${overlay} holds the rows of rank 2 of 4 (inferred from the ranges in engram-local.json), not rank 1 of 4's: mount this node's copy, or make it with spark pack --rank 1 --world 4\n`,
  );
  assert.equal((await cli(['engram-ranges', spark], { SPARK_WORLD_SIZE: '2' })).code, 2, 'another world');

  const unknown = await cli(['engram-ranges', custom, '--rank', '3', '--world', '4', '--json']);
  assert.equal(unknown.code, 0, unknown.stderr);
  const u = JSON.parse(unknown.stdout);
  assert.deepEqual(
    [u.rank, u.world, u.split, u.copy.unknown],
    [3, 4, null, "its ranges 1:0:10,14:0:700 are no single rank's floor or front share of the tables"],
  );
  assert.equal((await cli(['engram-ranges', custom])).stdout, '1:0:10,14:0:700\n');
  const all = await cli(['engram-ranges', custom, '--all', '--world', '4']);
  assert.equal(all.code, 2);
  assert.match(all.stderr, /holds an unknown rank .*every rank's ranges need the snapshot, so point at it instead/);
});

test('a sparse copy whose manifest does not fit its own tables is refused (exit 2) naming the layer', async () => {
  const beyond = copy({ ranges: [{ layer: 1, start: 900, end: 1001 }] });
  const r = await cli(['engram-ranges', beyond]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /engram-local\.json: layer 1's range \[900, 1001\) is not inside its table's 1000 rows/);
  const stranger = copy({ ranges: [{ layer: 1, start: 0, end: 10 }] });
  writeFileSync(join(stranger, 'engram-local.json'), JSON.stringify({ layers: { '7': [0, 5] } }));
  const s = await cli(['engram-ranges', stranger]);
  assert.equal(s.code, 2);
  assert.match(s.stderr, /names layer 7, but the copy has no Engram table for it \(its tables: 1, 14\)/);
});

test("the wrapper exports a sparse copy's ranges, refuses another rank's copy and a disagreeing preset", async () => {
  const overlay = copy({
    ranges: [
      { layer: 1, start: 250, end: 500 },
      { layer: 14, start: 252, end: 505 },
    ],
  });
  const custom = copy({
    ranges: [
      { layer: 1, start: 0, end: 10 },
      { layer: 14, start: 0, end: 700 },
    ],
  });
  const run = async (env: NodeJS.ProcessEnv) => {
    let err = '';
    const io: Io = { stdout: () => {}, stderr: (t) => (err += t), env, cwd: '/', stderrIsTTY: false, color: false };
    let exported: NodeJS.ProcessEnv | undefined;
    const exec: Exec = (_a, e) => {
      exported = e;
      throw new Error('execed');
    };
    try {
      await runWrapper(['engine', '--nnodes', '4'], { skipGid: true }, io, exec);
    } catch (e) {
      if (!exported) return { code: (e as { exitCode: number }).exitCode, message: (e as Error).message };
    }
    return { code: 0, rows: exported!.SPARK_ENGRAM_ROWS, log: err };
  };
  const ok = await run({ SPARK_ENGRAM_DIR: overlay, NODE_RANK: '1' });
  assert.equal(ok.rows, '1:250:500,14:252:505');
  assert.match(
    ok.log!,
    new RegExp(
      `SPARK_ENGRAM_ROWS=1:250:500,14:252:505 set \\(from the manifest of the sparse copy ${overlay}, rank 1 of 4 \\(inferred from the ranges in engram-local\\.json\\)\\)`,
    ),
  );
  const dashed = await run({ SPARK_ENGRAM_DIR: overlay, NODE_RANK: '1', SPARK_ENGRAM_ROWS: '1:250-500,14:252-505' });
  assert.equal(dashed.rows, '1:250:500,14:252:505', 'a preset in the old form is rewritten, never passed on');
  const other = await run({ SPARK_ENGRAM_DIR: overlay, NODE_RANK: '2' });
  assert.deepEqual(other, {
    code: 2,
    message: `${overlay} holds the rows of rank 1 of 4 (inferred from the ranges in engram-local.json), not rank 2 of 4's: mount this node's copy, or make it with spark pack --rank 2 --world 4`,
  });
  const preset = await run({ SPARK_ENGRAM_DIR: overlay, NODE_RANK: '1', SPARK_ENGRAM_ROWS: '1:250:500,14:252:504' });
  assert.equal(preset.code, 1);
  assert.match(
    preset.message!,
    /^SPARK_ENGRAM_ROWS='1:250:500,14:252:504' disagrees with .*engram-local\.json, which gives 1:250:500,14:252:505 \(only those rows exist in the copy\)/,
  );
  // Rank and world unknown: nothing to refuse, and the manifest's ranges are what the overlay serves.
  for (const rank of ['0', '3'])
    assert.equal((await run({ SPARK_ENGRAM_DIR: custom, NODE_RANK: rank })).rows, '1:0:10,14:0:700');
  const source = await loadLayerSource(custom, 'floor');
  assert.equal(source.kind, 'sparse');
});
