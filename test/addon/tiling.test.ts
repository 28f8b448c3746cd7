import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { RowRange } from '../../src/domain/split-rule.js';
import { tileHeads, tileRows } from '../../src/addon/tiling.js';
import { randomBelowPow2, randomInt, rng } from '../helpers/random.js';

const bounds = (ranges: RowRange[]): number[] => [...ranges.map((r) => r.start), ranges[ranges.length - 1]!.end];

function assertTiles(ranges: RowRange[], rows: number, what: string): void {
  let cursor = 0;
  for (const r of ranges) {
    assert.equal(r.start, cursor, `${what}: range starts where the previous ended`);
    assert.ok(r.end >= r.start, `${what}: non-negative size`);
    cursor = r.end;
  }
  assert.equal(cursor, rows, `${what}: the last range ends at N`);
}

test('floor gives the SGLang boundaries of the real DSV4.1 tables', () => {
  assert.deepEqual(bounds(tileRows(384006168, 4, 'floor')), [0, 96001542, 192003084, 288004626, 384006168]);
  assert.deepEqual(bounds(tileRows(384016682, 4, 'floor')), [0, 96004170, 192008341, 288012511, 384016682]);
});

test('front gives the remainder to the first ranks', () => {
  assert.deepEqual(bounds(tileRows(384016682, 4, 'front')), [0, 96004171, 192008342, 288012512, 384016682]);
  assert.deepEqual(bounds(tileRows(3, 5, 'front')), [0, 1, 2, 3, 3, 3]);
});

test('heads refuses sub-tables that do not sum to the rows, with the reason (E_ENGRAM_ROWS, exit 2)', () => {
  assert.throws(
    () => tileHeads([5, 7], 13, 2),
    (e: Error & { code?: string; exitCode?: number }) => {
      assert.equal(e.code, 'E_ENGRAM_ROWS');
      assert.equal(e.exitCode, 2);
      assert.match(e.message, /sum to 12 rows but the tensor has 13/);
      return true;
    },
  );
});

test('bad arguments are usage errors from the binding', () => {
  assert.throws(() => tileRows(10, 0, 'floor'), { code: 'E_USAGE' });
  assert.throws(() => tileRows(-1, 2, 'floor'), { code: 'E_USAGE' });
  assert.throws(() => tileRows(1.5, 2, 'front'), { code: 'E_USAGE' });
  assert.throws(() => tileRows(10, 2, 'heads' as 'floor'), { code: 'E_USAGE' });
});

test('property: floor and front tile [0, N) with sizes within one of each other (N < 2^40, W 1-64)', () => {
  const next = rng(1);
  for (let i = 0; i < 3000; i++) {
    const rows = randomBelowPow2(next, 40);
    const world = randomInt(next, 1, 64);
    for (const split of ['floor', 'front'] as const) {
      const ranges = tileRows(rows, world, split);
      assert.equal(ranges.length, world);
      assertTiles(ranges, rows, `${split} N=${rows} W=${world}`);
      const sizes = ranges.map((r) => r.end - r.start);
      assert.ok(Math.max(...sizes) - Math.min(...sizes) <= 1, `${split} N=${rows} W=${world}: sizes ${sizes}`);
    }
    const r = randomInt(next, 0, world - 1);
    const exact = Number((BigInt(rows) * BigInt(r)) / BigInt(world));
    assert.equal(tileRows(rows, world, 'floor')[r]!.start, exact, `floor N=${rows} W=${world} r=${r}`);
  }
});

test('property: heads tiles [0, N) and every boundary is a sub-table offset', () => {
  const next = rng(2);
  for (let i = 0; i < 2000; i++) {
    const count = randomInt(next, 1, 48);
    const sizes = Array.from({ length: count }, () => randomBelowPow2(next, 34));
    const offsets = [0];
    for (const s of sizes) offsets.push(offsets[offsets.length - 1]! + s);
    const rows = offsets[offsets.length - 1]!;
    const world = randomInt(next, 1, 64);
    const ranges = tileHeads(sizes, rows, world);
    assert.equal(ranges.length, world);
    assertTiles(ranges, rows, `heads H=${count} W=${world}`);
    const perRank = Math.ceil(count / world);
    ranges.forEach((r, rank) => {
      assert.ok(offsets.includes(r.start), `rank ${rank} starts on a head offset`);
      assert.equal(r.start, offsets[Math.min(rank * perRank, count)]);
    });
  }
});
