// The Mia stack's packed shard, as its serving reader attaches it (docs/packed-format.md, "The
// Mia stack's packed shard"), checked byte by byte against spark's `--layout dense`; and the
// other way round, a directory laid out as the stack's own packer lays it out (written here by
// a writer of this test's own: no manifest, .partial, fsync, rename) read through every spark
// command. The expected bytes are spelled out here from the format's description, not taken
// from spark's encoder, so a drift on either side fails. One case of each here; every rank of
// worlds 2 to 4, every command on a stack-laid-out pack and each abort verify names are in
// test/long/mia-contract-scenarios.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { packEngram } from '../../../src/stacks/pack-engram.js';
import { packDirVerdict } from '../../../src/stacks/mia/reader-verdict.js';
import { openSnapshot } from '../../../src/engram/snapshot.js';
import { synthRow } from '../../../src/synth/synth-rows.js';
import { packageRoot } from '../../../src/addon/index.js';
import { bin } from '../../helpers/cli.js';
import { makeSnapshot } from '../../helpers/synth.js';
import { tempDir } from '../../helpers/tmp.js';
import { packRequest, rejects } from '../../helpers/pack-request.js';
import { headerBlock } from '../../../src/stacks/packed/pack-format.js';
import type { PackedManifest } from '../../../src/stacks/packed/packed-manifest.js';
import { packRanges } from '../../../src/pack/pack-ranges.js';
import { needs } from '../../helpers/external-tool.js';
import { checkDenseShards, floor, writeStackPack as writeStackPackOf } from '../../helpers/mia-contract.js';
import { python3 } from '../../helpers/python3.js';

const snap = makeSnapshot({ vocab: 3000 });
const tables = (await openSnapshot(snap.dir, { engramOnly: true })).engram;
const reader = join(packageRoot(), 'python', 'spark_engram_reader.py');

const writeStackPack = (dir: string, rank: number, world: number, range = floor): void =>
  writeStackPackOf(tables, dir, rank, world, range);

test('dense is the Mia shard: every rank of world 3, both layers, header, zeros, size, name and the rows at both range ends', async () => {
  await checkDenseShards(snap.dir, tables, 3);
});

test('the page layout never uses a name the Mia reader opens', async () => {
  const out = join(tempDir(), 'page');
  await packEngram(packRequest(snap.dir, tables, out, { rank: 1, world: 3, layout: 'page', chunkRows: 15 * 40 }));
  const v = await packDirVerdict(out);
  assert.equal(v.kind, 'spark-v2-page');
  assert.deepEqual(v.shards, []);
  const rows = bin([
    'rows',
    out,
    '--layer',
    String(tables[0].layer),
    '--ids',
    String(floor(tables[0].rows, 1, 3)[0]),
    '--json',
  ]);
  assert.equal(rows.code, 0, rows.stderr);
});

test("a pack laid out as the stack's packer lays it out reads the same through rows and the Python reader", async (ctx) => {
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

  const py = spawnSync(python3(), [reader, dir, '--layer', String(t.layer), '--ids', ids.join(',')], {
    encoding: 'utf8',
  });
  assert.equal(py.status, 0, py.stderr);
  assert.deepEqual(
    (JSON.parse(py.stdout) as { rows: { weight: string; scale: string }[] }).rows.map((r) => r.weight + r.scale),
    want.map((b) => b.toString('hex')),
  );
});

test('verify names a cut shard the stack aborts on in its own packs', async () => {
  const dir = join(tempDir(), 'stack');
  writeStackPack(dir, 0, 2);
  const name = `engram-l${tables[0].layer}-r0of2.bin`;
  const good = readFileSync(join(dir, name));
  writeFileSync(join(dir, name), good.subarray(0, good.length - 264));
  const v = bin(['verify', dir]);
  assert.equal(v.code, 1);
  assert.match(v.stderr, /truncated.*--layout dense --force/);
  assert.equal((await packDirVerdict(dir)).shards[0].miaReader, 'abort');
});

