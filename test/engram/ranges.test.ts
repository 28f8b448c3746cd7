import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  checkTiling,
  dashEntries,
  formatEngramRows,
  parseEngramRows,
  parseRankValues,
  rankRanges,
  tileLayers,
  type LayerRange,
} from '../../src/engram/ranges.js';
import { randomBelowPow2, randomInt, rng } from '../helpers/random.js';

const TABLES = [
  { layer: 1, rows: 384006168 },
  { layer: 14, rows: 384016682 },
];

test("SPARK_ENGRAM_ROWS round-trips through parse and format in the overlay's grammar", () => {
  const value = '1:0:96001542,14:0:96004170';
  const parsed = parseEngramRows(value);
  assert.deepEqual(parsed, [
    { layer: 1, start: 0, end: 96001542 },
    { layer: 14, start: 0, end: 96004170 },
  ]);
  assert.equal(formatEngramRows(parsed), value);
  assert.equal(formatEngramRows([...parsed].reverse()), value);
  assert.deepEqual(parseEngramRows('3:5:5'), [{ layer: 3, start: 5, end: 5 }]);
});

test('the older L:lo-hi form is read (alone or mixed) and written back with colons; dashEntries names it', () => {
  assert.deepEqual(parseEngramRows('1:0-96001542,14:0-96004170'), parseEngramRows('1:0:96001542,14:0:96004170'));
  assert.equal(formatEngramRows(parseEngramRows('1:0-10,14:0:7')), '1:0:10,14:0:7');
  assert.deepEqual(dashEntries('1:0-10,14:0:7'), ['1:0-10']);
  assert.deepEqual(dashEntries('1:0:10,14:0:7'), []);
});

test('rank values from --all lines, separate arguments, or engram_partition.py output', () => {
  const partition = [
    'rank 0: 1:0:250 14:0:252',
    'rank 1: 1:250:500 14:252:505',
    '(engram_local.py takes the ranges space-separated; ENGRAM_ROWS_HOST takes them comma-separated)',
  ].join('\n');
  const two = [parseEngramRows('1:0:250,14:0:252'), parseEngramRows('1:250:500,14:252:505')];
  assert.deepEqual(parseRankValues([partition]), two);
  assert.deepEqual(parseRankValues(['1:0:250,14:0:252\n1:250:500,14:252:505\n']), two);
  assert.deepEqual(
    parseRankValues(['1:0-250,14:0-252 1:250-500,14:252-505']),
    two,
    'values space-separated, each with commas',
  );
  assert.deepEqual(
    parseRankValues(['1:0:250 14:0:252', '1:250:500  14:252:505']),
    two,
    'one rank per argument, entries space-separated',
  );
  assert.throws(() => parseRankValues(['rank 1: 1:0:5']), /names rank 1 where rank 0 comes/);
  assert.throws(() => parseRankValues(['1:0:5 1:5:10']), /repeats layer 1/);
  assert.deepEqual(parseRankValues(['', '(a note)']), []);
});

