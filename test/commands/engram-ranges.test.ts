import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cli } from '../helpers/cli.js';
import { rankRangesJson } from '../helpers/ranges.js';
import { tempDir } from '../helpers/tmp.js';

const ROWS = ['--rows', '1:384006168,14:384016682'];
const FLOOR = [
  '1:0:96001542,14:0:96004170',
  '1:96001542:192003084,14:96004170:192008341',
  '1:192003084:288004626,14:192008341:288012511',
  '1:288004626:384006168,14:288012511:384016682',
];
const HEADS = [
  '1:0:96000564,14:0:96003054',
  '1:96000564:192001740,14:96003054:192007016',
  '1:192001740:288003654,14:192007016:288011564',
  '1:288003654:384006168,14:288011564:384016682',
];

function dsv41Config(): string {
  const dir = tempDir();
  const text_config = {
    engram_layer_ids: [1, 14],
    engram_num_embeddings: [384006168, 384016682],
    engram_max_ngram_size: 4,
    engram_n_heads: 8,
    engram_head_dim: 256,
    engram_vocab_size: 16000000,
  };
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ text_config }));
  return dir;
}

test('one rank in every format', async () => {
  const env = await cli(['engram-ranges', ...ROWS, '--rank', '1', '--world', '4']);
  assert.deepEqual(env, { code: 0, stdout: FLOOR[1] + '\n', stderr: '' });
  const shell = await cli(['engram-ranges', ...ROWS, '--format', 'shell'], { NODE_RANK: '3', SPARK_WORLD_SIZE: '4' });
  assert.equal(shell.stdout, `export SPARK_ENGRAM_ROWS='${FLOOR[3]}'\n`);
  const json = await cli(['engram-ranges', ...ROWS, '--rank', '0', '--world', '4', '--format', 'json']);
  assert.deepEqual(
    JSON.parse(json.stdout),
    rankRangesJson(0, 4, 'floor', [
      { layer: 1, rows: 384006168, start: 0, end: 96001542 },
      { layer: 14, rows: 384016682, start: 0, end: 96004170 },
    ]),
  );
  assert.deepEqual(
    JSON.parse((await cli(['engram-ranges', ...ROWS, '--rank', '0', '--world', '4', '--json'])).stdout),
    JSON.parse(json.stdout),
  );
});

test('--all prints every rank: values per line, a case block, or JSON', async () => {
  const env = await cli(['engram-ranges', ...ROWS, '--world', '4', '--all']);
  assert.equal(env.stdout, FLOOR.join('\n') + '\n');
  const shell = await cli(['engram-ranges', ...ROWS, '--world', '4', '--all', '--format', 'shell']);
  assert.equal(
    shell.stdout,
    [
      'case "$NODE_RANK" in',
      ...FLOOR.map((v, r) => `  ${r}) export SPARK_ENGRAM_ROWS='${v}' ;;`),
      `  *) echo "NODE_RANK must be 0-3, got '$NODE_RANK'" >&2; exit 2 ;;`,
      'esac',
      '',
    ].join('\n'),
  );
  const json = JSON.parse(
    (await cli(['engram-ranges', ...ROWS, '--world', '4', '--all', '--json', '--split', 'front'])).stdout,
  );
  assert.equal(json.world, 4);
  assert.equal(json.split, 'front');
  assert.deepEqual(
    json.ranks.map((r: { rank: number }) => r.rank),
    [0, 1, 2, 3],
  );
  assert.deepEqual(json.ranks[1].layers[1], { layer: 14, rows: 384016682, start: 96004171, end: 192008342 });
});

