import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  copySource,
  parseLayerRows,
  sourceAllRanges,
  sourceRankRanges,
  withSubTables,
} from '../../src/engram/layer-source.js';
import { formatEngramRows } from '../../src/engram/ranges.js';
import { parseModelConfig } from '../../src/engram/config.js';
import { runWrapper, type Exec } from '../../src/commands/wrapper.js';
import type { Io } from '../../src/terminal/io.js';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { packageRoot } from '../../src/addon/index.js';
import { join } from 'node:path';
import { bin, cli } from '../helpers/cli.js';
import { rankRangesJson } from '../helpers/ranges.js';
import { writePackDir } from '../helpers/engram-files.js';
import { makeSnapshot } from '../helpers/synth.js';
import { tempDir } from '../helpers/tmp.js';
import { needs } from '../helpers/external-tool.js';
import { python3 } from '../helpers/python3.js';

const RANK2 = [
  { layer: 14, rows: 384016682, start: 192008341, end: 288012511 },
  { layer: 1, rows: 384006168, start: 192003084, end: 288004626 },
];
const pack = (split: 'floor' | 'front' | 'heads') =>
  copySource('/engram', {
    kind: 'packed',
    manifestPath: '/engram/spark-pack.json',
    identity: { rank: 2, world: 4, split, from: 'manifest' },
    layers: RANK2,
  });
const packed = pack('floor');

