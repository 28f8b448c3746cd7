import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bin, cli } from '../helpers/cli.js';
import { makeFullSizeSnapshot, makeSnapshot } from '../helpers/synth.js';
import { tempDir } from '../helpers/tmp.js';

const full = makeFullSizeSnapshot();

const bounds = (values: string[], layer: number): number[] => {
  const ranges = values.map((v) =>
    v
      .split(',')
      .find((e) => e.startsWith(`${layer}:`))!
      .split(':')
      .slice(1)
      .map(Number),
  );
  return [ranges[0]![0]!, ...ranges.map((r) => r[1]!)];
};

test('full-size DSV4.1-shaped snapshot, 4 ranks: floor and heads boundaries of both layers', async () => {
  const floor = await cli(['engram-ranges', full.dir, '--world', '4', '--all']);
  assert.equal(floor.code, 0, floor.stderr);
  const f = floor.stdout.trim().split('\n');
  assert.deepEqual(bounds(f, 1), [0, 96001542, 192003084, 288004626, 384006168]);
  assert.deepEqual(bounds(f, 14), [0, 96004170, 192008341, 288012511, 384016682]);
  const heads = await cli(['engram-ranges', full.dir, '--world', '4', '--all', '--split', 'heads']);
  assert.equal(heads.code, 0, heads.stderr);
  const h = heads.stdout.trim().split('\n');
  assert.deepEqual(bounds(h, 1), [0, 96000564, 192001740, 288003654, 384006168]);
  assert.deepEqual(bounds(h, 14), [0, 96003054, 192007016, 288011564, 384016682]);
  const one = await cli(['engram-ranges', '--rank', '2', '--format', 'json'], {
    SPARK_ENGRAM_DIR: full.dir,
    SPARK_WORLD_SIZE: '4',
  });
  assert.deepEqual(JSON.parse(one.stdout).layers, [
    { layer: 1, rows: 384006168, start: 192003084, end: 288004626 },
    { layer: 14, rows: 384016682, start: 192008341, end: 288012511 },
  ]);
});

test('--check against the snapshot: the correct four exit 0, a full range on every rank exits 1', async () => {
  const values = (await cli(['engram-ranges', full.dir, '--world', '4', '--all'])).stdout.trim().split('\n');
  const ok = bin(['engram-ranges', full.dir, '--check', ...values]);
  assert.equal(ok.code, 0, ok.stderr);
  const fullRange = bin(['engram-ranges', full.dir, '--check', ...Array(4).fill('1:0:384006168,14:0:384016682')]);
  assert.equal(fullRange.code, 1);
  assert.match(
    fullRange.stdout,
    /^layer 1: row 0 is owned by rank 0 \[0, 384006168\) and rank 1 \[0, 384006168\); a full range on every rank double-counts/,
  );
  assert.equal(
    fullRange.stderr,
    "spark engram-ranges: the ranges do not tile layers 1, 14 (each layer's problem is on stdout)\n",
  );
  const truncated = bin([
    'engram-ranges',
    full.dir,
    '--check',
    ...values.slice(0, 3),
    '1:288004626:384006168,14:288012511:384016681',
  ]);
  assert.equal(truncated.code, 1);
  assert.match(
    truncated.stdout,
    /^layer 1: ok \(384006168 rows\)\nlayer 14: rows \[384016681, 384016682\) belong to no rank/,
  );
});

test('only the index, config.json and the Engram shards are read: the other 46 may be missing', async () => {
  const snap = makeFullSizeSnapshot();
  for (const f of snap.files.slice(0, 46)) rmSync(join(snap.dir, f.name));
  const r = await cli(['engram-ranges', snap.dir, '--rank', '3', '--world', '4']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, '1:288004626:384006168,14:288012511:384016682\n');
  const inspect = await cli(['inspect', snap.dir]);
  assert.notEqual(inspect.code, 0, 'a full read does notice');
});

test('a small synthetic snapshot with other layers, and errors from the snapshot pass through', async () => {
  const snap = makeSnapshot({ layers: [2, 5, 9], vocab: 500, heads: 4, maxNgram: 3 });
  const rows = snap.layers.map((l) => l.rows);
  const r = await cli(['engram-ranges', snap.dir, '--world', '3', '--all', '--json', '--split', 'heads']);
  assert.equal(r.code, 0, r.stderr);
  const doc = JSON.parse(r.stdout);
  assert.deepEqual(
    doc.ranks[2].layers.map((l: { layer: number; end: number }) => [l.layer, l.end]),
    [
      [2, rows[0]],
      [5, rows[1]],
      [9, rows[2]],
    ],
  );
  assert.equal(doc.ranks.length, 3);
  const missing = await cli(['engram-ranges', join(tempDir(), 'nothing'), '--rank', '0', '--world', '2']);
  assert.equal(missing.code, 2);
  const config = JSON.parse(readFileSync(join(snap.dir, 'config.json'), 'utf8'));
  config.text_config.engram_vocab_size = 600;
  writeFileSync(join(snap.dir, 'config.json'), JSON.stringify(config));
  const wrong = await cli(['engram-ranges', snap.dir, '--world', '3', '--rank', '0', '--split', 'heads']);
  assert.equal(wrong.code, 2);
  assert.match(
    wrong.stderr,
    /^spark: layer 2: the 8 sub-table sizes sum to \d+ rows but the tensor has \d+ \(config\.json does not describe this checkpoint/,
  );
  assert.equal(
    (await cli(['engram-ranges', snap.dir, '--world', '3', '--rank', '0'])).code,
    0,
    'floor needs no config',
  );
});
