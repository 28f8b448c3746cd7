import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { engramSubTableSizes, prefixOffsets } from '../../src/engram/primes.js';
import { fillRows, synthRow } from '../../src/synth/synth-rows.js';
import { probeWindows } from '../../src/synth/synth.js';
import { cli } from '../helpers/cli.js';
import { makeSnapshot } from '../helpers/synth.js';
import { tempDir } from '../helpers/tmp.js';

function readAt(path: string, offset: number, length: number): Buffer {
  const fd = openSync(path, 'r');
  try {
    const b = Buffer.alloc(length);
    assert.equal(readSync(fd, b, 0, length, offset), length);
    return b;
  } finally {
    closeSync(fd);
  }
}

function header(path: string): {
  dataStart: number;
  json: Record<string, { data_offsets: number[]; shape: number[] }>;
} {
  const n = Number(readAt(path, 0, 8).readBigUInt64LE(0));
  return { dataStart: 8 + n, json: JSON.parse(readAt(path, 8, n).toString('utf8')) };
}

test('the prime rule reproduces the real DeepSeek-V4.1-Flash row counts', () => {
  const sizes = engramSubTableSizes({ layerIds: [1, 14], maxNgram: 4, heads: 8, headDim: 256, vocabSize: 16_000_000 });
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  assert.equal(sizes.get(1)!.length, 24);
  assert.equal(sum(sizes.get(1)!), 384_006_168);
  assert.equal(sum(sizes.get(14)!), 384_016_682);
  assert.equal(sizes.get(1)![0], 16_000_057);
  // The vLLM heads split for 4 ranks (6 sub-tables each) lands on these offsets.
  const off = prefixOffsets(sizes.get(1)!);
  assert.deepEqual([off[6], off[12], off[18]], [96_000_564, 192_001_740, 288_003_654]);
});

test('synth writes the documented rows at unaligned offsets, with real naming and shard placement', async () => {
  const snap = makeSnapshot({ seed: 7 });
  assert.deepEqual(
    snap.files.map((f) => f.name),
    ['model-00001-of-00003.safetensors', 'model-00002-of-00003.safetensors', 'model-00003-of-00003.safetensors'],
  );
  const sizes = engramSubTableSizes({ layerIds: [1, 14], maxNgram: 4, heads: 8, headDim: 256, vocabSize: 1000 });
  const rows1 = sizes.get(1)!.reduce((a, b) => a + b, 0);
  assert.deepEqual(snap.layers[0], { layer: 1, rows: rows1, dim: 256 });
  assert.notEqual(snap.layers[0].rows, snap.layers[1].rows);

  const shard = join(snap.dir, 'model-00002-of-00003.safetensors');
  const { dataStart, json } = header(shard);
  assert.equal(dataStart % 4096, 664, 'data must not be page aligned');
  const w = json['layers.1.engram.embed.weight'];
  const s = json['layers.1.engram.embed.scale'];
  assert.deepEqual(w.shape, [rows1, 256]);
  assert.deepEqual(s.shape, [rows1, 8]);
  assert.equal(s.data_offsets[0], w.data_offsets[1], 'scale directly after weight');
  for (const row of [0, 1, 4097, rows1 - 1]) {
    const expected = synthRow(1, row, 256, 7);
    assert.deepEqual(readAt(shard, dataStart + w.data_offsets[0] + row * 256, 256), expected.subarray(0, 256));
    assert.deepEqual(readAt(shard, dataStart + s.data_offsets[0] + row * 8, 8), expected.subarray(256));
  }
  assert.equal(statSync(shard).size, dataStart + json['layers.1.engram.k_weight'].data_offsets[1]);

  const index = JSON.parse(readFileSync(join(snap.dir, 'model.safetensors.index.json'), 'utf8'));
  assert.equal(index.weight_map['layers.14.engram.embed.weight'], 'model-00003-of-00003.safetensors');
  const config = JSON.parse(readFileSync(join(snap.dir, 'config.json'), 'utf8'));
  assert.deepEqual(config.text_config.engram_num_embeddings, [rows1, snap.layers[1].rows]);
});

test('row bytes differ across rows, layers and seeds and avoid F8_E4M3 NaN patterns', () => {
  const a = synthRow(1, 5, 256);
  assert.notDeepEqual(a, synthRow(1, 6, 256));
  assert.notDeepEqual(a, synthRow(14, 5, 256));
  assert.notDeepEqual(a, synthRow(1, 5, 256, 1));
  assert.notDeepEqual(synthRow(1, 5, 256), synthRow(1, 5 + 2 ** 32, 256));
  const weight = Buffer.alloc(1000 * 256);
  const scale = Buffer.alloc(1000 * 8);
  fillRows(1, 0, 1000, 256, weight, scale);
  assert.ok(weight.every((b) => (b & 0x7f) !== 0x7f));
  assert.ok(scale.every((b) => b >= 120 && b < 136));
  assert.deepEqual(Buffer.concat([weight.subarray(256 * 999), scale.subarray(8 * 999)]), synthRow(1, 999, 256));
});

test('sparse probe windows cover table ends, rank boundaries and head offsets', () => {
  const sizes = [101, 103, 107];
  const windows = probeWindows(311, sizes);
  const covered = (r: number) => windows.some(([a, b]) => r >= a && r < b);
  for (const r of [0, 310, 155, 103, 207, 101, 204]) assert.ok(covered(r), `row ${r}`);
  for (let i = 1; i < windows.length; i++) assert.ok(windows[i][0] > windows[i - 1][1], 'merged and sorted');
});

test('spark synth --json reports files and layers; bad flags are usage errors', async () => {
  const dir = join(tempDir(), 's');
  const r = await cli(['synth', dir, '--layers', '3', '--shards', '2', '--vocab', '50', '--json']);
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.equal(out.files.length, 2);
  assert.equal(out.layers[0].layer, 3);
  const bad = await cli(['synth', dir, '--dim', '100']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--dim must be a positive multiple of 32/);
  const bad2 = await cli(['synth', dir, '--vocab', 'x']);
  assert.equal(bad2.code, 2);
  assert.match(bad2.stderr, /--vocab must be a whole number/);
});

test('spark synth refuses a non-empty directory (an existing snapshot stays as it was)', async () => {
  const dir = join(tempDir(), 's');
  assert.equal((await cli(['synth', dir, '--layers', '3', '--shards', '2', '--vocab', '50'])).code, 0);
  const before = readdirSync(dir)
    .sort()
    .map((n) => [n, readFileSync(join(dir, n)).toString('hex')]);
  const again = await cli(['synth', dir, '--layers', '3', '--shards', '2', '--vocab', '50', '--seed', '7', '--json']);
  assert.equal(again.code, 2, again.stderr);
  const err = JSON.parse(again.stderr).error;
  assert.equal(err.code, 'E_USAGE');
  assert.equal(
    err.message,
    `${dir} is not empty (4 entries, e.g. config.json); synth writes a new snapshot: remove the directory or pick another`,
  );
  assert.deepEqual(
    readdirSync(dir)
      .sort()
      .map((n) => [n, readFileSync(join(dir, n)).toString('hex')]),
    before,
  );
  // An empty directory is fine; a file is not a directory.
  const empty = tempDir();
  assert.equal((await cli(['synth', empty, '--layers', '3', '--shards', '2', '--vocab', '50'])).code, 0);
  const file = join(empty, 'config.json');
  const onFile = await cli(['synth', file]);
  assert.equal(onFile.code, 2);
  assert.match(onFile.stderr, /config\.json exists and is not a directory/);
});
