import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  copyFileSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  truncateSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join, relative } from 'node:path';
import { openSnapshot } from '../../src/engram/snapshot.js';
import { cli } from '../helpers/cli.js';
import { engramPair, writeTensors } from '../helpers/safetensors.js';
import { makeFullSizeSnapshot, makeSnapshot } from '../helpers/synth.js';
import { tempDir } from '../helpers/tmp.js';

function writeIndex(dir: string, weightMap: Record<string, string>): void {
  writeFileSync(
    join(dir, 'model.safetensors.index.json'),
    JSON.stringify({ metadata: { total_size: 1 }, weight_map: weightMap }),
  );
}

test('openSnapshot finds both Engram tables of a synthetic snapshot with exact offsets', async () => {
  const snap = makeSnapshot();
  const s = await openSnapshot(snap.dir);
  assert.equal(s.kind, 'index');
  assert.equal(s.shards.length, 3);
  assert.deepEqual(
    s.engram.map((e) => [e.layer, e.rows, e.dim, e.rowBytes]),
    snap.layers.map((l) => [l.layer, l.rows, 256, 264]),
  );
  const l1 = s.engram[0];
  assert.equal(l1.weight.fileName, 'model-00002-of-00003.safetensors');
  assert.equal(l1.weight.fileOffset, 664);
  assert.equal(l1.scale.fileOffset, 664 + l1.rows * 256);
  assert.equal(s.config?.engram?.vocabSize, 1000);
});

test('inspect --json on a full-size 48-shard DSV4.1-shaped snapshot: exact rows and offsets past 2^36', async () => {
  const snap = makeFullSizeSnapshot();
  const r = await cli(['inspect', snap.dir, '--json']);
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.equal(out.shards.length, 48);
  assert.equal(out.bytes, snap.bytes);
  assert.ok(out.bytes > 2 ** 37);
  const [l1, l14] = out.engram;
  assert.deepEqual([l1.layer, l1.rows, l1.dim, l1.rowBytes], [1, 384_006_168, 256, 264]);
  assert.deepEqual([l14.layer, l14.rows], [14, 384_016_682]);
  assert.deepEqual(l1.weight, {
    tensor: 'layers.1.engram.embed.weight',
    file: 'model-00047-of-00048.safetensors',
    dtype: 'F8_E4M3',
    shape: [384_006_168, 256],
    // Header padding puts the data 664 bytes past a page boundary (here 4096 + 664).
    fileOffset: 4760,
  });
  assert.equal(l1.scale.fileOffset, 4760 + 384_006_168 * 256);
  assert.equal(l1.scale.fileOffset, 98_305_583_768);
  assert.deepEqual(l14.scale.shape, [384_016_682, 8]);
  assert.equal(l14.scale.fileOffset, l14.weight.fileOffset + 384_016_682 * 256);
  assert.equal(l14.weight.fileOffset % 4096, 664);
});

test('a missing shard is exit 2 naming it; engramOnly does not need it', async () => {
  const snap = makeSnapshot();
  rmSync(join(snap.dir, 'model-00001-of-00003.safetensors'));
  const r = await cli(['inspect', snap.dir]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /model-00001-of-00003\.safetensors: shard is missing/);
  const s = await openSnapshot(snap.dir, { engramOnly: true });
  assert.equal(s.shards.length, 2);
  assert.equal(s.engram.length, 2);
});

test('a truncated shard is exit 2 naming it', async () => {
  const snap = makeSnapshot();
  const shard = join(snap.dir, 'model-00003-of-00003.safetensors');
  truncateSync(shard, statSync(shard).size - 100);
  const r = await cli(['inspect', snap.dir, '--json']);
  assert.equal(r.code, 2);
  const err = JSON.parse(r.stderr).error;
  assert.equal(err.code, 'E_SHARD_TRUNCATED');
  assert.match(err.message, /model-00003-of-00003\.safetensors/);
});