test("a packed directory gives its own rank's ranges, and refuses another rank, world or split", () => {
  assert.deepEqual(packed.layers, [
    { layer: 1, rows: 384006168 },
    { layer: 14, rows: 384016682 },
  ]);
  assert.equal(
    formatEngramRows(sourceRankRanges(packed, 2, 4, 'floor', false)),
    '1:192003084:288004626,14:192008341:288012511',
  );
  assert.equal(
    formatEngramRows(sourceRankRanges(packed, 2, 4, 'front', false)),
    '1:192003084:288004626,14:192008341:288012511',
    "split not asked for: the pack's",
  );
  assert.throws(
    () => sourceRankRanges(packed, 1, 4, 'floor', false),
    (e: Error & { code?: string; exitCode?: number }) => {
      assert.equal(e.code, 'E_ROW_RANGE');
      assert.equal(e.exitCode, 2);
      assert.equal(
        e.message,
        "/engram holds the rows of rank 2 of 4 (spark-pack.json), not rank 1 of 4's: mount this node's pack, or make it with spark pack --rank 1 --world 4",
      );
      return true;
    },
  );
  assert.throws(() => sourceRankRanges(packed, 2, 3, 'floor', false), /not rank 2 of 3's/);
  assert.throws(() => sourceRankRanges(packed, 2, 4, 'heads', true), /was made with the floor split, not heads's/);
});

test('--all from a packed directory extends its split to every rank after checking its own range', () => {
  const all = sourceAllRanges(packed, 4, 'floor', false);
  assert.equal(all.length, 4);
  assert.equal(formatEngramRows(all[0]!), '1:0:96001542,14:0:96004170');
  const lying = pack('front');
  assert.throws(
    () => sourceAllRanges(lying, 4, 'floor', false),
    /spark-pack\.json says rank 2 owns 1:192003084:288004626,14:192008341:288012511, but the front split gives 1:192003084:288004626,14:192008342:288012512/,
  );
  const heads = pack('heads');
  assert.throws(
    () => sourceAllRanges(heads, 4, 'heads', false),
    /was made with the heads split: every rank's ranges need the sub-table sizes, so point at the snapshot/,
  );
});

test("the wrapper takes a packed directory's ranges and refuses a pack of another rank", async () => {
  const io = (env: NodeJS.ProcessEnv): Io => ({
    stdout: () => {},
    stderr: () => {},
    env,
    cwd: '/',
    stderrIsTTY: false,
    color: false,
  });
  let exported: NodeJS.ProcessEnv | undefined;
  const exec: Exec = (_a, env) => {
    exported = env;
    throw new Error('execed');
  };
  const load = async () => packed;
  await assert.rejects(
    runWrapper(['engine', '--nnodes', '4'], {}, io({ SPARK_ENGRAM_DIR: '/engram', NODE_RANK: '2' }), exec, load),
    /execed/,
  );
  assert.equal(exported!.SPARK_ENGRAM_ROWS, '1:192003084:288004626,14:192008341:288012511');
  await assert.rejects(
    runWrapper(['engine', '--nnodes', '4'], {}, io({ SPARK_ENGRAM_DIR: '/engram', NODE_RANK: '3' }), exec, load),
    /holds the rows of rank 2 of 4 \(spark-pack\.json\), not rank 3 of 4's/,
  );
  await assert.rejects(
    runWrapper(
      ['engine', '--nnodes', '4'],
      {},
      io({ SPARK_ENGRAM_DIR: '/engram', NODE_RANK: '2', SPARK_ENGRAM_ROWS: '1:0:384006168,14:0:384016682' }),
      exec,
      load,
    ),
    /SPARK_ENGRAM_ROWS='1:0:384006168,14:0:384016682' disagrees with \/engram\/spark-pack\.json, which gives 1:192003084:288004626,14:192008341:288012511 \(only those rows exist in the copy\); unset it/,
  );
});

test('explicit row counts and sub-table sizes from config.json', () => {
  assert.deepEqual(parseLayerRows('14:7,1:5'), [
    { layer: 1, rows: 5 },
    { layer: 14, rows: 7 },
  ]);
  assert.throws(() => parseLayerRows('1:99999999999999999999'), /too large/);
  const config = parseModelConfig(
    {
      text_config: {
        engram_layer_ids: [1, 14],
        engram_max_ngram_size: 4,
        engram_n_heads: 8,
        engram_head_dim: 256,
        engram_vocab_size: 16000000,
      },
    },
    '/snap/config.json',
  );
  const layers = withSubTables(
    [
      { layer: 1, rows: 384006168 },
      { layer: 14, rows: 384016682 },
    ],
    config,
    '/snap',
  );
  assert.equal(layers[0]!.subTables!.length, 24);
  assert.equal(
    layers[0]!.subTables!.reduce((a, b) => a + b, 0),
    384006168,
  );
  assert.equal(
    layers[1]!.subTables!.reduce((a, b) => a + b, 0),
    384016682,
  );
  assert.equal(layers[0]!.subTables![0], 16000057, 'the first prime above 16,000,000');
  assert.throws(
    () => withSubTables(layers, undefined, '/snap'),
    /the heads split needs config\.json with engram_\* keys/,
  );
});

test("spark engram-ranges and the wrapper read a packed directory's engram-local.json", async () => {
  const dir = tempDir();
  /** Rank 2 of 4's share of two small tables (floor split). */
  const rank2 = [
    { layer: 1, rows: 1000, start: 500, end: 750 },
    { layer: 14, rows: 1010, start: 505, end: 757 },
  ];
  writePackDir(dir, {
    rank: 2,
    world: 4,
    layout: 'dense',
    dim: 256,
    layers: rank2,
  });
  const own = await cli(['engram-ranges', dir]);
  assert.deepEqual(own, { code: 0, stdout: '1:500:750,14:505:757\n', stderr: '' });
  const json = JSON.parse(
    (await cli(['engram-ranges', '--json'], { SPARK_ENGRAM_DIR: dir, NODE_RANK: '2', SPARK_WORLD_SIZE: '4' })).stdout,
  );
  assert.deepEqual(
    json,
    rankRangesJson(2, 4, 'floor', rank2, {
      copy: {
        kind: 'packed',
        manifest: join(dir, 'engram-local.json'),
        rank: 2,
        world: 4,
        split: 'floor',
        from: 'manifest',
      },
    }),
  );
  const all = await cli(['engram-ranges', dir, '--all']);
  assert.equal(all.stdout, '1:0:250,14:0:252\n1:250:500,14:252:505\n1:500:750,14:505:757\n1:750:1000,14:757:1010\n');
  const other = await cli(['engram-ranges', dir], { NODE_RANK: '1' });
  assert.equal(other.code, 2);
  assert.match(other.stderr, /holds the rows of rank 2 of 4 \(engram-local\.json\), not rank 1 of 4's/);
  assert.equal((await cli(['engram-ranges', dir, '--split', 'front'])).code, 1);
  const check = await cli(['engram-ranges', dir, '--check', '1:0:500,14:0:505', '1:500:1001,14:505:1010']);
  assert.equal(check.code, 1);
  assert.match(check.stdout, /^layer 1: row 1000 is out of range \(rank 1 has \[500, 1001\); the table has 1000 rows/);
  const wrapped = bin(['wrapper', '--dry-run', '--', 'python3', '--nnodes', '4'], {
    env: { SPARK_ENGRAM_DIR: dir, NODE_RANK: '2' },
  });
  assert.equal(wrapped.code, 0, wrapped.stderr);
  assert.equal(wrapped.stdout, "export SPARK_ENGRAM_ROWS='1:500:750,14:505:757'\nexec python3 --nnodes 4\n");
  const wrong = bin(['wrapper', '--dry-run', '--', 'python3', '--nnodes', '4'], {
    env: { SPARK_ENGRAM_DIR: dir, NODE_RANK: '0' },
  });
  assert.equal(wrong.code, 2);
  const broken = tempDir();
  writeFileSync(join(broken, 'engram-local.json'), '{"format": "spark-engram-packed"');
  assert.equal((await cli(['engram-ranges', broken])).code, 2);
});

test("the Python reader gives a pack's SPARK_ENGRAM_ROWS in the overlay's grammar, as engram-ranges does", async (t) => {
  if (!needs(t, 'numpy')) return;
  const snap = makeSnapshot();
  const out = join(tempDir(), 'pack');
  const packed = await cli(['pack', snap.dir, '--out', out, '--rank', '1', '--world', '2', '--layout', 'dense']);
  assert.equal(packed.code, 0, packed.stderr);
  const expected = (await cli(['engram-ranges', out])).stdout;
  assert.match(expected, /^1:\d+:\d+,14:\d+:\d+\n$/);
  const code =
    'import sys; sys.path.insert(0, sys.argv[1]); from spark_engram_reader import PackedDir; print(PackedDir(sys.argv[2]).engram_rows())';
  const py = spawnSync(python3(), ['-c', code, join(packageRoot(), 'python'), out], { encoding: 'utf8' });
  assert.equal(py.stdout, expected, py.stderr);
});