test('heads uses the prime-rule sub-tables of config.json and refuses a tensor they do not describe', async () => {
  const config = dsv41Config();
  const r = await cli(['engram-ranges', ...ROWS, '--world', '4', '--all', '--split', 'heads', '--config', config]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, HEADS.join('\n') + '\n');
  const bad = await cli([
    'engram-ranges',
    '--rows',
    '1:384006168,14:384016681',
    '--world',
    '4',
    '--rank',
    '0',
    '--split',
    'heads',
    '--config',
    config,
  ]);
  assert.equal(bad.code, 2);
  assert.match(
    bad.stderr,
    /^spark: layer 14: the 24 sub-table sizes sum to 384016682 rows but the tensor has 384016681 \(config.json does not describe this checkpoint/,
  );
  const none = await cli(['engram-ranges', ...ROWS, '--world', '4', '--rank', '0', '--split', 'heads']);
  assert.equal(none.code, 2);
  assert.match(none.stderr, /--split heads with --rows needs --config/);
  const other = await cli([
    'engram-ranges',
    '--rows',
    '1:384006168,7:5',
    '--world',
    '4',
    '--rank',
    '0',
    '--split',
    'heads',
    '--config',
    config,
  ]);
  assert.equal(other.code, 2);
  assert.match(other.stderr, /engram_layer_ids \[1, 14\] does not name layer 7/);
});

test('--check: the correct four exit 0; a full range on every rank exits 1 naming the layer and row', async () => {
  const ok = await cli(['engram-ranges', ...ROWS, '--check', ...FLOOR]);
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(ok.stdout, 'ok: the 4 ranks tile layer 1 (384006168 rows), layer 14 (384016682 rows) exactly\n');
  assert.equal((await cli(['engram-ranges', ...ROWS, '--check', ...HEADS])).code, 0);
  assert.equal(
    (await cli(['engram-ranges', ...ROWS, '--check', FLOOR.join('\n')])).code,
    0,
    'values from --all in one argument',
  );
  const dashed = FLOOR.map((v) => v.replace(/:(\d+):(\d+)/g, ':$1-$2'));
  assert.equal(dashed[1], '1:96001542-192003084,14:96004170-192008341');
  assert.equal((await cli(['engram-ranges', ...ROWS, '--check', ...dashed])).code, 0, 'the older L:lo-hi form is read');
  // What the overlay's engram_partition.py prints (config.json row counts, SGLang's floor split).
  const partition =
    FLOOR.map((v, r) => `rank ${r}: ${v.replace(',', ' ')}`).join('\n') +
    '\n(engram_local.py takes the ranges space-separated; ENGRAM_ROWS_HOST takes them comma-separated)\n';
  const fromPartition = await cli(['engram-ranges', ...ROWS, '--check', partition]);
  assert.equal(fromPartition.code, 0, fromPartition.stderr);
  assert.equal(
    fromPartition.stdout,
    'ok: the 4 ranks tile layer 1 (384006168 rows), layer 14 (384016682 rows) exactly\n',
  );
  const swapped = partition.replace('rank 2: 1:192003084:288004626', 'rank 2: 1:192003085:288004626');
  assert.match(
    (await cli(['engram-ranges', ...ROWS, '--check', swapped])).stdout,
    /^layer 1: rows \[192003084, 192003085\) belong to no rank/,
  );
  const full = Array(4).fill('1:0:384006168,14:0:384016682');
  const bad = await cli(['engram-ranges', ...ROWS, '--check', ...full]);
  assert.equal(bad.code, 1);
  const line =
    'layer 1: row 0 is owned by rank 0 [0, 384006168) and rank 1 [0, 384006168); a full range on every rank double-counts every row in the all-reduce';
  const line14 =
    'layer 14: row 0 is owned by rank 0 [0, 384016682) and rank 1 [0, 384016682); a full range on every rank double-counts every row in the all-reduce';
  // Each failing layer once on stdout; one error line naming them all, not a second copy.
  assert.equal(bad.stdout, `${line}\n${line14}\n`);
  assert.equal(
    bad.stderr,
    `spark engram-ranges: the ranges do not tile layers 1, 14 (each layer's problem is on stdout)\n`,
  );
  const json = await cli(['engram-ranges', ...ROWS, '--check', ...full, '--json']);
  assert.equal(json.code, 1);
  assert.deepEqual(JSON.parse(json.stderr), { error: { code: 'E_CHECK_FAILED', message: `${line}; ${line14}` } });
  const report = JSON.parse(json.stdout);
  assert.equal(report.ok, false);
  assert.deepEqual(
    { layer: report.problem.layer, kind: report.problem.kind, row: report.problem.row },
    { layer: 1, kind: 'overlap', row: 0 },
  );
  const short = await cli(['engram-ranges', ...ROWS, '--check', ...FLOOR.slice(0, 3)]);
  assert.equal(short.code, 1);
  assert.match(
    short.stdout,
    /^layer 1: rows \[288004626, 384006168\) belong to no rank \(the last range, rank 2's, ends at 288004626; the table has 384006168 rows\)/,
  );
  const beyond = await cli([
    'engram-ranges',
    ...ROWS,
    '--check',
    ...FLOOR.slice(0, 3),
    '1:288004626:384006169,14:288012511:384016682',
  ]);
  assert.match(beyond.stdout, /^layer 1: row 384006168 is out of range \(rank 3 has \[288004626, 384006169\)/);
});

test('--check usage errors: bad values, a world that disagrees, a path after --check', async () => {
  const bad = await cli(['engram-ranges', '--check', '1:0:10', '1:10:5']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /^spark: rank 1's SPARK_ENGRAM_ROWS '1:10:5': entry 1 '1:10:5': lo 10 is greater than hi 5/);
  const world = await cli(['engram-ranges', '--world', '3', '--check', '1:0:10', '1:10:20']);
  assert.equal(world.code, 2);
  assert.match(world.stderr, /--world 3 but --check has 2 values/);
  const path = await cli(['engram-ranges', '--check', '1:0:10', '/models/x']);
  assert.equal(path.code, 2);
  assert.match(path.stderr, /'\/models\/x' looks like a path: put the snapshot before --check/);
});

test('usage errors name the missing flag and its variable', async () => {
  const cases: [string[], NodeJS.ProcessEnv, RegExp][] = [
    [[...ROWS, '--rank', '0'], {}, /--world is required \(or set SPARK_WORLD_SIZE\)/],
    [[...ROWS, '--world', '4'], {}, /--rank is required \(or set NODE_RANK\), or pass --all/],
    [[...ROWS, '--world', '4'], { NODE_RANK: '4' }, /rank 4 is outside the world of 4 ranks/],
    [['--world', '4', '--rank', '0'], {}, /name the snapshot .* or set SPARK_ENGRAM_DIR, or give --rows/],
    [
      [...ROWS, '--world', '4', '--rank', '0', '--split', 'ceil'],
      {},
      /--split must be floor, front or heads, got 'ceil'/,
    ],
    [[...ROWS, '--world', '4', '--rank', '0', '--format', 'yaml'], {}, /--format must be env, shell or json/],
    [['--rows', '1:5,1:6', '--world', '4', '--rank', '0'], {}, /--rows names layer 1 twice/],
    [['--rows', '1=5', '--world', '4', '--rank', '0'], {}, /--rows entry '1=5' is not layer:rows/],
    [[...ROWS, '--world', '0', '--rank', '0'], {}, /--world must be between 1 and/],
  ];
  for (const [args, env, message] of cases) {
    const r = await cli(['engram-ranges', ...args], env);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, message);
  }
});