test('shard names that leave the snapshot are refused', async () => {
  for (const bad of [
    '../outside.safetensors',
    '/etc/passwd',
    'https://example.com/a.safetensors',
    'a/../../b.safetensors',
  ]) {
    const dir = tempDir();
    writeIndex(dir, { 'x.weight': bad });
    await assert.rejects(openSnapshot(dir), (e: { code: string; message: string }) => {
      assert.equal(e.code, 'E_INDEX_PATH');
      assert.ok(e.message.includes(bad));
      return true;
    });
  }
});

test('shards linked outside the snapshot are read (huggingface-cli --local-dir trees, NFS links)', async () => {
  // Shard files live elsewhere (another mount); the snapshot holds links to them, one absolute
  // and one relative, plus a linked subdirectory, as local-dir downloads and NFS setups do.
  const outside = tempDir();
  const source = makeSnapshot();
  const dir = tempDir();
  mkdirSync(join(outside, 'blobs'));
  const names = [
    'model-00001-of-00003.safetensors',
    'model-00002-of-00003.safetensors',
    'model-00003-of-00003.safetensors',
  ];
  for (const n of names) renameSync(join(source.dir, n), join(outside, 'blobs', n));
  symlinkSync(join(outside, 'blobs', names[0]!), join(dir, names[0]!));
  symlinkSync(relative(dir, join(outside, 'blobs', names[1]!)), join(dir, names[1]!));
  symlinkSync(join(outside, 'blobs'), join(dir, 'linked'));
  const index = JSON.parse(readFileSync(join(source.dir, 'model.safetensors.index.json'), 'utf8')) as {
    weight_map: Record<string, string>;
  };
  for (const [t, f] of Object.entries(index.weight_map)) if (f === names[2]) index.weight_map[t] = `linked/${names[2]}`;
  writeFileSync(join(dir, 'model.safetensors.index.json'), JSON.stringify(index));
  copyFileSync(join(source.dir, 'config.json'), join(dir, 'config.json'));

  const s = await openSnapshot(dir);
  assert.equal(s.shards.length, 3);
  assert.deepEqual(
    s.engram.map((e) => [e.layer, e.rows]),
    source.layers.map((l) => [l.layer, l.rows]),
  );
  const r = await cli(['rows', dir, '--layer', String(source.layers[0]!.layer), '--ids', '0,5', '--json']);
  assert.equal(r.code, 0, r.stderr);
  const direct = await cli([
    'rows',
    join(outside, 'blobs', names[1]!),
    '--layer',
    String(source.layers[0]!.layer),
    '--ids',
    '0,5',
    '--json',
  ]);
  assert.equal(direct.code, 0, direct.stderr);
  assert.equal(r.stdout, direct.stdout);
  assert.equal(JSON.parse(r.stdout).rows.length, 2);

  // The names still may not leave the directory, linked or not.
  index.weight_map['layers.1.engram.embed.weight'] = `linked/../${names[0]}`;
  writeFileSync(join(dir, 'model.safetensors.index.json'), JSON.stringify(index));
  await assert.rejects(openSnapshot(dir), { code: 'E_INDEX_PATH' });
  // A dangling link is a missing shard (exit 2), not an I/O error.
  rmSync(join(outside, 'blobs', names[0]!));
  index.weight_map['layers.1.engram.embed.weight'] = names[1]!;
  writeFileSync(join(dir, 'model.safetensors.index.json'), JSON.stringify(index));
  const gone = await cli(['inspect', dir, '--json']);
  assert.equal(gone.code, 2);
  assert.equal(JSON.parse(gone.stderr).error.code, 'E_SHARD_MISSING');
});