test('malformed SPARK_ENGRAM_ROWS values fail with a precise message (E_ROWS_SPEC, exit 2)', () => {
  const cases: [string, RegExp][] = [
    ['', /empty value/],
    ['1:0:10,', /entry 2 '' is not layer:lo:hi/],
    ['1:0:10, 14:0:5', /entry 2 ' 14:0:5' is not layer:lo:hi \(no spaces allowed\)/],
    ['1:0:10:20', /entry 1 '1:0:10:20' is not layer:lo:hi/],
    ['1:0-10-20', /entry 1/],
    ['1-0:10', /entry 1/],
    ['1:-1:10', /entry 1/],
    ['1:0x10:20', /entry 1/],
    ['1:10:5', /entry 1 '1:10:5': lo 10 is greater than hi 5/],
    ['1:10-5', /entry 1 '1:10-5': lo 10 is greater than hi 5/],
    ['14:0:5,1:0:10', /layer 1 comes after layer 14 \(layers must be ascending and unique\)/],
    ['1:0:5,1:5:10', /repeats layer 1/],
    ['1:0:99999999999999999999', /hi 99999999999999999999 is too large/],
  ];
  for (const [value, message] of cases) {
    assert.throws(
      () => parseEngramRows(value),
      (e: Error & { code?: string; exitCode?: number }) => {
        assert.equal(e.code, 'E_ROWS_SPEC', value);
        assert.equal(e.exitCode, 2);
        assert.match(e.message, message);
        assert.match(e.message, /^SPARK_ENGRAM_ROWS '/);
        return true;
      },
    );
  }
});

test('tileLayers gives every rank every layer, ascending', () => {
  const ranks = tileLayers([...TABLES].reverse(), 4, 'floor');
  assert.equal(ranks.length, 4);
  assert.equal(formatEngramRows(ranks[1]!), '1:96001542:192003084,14:96004170:192008341');
  assert.deepEqual(rankRanges(TABLES, 3, 4, 'floor')[1], {
    layer: 14,
    rows: 384016682,
    start: 288012511,
    end: 384016682,
  });
  assert.throws(() => rankRanges(TABLES, 4, 4, 'floor'), /rank 4 is outside the world of 4 ranks/);
  assert.throws(
    () => tileLayers(TABLES, 4, 'heads'),
    (e: Error & { code?: string }) => e.code === 'E_CONFIG' && /config\.json/.test(e.message),
  );
  assert.throws(
    () => tileLayers([{ layer: 1, rows: 10, subTables: [4, 5] }], 2, 'heads'),
    (e: Error & { code?: string }) =>
      e.code === 'E_ENGRAM_ROWS' &&
      /^layer 1: the 2 sub-table sizes sum to 9 rows but the tensor has 10/.test(e.message),
  );
});

test('the four correct ranges tile; a full range on every rank is an overlap that says why', () => {
  const good = tileLayers(TABLES, 4, 'floor');
  assert.deepEqual(checkTiling(good, TABLES), {
    ok: true,
    world: 4,
    layers: [
      { layer: 1, rows: 384006168, ok: true },
      { layer: 14, rows: 384016682, ok: true },
    ],
  });
  const full = Array.from({ length: 4 }, () => parseEngramRows('1:0:384006168,14:0:384016682'));
  const report = checkTiling(full, TABLES);
  assert.equal(report.ok, false);
  assert.deepEqual(
    { ...report.problem, message: undefined },
    { layer: 1, kind: 'overlap', row: 0, ranks: [0, 1], message: undefined },
  );
  assert.match(
    report.problem!.message,
    /^layer 1: row 0 is owned by rank 0 \[0, 384006168\) and rank 1 \[0, 384006168\); a full range on every rank double-counts/,
  );
});

test('the first gap, overlap or out-of-range row is named with its layer and ranks', () => {
  const parse = (...v: string[]): LayerRange[][] => v.map((s) => parseEngramRows(s));
  const tables = [
    { layer: 1, rows: 100 },
    { layer: 14, rows: 50 },
  ];
  const cases: [LayerRange[][], object, RegExp][] = [
    [
      parse('1:0:40,14:0:25', '1:41:100,14:25:50'),
      { layer: 1, kind: 'gap', row: 40, ranks: [0, 1] },
      /^layer 1: rows \[40, 41\) belong to no rank \(rank 0 ends at 40, rank 1 starts at 41\)$/,
    ],
    [
      parse('1:0:50,14:0:25', '1:50:100,14:24:50'),
      { layer: 14, kind: 'overlap', row: 24, ranks: [0, 1] },
      /^layer 14: row 24 is owned by rank 0 \[0, 25\) and rank 1 \[24, 50\)$/,
    ],
    [
      parse('1:0:50,14:0:25', '1:50:99,14:25:50'),
      { layer: 1, kind: 'gap', row: 99, ranks: [1] },
      /rows \[99, 100\) belong to no rank \(the last range, rank 1's, ends at 99; the table has 100 rows\)/,
    ],
    [
      parse('1:0:50,14:0:25', '1:50:101,14:25:50'),
      { layer: 1, kind: 'out-of-range', row: 100, ranks: [1] },
      /^layer 1: row 100 is out of range \(rank 1 has \[50, 101\); the table has 100 rows, \[0, 100\)\)$/,
    ],
    [
      parse('1:1:50,14:0:25', '1:50:100,14:25:50'),
      { layer: 1, kind: 'gap', row: 0, ranks: [0] },
      /rows \[0, 1\) belong to no rank \(no range starts at 0, rank 0 starts at 1\)/,
    ],
    [parse('1:0:50,14:0:50', '1:50:100'), { layer: 1, kind: 'gap' }, /./],
    [
      parse('1:0:50,14:0:25', '1:50:100'),
      { layer: 14, kind: 'gap', row: 25, ranks: [0] },
      /rows \[25, 50\) belong to no rank .*; rank 1 names no range for layer 14\)$/,
    ],
    [
      parse('1:0:50,7:0:3,14:0:25', '1:50:100,14:25:50'),
      { layer: 7, kind: 'unknown-layer', ranks: [0] },
      /^layer 7: not an Engram layer of this checkpoint \(its layers: 1, 14\), named by rank 0$/,
    ],
    [
      parse('1:0:50,14:0:25', '1:50:100,14:25:50', '1:100:100,14:60:60'),
      { layer: 14, kind: 'out-of-range', row: 60, ranks: [2] },
      /row 60 is out of range/,
    ],
  ];
  cases.forEach(([specs, expected, message], i) => {
    const report = checkTiling(specs, tables);
    if (i === 5) {
      assert.equal(report.ok, true, 'layer 14 tiled by rank 0 alone is fine');
      return;
    }
    assert.equal(report.ok, false, `case ${i}`);
    const { message: text, ...rest } = report.problem!;
    assert.deepEqual({ ...rest, ...expected }, rest, `case ${i}: ${text}`);
    assert.match(text, message, `case ${i}`);
  });
});

test('without row counts the check still finds gaps and overlaps', () => {
  assert.equal(checkTiling([parseEngramRows('1:0:10'), parseEngramRows('1:10:20')]).ok, true);
  const r = checkTiling([parseEngramRows('1:0:10'), parseEngramRows('1:11:20')]);
  assert.equal(r.problem?.kind, 'gap');
  assert.equal(r.problem?.row, 10);
});

test('property: tiled ranges pass the check, and moving one boundary by one row fails it', () => {
  const next = rng(3);
  for (let i = 0; i < 500; i++) {
    const rows = 2 + randomBelowPow2(next, 40);
    const world = randomInt(next, 2, 64);
    const tables = [{ layer: 1, rows }];
    const split = next() < 0.5 ? 'floor' : 'front';
    const specs = tileLayers(tables, world, split).map((rank) =>
      rank.map(({ layer, start, end }) => ({ layer, start, end })),
    );
    assert.equal(checkTiling(specs, tables).ok, true);
    const rank = randomInt(next, 0, world - 1);
    const r = specs[rank]![0]!;
    if (r.end === r.start) continue;
    const broken = specs.map((s, k) => (k === rank ? [{ ...r, end: r.end - 1 }] : s));
    const report = checkTiling(broken, tables);
    assert.equal(report.ok, false);
    assert.equal(report.problem!.kind, 'gap');
    assert.equal(report.problem!.row, r.end - 1);
  }
});