test('a version 1 pack is named as one the stack aborts on, with the command that re-packs it', async () => {
  // A pack as earlier versions of spark wrote it: the same rows and checksums, a JSON header
  // block in each .bin, manifest version 1.
  const dir = join(tempDir(), 'v1');
  await packEngram(packRequest(snap.dir, tables, dir, { rank: 1, world: 2 }));
  const m = JSON.parse(readFileSync(join(dir, 'spark-pack.json'), 'utf8')) as PackedManifest;
  m.version = 1;
  for (const e of m.layers) {
    const data = readFileSync(join(dir, e.file));
    headerBlock(m, e).copy(data, 0);
    writeFileSync(join(dir, e.file), data);
  }
  writeFileSync(join(dir, 'spark-pack.json'), JSON.stringify(m));
  const verdict = await packDirVerdict(dir);
  assert.equal(verdict.kind, 'spark-v1');
  assert.deepEqual(
    verdict.shards.map((x) => x.miaReader),
    ['abort', 'abort'],
  );
  assert.match(verdict.shards[0].why ?? '', /magic/);
  assert.match(verdict.fix ?? '', /spark pack SNAPSHOT --out .* --rank 1 --world 2 --layout dense --force/);
  const v = bin(['verify', dir, '--json']);
  assert.equal(v.code, 1);
  const report = JSON.parse(v.stdout);
  assert.deepEqual(
    report.layers.map((l: { ok: boolean }) => l.ok),
    [true, true],
    'every other check passes',
  );
  assert.match(report.problems.join('\n'), /format version 1: the Mia stack's reader aborts .*--layout dense --force/);
  // Still readable: its rows come back.
  const t = tables[0];
  const rows = bin(['rows', dir, '--layer', String(t.layer), '--ids', String(floor(t.rows, 1, 2)[0]), '--json']);
  assert.equal(rows.code, 0, rows.stderr);
  // And the re-pack the finding names replaces it.
  await packEngram(packRequest(snap.dir, tables, dir, { rank: 1, world: 2, force: true }));
  assert.equal((await packDirVerdict(dir)).kind, 'spark-v2-dense');
  assert.equal(bin(['verify', dir]).code, 0);
});

test('a --force pack leaves no wrong file under a shard name, even when it fails mid-way', async () => {
  const out = join(tempDir(), 'pack');
  await packEngram(packRequest(snap.dir, tables, out, { rank: 0, world: 2 }));
  // The heads split's rows under the same names: every header differs from the floor pack's.
  const config = (await openSnapshot(snap.dir)).config;
  const heads = packRanges(tables, config, 0, 2, 'heads');
  assert.ok(
    heads.every((r, i) => r.end !== floor(tables[i].rows, 0, 2)[1]),
    'the heads split differs from floor here',
  );
  const req = { rank: 0, world: 2, split: 'heads' as const, ranges: heads };
  await rejects(
    packEngram(packRequest(snap.dir, tables, out, { ...req, force: true, testing: { faultAfterChunks: 1 } })),
    'E_IO',
  );
  for (const [i, t] of tables.entries()) {
    let data: Buffer;
    try {
      data = readFileSync(join(out, `engram-l${t.layer}-r0of2.bin`));
    } catch {
      continue; // absent: the stack reads the checkpoint
    }
    assert.fail(
      `layer ${t.layer}: ${data.length} bytes stand under the shard name mid-pack (range ${heads[i].start}-${heads[i].end})`,
    );
  }
  // The same request again resumes and completes, with the heads split recorded.
  const s = await packEngram(packRequest(snap.dir, tables, out, req));
  assert.equal(s.noop, false);
  assert.equal(JSON.parse(readFileSync(join(out, 'spark-pack.json'), 'utf8')).split, 'heads');
  const verdict = await packDirVerdict(out, {
    ranges: new Map(heads.map((r) => [r.layer, [r.start, r.end] as const])),
  });
  assert.deepEqual(
    verdict.shards.map((x) => x.miaReader),
    ['attach', 'attach'],
  );
  assert.equal(verdict.split, 'heads');
  // Where the stack's SGLang lane expects floor, these shards abort it.
  assert.ok((await packDirVerdict(out)).shards.every((x) => x.miaReader === 'abort'));
  const r = bin(['engram-ranges', out, '--rank', '0', '--world', '2', '--split', 'floor']);
  assert.notEqual(r.code, 0, 'a heads pack never stands for a floor one');
});