test('index and shard disagreements are named', async () => {
  const dir = tempDir();
  writeTensors(join(dir, 'a.safetensors'), engramPair(1, 4));
  writeIndex(dir, {
    'layers.1.engram.embed.weight': 'a.safetensors',
    'layers.1.engram.embed.scale': 'a.safetensors',
    'layers.2.attn.weight': 'a.safetensors',
  });
  await assert.rejects(openSnapshot(dir), (e: { code: string; message: string }) => {
    assert.equal(e.code, 'E_INDEX_TENSOR');
    assert.match(e.message, /layers\.2\.attn\.weight/);
    return true;
  });
  writeFileSync(join(dir, 'model.safetensors.index.json'), '{"weight_map": [1]}');
  await assert.rejects(openSnapshot(dir), { code: 'E_INDEX_JSON' });
});

test('Engram tables are checked: pairing, dtype, scale shape, config row counts', async () => {
  const cases: [string, Parameters<typeof writeTensors>[1], string][] = [
    ['no scale', [engramPair(1, 4)[0]], 'E_ENGRAM_NOT_FOUND'],
    ['bad dtype', [{ ...engramPair(1, 4)[0], dtype: 'BF16' }, engramPair(1, 4)[1]], 'E_ENGRAM_DTYPE'],
    ['scale rows', [engramPair(1, 4)[0], engramPair(1, 5)[1]], 'E_ENGRAM_SHAPE'],
    [
      'dim',
      [{ name: 'layers.1.engram.embed.weight', dtype: 'F8_E4M3', shape: [4, 40] }, engramPair(1, 4)[1]],
      'E_ENGRAM_SHAPE',
    ],
  ];
  for (const [what, tensors, code] of cases) {
    const dir = tempDir();
    writeTensors(join(dir, 'model.safetensors'), tensors);
    await assert.rejects(openSnapshot(dir), { code }, what);
  }
  const dir = tempDir();
  writeTensors(
    join(dir, 'model.safetensors'),
    engramPair(3, 4).map((t) => ({ ...t, name: `model.${t.name}` })),
  );
  writeFileSync(
    join(dir, 'config.json'),
    JSON.stringify({
      text_config: {
        engram_layer_ids: [3],
        engram_num_embeddings: [5],
        engram_max_ngram_size: 4,
        engram_n_heads: 8,
        engram_head_dim: 64,
        engram_vocab_size: 1,
      },
    }),
  );
  await assert.rejects(openSnapshot(dir), (e: { code: string; message: string }) => {
    assert.equal(e.code, 'E_ENGRAM_ROWS');
    assert.match(e.message, /4 rows but .*config\.json says engram_num_embeddings\[0\] = 5/);
    return true;
  });
});

test('a single model.safetensors, one file, and custom patterns', async () => {
  const dir = tempDir();
  writeTensors(join(dir, 'model.safetensors'), [
    { name: 'blk.7.hash_embed.w', dtype: 'F8_E4M3', shape: [10, 64] },
    { name: 'blk.7.hash_embed.s', dtype: 'F8_E8M0', shape: [10, 2] },
  ]);
  const single = await openSnapshot(dir);
  assert.equal(single.kind, 'single');
  assert.equal(single.engram.length, 0);
  const r = await cli([
    'inspect',
    join(dir, 'model.safetensors'),
    '--json',
    '--weight-pattern',
    '^blk\\.(\\d+)\\.hash_embed\\.w$',
    '--scale-pattern',
    '^blk\\.(\\d+)\\.hash_embed\\.s$',
  ]);
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.equal(out.kind, 'file');
  assert.deepEqual([out.engram[0].layer, out.engram[0].rows, out.engram[0].rowBytes], [7, 10, 66]);
  const bad = await cli(['inspect', dir, '--weight-pattern', 'no-group']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /exactly one capture group/);
  const none = await cli(['inspect', join(tempDir(), 'nope')]);
  assert.equal(none.code, 2);
  const empty = tempDir();
  mkdirSync(join(empty, 'sub'));
  const notSnap = await cli(['inspect', empty]);
  assert.equal(notSnap.code, 2);
  assert.match(notSnap.stderr, /not a snapshot/);
});
