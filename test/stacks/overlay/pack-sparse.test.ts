import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  closeSync,
  copyFileSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { packEngram, type PackRequest } from '../../../src/stacks/pack-engram.js';
import { packRanges } from '../../../src/pack/pack-ranges.js';
import { INDEX_FILE, openSnapshot } from '../../../src/engram/snapshot.js';
import { parseSparseManifest } from '../../../src/stacks/overlay/sparse-manifest.js';
import { readLocalDir } from '../../../src/stacks/local-dir.js';
import { crc32 } from '../../../src/addon/pack.js';
import { cli } from '../../helpers/cli.js';
import { engramPair, writeTensors } from '../../helpers/safetensors.js';
import { makeSnapshot } from '../../helpers/synth.js';
import { tempDir } from '../../helpers/tmp.js';
import { mountTmpfs } from '../../helpers/tmpfs.js';
import { needsRoot } from '../../helpers/external-tool.js';
import { packRequest, rejects } from '../../helpers/pack-request.js';

const snap = makeSnapshot();
const opened = await openSnapshot(snap.dir);
const tables = opened.engram;

function request(out: string, over: Partial<PackRequest> = {}): PackRequest {
  return packRequest(snap.dir, tables, out, { layout: 'sparse', rank: 1, chunkRows: 1000, ...over });
}

function manifestOf(out: string) {
  return parseSparseManifest(readFileSync(join(out, 'engram-local.json'), 'utf8'));
}

test("the manifest: the overlay keys, then spark's key with shards, index and per-chunk CRC-32 of weight then scale bytes", async () => {
  const out = join(tempDir(), 'copy');
  const s = await packEngram(request(out));
  const doc = JSON.parse(readFileSync(join(out, 'engram-local.json'), 'utf8')) as Record<string, unknown>;
  assert.deepEqual(Object.keys(doc), ['source', 'layers', 'quant', 'created', 'note', 'spark']);
  const m = manifestOf(out);
  const spark = m.spark!;
  assert.deepEqual([spark.rank, spark.world, spark.split], [1, 2, 'floor']);
  assert.deepEqual(spark.index, {
    name: INDEX_FILE,
    bytes: statSync(join(snap.dir, INDEX_FILE)).size,
    crc32: crc32(readFileSync(join(snap.dir, INDEX_FILE)))
      .toString(16)
      .padStart(8, '0'),
  });
  for (const t of tables) {
    const r = m.layers.find((l) => l.layer === t.layer)!;
    assert.deepEqual([r.start, r.end], [Math.floor(t.rows / 2), t.rows]);
    const e = spark.tables.find((x) => x.layer === t.layer)!;
    assert.deepEqual(
      [e.shard, e.weightOffset, e.scaleOffset, e.rows, e.dim],
      [t.weight.fileName, t.weight.fileOffset, t.scale.fileOffset, t.rows, t.dim],
    );
    // Every chunk's checksum, recomputed from the snapshot's bytes.
    const src = readFileSync(t.weight.file);
    e.checksum.values.forEach((v, k) => {
      const a = r.start + k * 1000;
      const b = Math.min(r.end, a + 1000);
      const w = src.subarray(t.weight.fileOffset + a * 256, t.weight.fileOffset + b * 256);
      const sc = src.subarray(t.scale.fileOffset + a * 8, t.scale.fileOffset + b * 8);
      assert.equal(v, crc32(sc, crc32(w)).toString(16).padStart(8, '0'), `layer ${t.layer} chunk ${k}`);
    });
    const shard = spark.shards.find((x) => x.name === t.weight.fileName)!;
    const headerBytes = 8 + Number(src.readBigUInt64LE(0));
    assert.deepEqual(shard, {
      name: t.weight.fileName,
      bytes: src.length,
      headerBytes,
      headerCrc32: crc32(src.subarray(0, headerBytes)).toString(16).padStart(8, '0'),
    });
    // Allocated: the header and the rows, rounded to blocks; not the apparent size.
    const st = statSync(join(out, t.weight.fileName));
    const rowsBytes = (r.end - r.start) * 264;
    assert.equal(st.size, src.length);
    assert.ok(
      st.blocks * 512 >= rowsBytes && st.blocks * 512 <= rowsBytes + headerBytes + 4 * 4096,
      `${st.blocks * 512} allocated for ${rowsBytes}`,
    );
  }
  assert.equal(
    s.bytes,
    s.layers.reduce((a, l) => a + l.bytes, 0) + spark.shards.reduce((a, x) => a + x.headerBytes, 0) + spark.index.bytes,
  );
  assert.equal(
    s.apparentBytes,
    spark.shards.reduce((a, x) => a + x.bytes, 0),
  );
  assert.deepEqual((await readLocalDir(out)).kind, 'sparse');
  const again = await packEngram(request(out));
  assert.equal(again.noop, true);
  assert.equal(again.bytesWritten, 0);
});

test('--force onto another rank, world or layout removes the replaced files once the new manifest has landed', async () => {
  const out = join(tempDir(), 'copy');
  await packEngram(request(out, { layout: 'dense', rank: 0, world: 2 }));
  const dense = readdirSync(out).sort();
  assert.deepEqual(dense, ['engram-l1-r0of2.bin', 'engram-l14-r0of2.bin', 'spark-pack.json']);
  const e = await rejects(packEngram(request(out)), 'E_PACK_EXISTS');
  assert.match(e.message, /it is a dense pack.*--force/);
  assert.deepEqual(readdirSync(out).sort(), dense, 'a refused run changes nothing');
  // dense -> sparse: the dense files go, after engram-local.json is written.
  const s = await packEngram(request(out, { force: true }));
  assert.deepEqual(s.removed.sort(), ['engram-l1-r0of2.bin', 'engram-l14-r0of2.bin', 'spark-pack.json.replaced']);
  assert.deepEqual(
    readdirSync(out).sort(),
    ['engram-local.json', INDEX_FILE, 'model-00002-of-00003.safetensors', 'model-00003-of-00003.safetensors'].sort(),
  );
  // sparse rank 1 of 2 -> rank 2 of 3: the same shard names, rewritten; nothing left over.
  await rejects(packEngram(request(out, { rank: 2, world: 3 })), 'E_PACK_EXISTS');
  const r = await packEngram(request(out, { rank: 2, world: 3, force: true }));
  assert.deepEqual(r.removed, ['engram-local.json.replaced']);
  assert.deepEqual(manifestOf(out).spark?.rank, 2);
  // sparse -> page: the shards and the index go.
  const p = await packEngram(request(out, { layout: 'page', rank: 0, world: 3, chunkRows: 15 * 70, force: true }));
  assert.deepEqual(
    p.removed.sort(),
    ['engram-local.json.replaced', 'model-00002-of-00003.safetensors', 'model-00003-of-00003.safetensors'].sort(),
  );
  assert.deepEqual(readdirSync(out).sort(), [
    'spark-pack.json',
    'spark-page-l1-r0of3.rows',
    'spark-page-l14-r0of3.rows',
  ]);
});

test('a replacement killed before its manifest: the old pack is still whole; the same --force run finishes it and clears the replaced files', async () => {
  const out = join(tempDir(), 'copy');
  await packEngram(request(out, { layout: 'dense', rank: 1, world: 2 }));
  await rejects(packEngram(request(out, { force: true, testing: { faultAfterChunks: 3 } })), 'E_IO');
  assert.ok(existsSync(join(out, 'spark-pack.json')), 'mid-replacement the old pack is still a pack');
  assert.ok(!existsSync(join(out, 'spark-pack.json.replaced')));
  await rejects(packEngram(request(out)), 'E_PACK_EXISTS');
  const s = await packEngram(request(out, { force: true }));
  assert.ok(s.files.some((f) => f.chunksKept > 0));
  assert.deepEqual(s.removed.sort(), ['engram-l1-r1of2.bin', 'engram-l14-r1of2.bin', 'spark-pack.json.replaced']);
  assert.deepEqual(
    readdirSync(out).sort(),
    ['engram-local.json', INDEX_FILE, 'model-00002-of-00003.safetensors', 'model-00003-of-00003.safetensors'].sort(),
  );
});

test('resume: the journal is keyed to inode, ctime and header, so bytes changed in place (rsync -t --inplace) are copied again', async () => {
  const dir = join(tempDir(), 'snap');
  const own = makeSnapshot({ dir });
  const t = (await openSnapshot(own.dir)).engram;
  const out = join(tempDir(), 'copy');
  const req = {
    ...request(out, { rank: 0, world: 1, chunkRows: 500 }),
    snapshotDir: own.dir,
    index: join(own.dir, INDEX_FILE),
    tables: t,
    ranges: packRanges(t, undefined, 0, 1, 'floor'),
  };
  await rejects(packEngram({ ...req, testing: { faultAfterChunks: 20 } }), 'E_IO');
  // Rewrite one row of the first layer in place, keeping size and mtime.
  const file = t[0].weight.file;
  const before = statSync(file, { bigint: true });
  const fd = openSync(file, 'r+');
  writeSync(fd, Buffer.alloc(256, 0x42), 0, 256, t[0].weight.fileOffset + 7 * 256);
  fsyncSync(fd);
  closeSync(fd);
  const ns = before.mtimeNs;
  execFileSync('touch', ['-m', '-d', `@${ns / 1_000_000_000n}.${String(ns % 1_000_000_000n).padStart(9, '0')}`, file]);
  assert.equal(statSync(file, { bigint: true }).mtimeNs, before.mtimeNs);
  assert.equal(statSync(file).size, Number(before.size));
  const s = await packEngram(req);
  const first = s.files.find((f) => f.file === t[0].weight.fileName)!;
  assert.equal(first.journalDiscarded, true);
  assert.equal(first.chunksKept, 0);
  const copy = readFileSync(join(out, t[0].weight.fileName));
  assert.ok(
    copy.subarray(t[0].weight.fileOffset + 7 * 256, t[0].weight.fileOffset + 8 * 256).equals(Buffer.alloc(256, 0x42)),
  );
});

test('--out: empty, the snapshot, inside it, or a directory its links point into are refused (exit 2); the snapshot inside --out is fine', async () => {
  for (const out of ['', snap.dir, join(snap.dir, 'sub', 'copy')]) {
    const e = await rejects(packEngram(request(out)), 'E_USAGE');
    assert.equal(e.exitCode, 2);
  }
  const link = join(tempDir(), 'link');
  symlinkSync(snap.dir, link);
  const e = await rejects(packEngram(request(join(link, 'x'))), 'E_USAGE');
  assert.match(e.message, /inside the snapshot .* \(really .*\/snap\/x\)/);
  // A Hugging Face cache: snapshots/<rev>/x links to ../../blobs/<name>. --out = blobs is refused.
  const cache = tempDir();
  const store = join(cache, 'blobs');
  const linked = join(cache, 'snapshots', 'abc');
  mkdirSync(store);
  mkdirSync(linked, { recursive: true });
  for (const f of readdirSync(snap.dir)) {
    if (f.endsWith('.safetensors')) {
      writeFileSync(join(store, f), readFileSync(join(snap.dir, f)));
      symlinkSync(join('..', '..', 'blobs', f), join(linked, f));
    } else {
      writeFileSync(join(linked, f), readFileSync(join(snap.dir, f)));
    }
  }
  const lt = (await openSnapshot(linked)).engram;
  const lreq = { ...request(store), snapshotDir: linked, index: join(linked, INDEX_FILE), tables: lt };
  const held = await rejects(packEngram(lreq), 'E_USAGE');
  assert.match(held.message, /holds .*blobs\/model-0000[23]-of-00003\.safetensors, which the snapshot's .* links to/);
  assert.equal(readdirSync(store).length, 3, 'nothing was written there');
  // The snapshot inside --out: nothing is written into it.
  const outer = tempDir();
  const inner = makeSnapshot({ dir: join(outer, 'snapshot') });
  const it = (await openSnapshot(inner.dir)).engram;
  await packEngram({
    ...request(outer),
    snapshotDir: inner.dir,
    index: join(inner.dir, INDEX_FILE),
    tables: it,
    ranges: packRanges(it, undefined, 1, 2, 'floor'),
  });
  assert.equal((await readLocalDir(outer)).kind, 'sparse');
  const cl = await cli(['pack', snap.dir, '--out', join(snap.dir, 'x'), '--rank', '0', '--world', '2']);
  assert.equal(cl.code, 2);
  assert.match(cl.stderr, /inside the snapshot/);
});

test('a filesystem that cannot keep holes is refused before anything is copied (exit 3)', async () => {
  const out = join(tempDir(), 'copy');
  const e = await rejects(packEngram(request(out, { testing: { fillHoleProbe: true } })), 'E_NO_HOLES');
  assert.equal(e.exitCode, 3);
  assert.match(
    e.message,
    /does not keep holes \(a 16\.0 MiB file with 4 KiB written took 16\.\d+ MiB\): the sparse copy would fill .* instead of .*; pack onto ext4, xfs or btrfs, or use --layout dense/,
  );
  assert.deepEqual(readdirSync(out), []);
  // dense and page do not need holes.
  await packEngram(request(out, { layout: 'dense', testing: { fillHoleProbe: true } }));
  // A refused replacement leaves the pack there as it was.
  await rejects(packEngram(request(out, { force: true, testing: { fillHoleProbe: true } })), 'E_NO_HOLES');
  assert.deepEqual(readdirSync(out).sort(), ['engram-l1-r1of2.bin', 'engram-l14-r1of2.bin', 'spark-pack.json']);
});

test('the free-space check counts the bytes a sparse copy allocates, not its apparent size', async (t) => {
  if (!needsRoot(t, 'mounts a small tmpfs to fill')) return;
  // The copy's shards are ~19 MiB apparent each, but rank 1 of 4 allocates ~3.3 MiB.
  const fs = mountTmpfs(5 << 20);
  try {
    const s = await packEngram(request(join(fs.dir, 'copy'), { rank: 1, world: 4 }));
    assert.ok(s.apparentBytes! > 5 << 20 && s.bytes < 4 << 20, `${s.apparentBytes} apparent, ${s.bytes} held`);
    const e = await rejects(packEngram(request(join(fs.dir, 'other'), { rank: 2, world: 4 })), 'E_NO_SPACE');
    assert.match(e.message, /the pack needs [\d.]+ MiB more \(its 2 files take [\d.]+ MiB\)/);
  } finally {
    fs.unmount();
  }
});

test('a layer whose weight and scale are in different shards is refused for the sparse layout (exit 2, naming it)', async () => {
  const dir = join(tempDir(), 'split-snap');
  mkdirSync(dir);
  const [w14, s14] = engramPair(14, 300);
  writeTensors(join(dir, 'a.safetensors'), [...engramPair(1, 200), w14]);
  writeTensors(join(dir, 'b.safetensors'), [s14]);
  const map: Record<string, string> = {
    'layers.1.engram.embed.weight': 'a.safetensors',
    'layers.1.engram.embed.scale': 'a.safetensors',
  };
  map[w14.name] = 'a.safetensors';
  map[s14.name] = 'b.safetensors';
  writeSync(openSync(join(dir, INDEX_FILE), 'w'), JSON.stringify({ metadata: {}, weight_map: map }));
  const r = await cli(['pack', dir, '--out', join(tempDir(), 'c'), '--rank', '0', '--world', '2']);
  assert.equal(r.code, 2);
  assert.match(
    r.stderr,
    /layer 14: its weight is in a\.safetensors and its scale in b\.safetensors; .* use --layout dense/,
  );
  const d = await cli(['pack', dir, '--out', join(tempDir(), 'd'), '--rank', '0', '--world', '2', '--layout', 'dense']);
  assert.equal(d.code, 0, d.stderr);
  // A single-file snapshot has no index to copy.
  const one = join(tempDir(), 'one');
  mkdirSync(one);
  writeTensors(join(one, 'model.safetensors'), engramPair(1, 100));
  const o = await cli(['pack', one, '--out', join(tempDir(), 'e'), '--rank', '0', '--world', '2']);
  assert.equal(o.code, 2);
  assert.match(o.stderr, /has no model\.safetensors\.index\.json: the sparse layout copies it/);
});

test('--rate-limit caps the copy rate; the source pages are dropped behind the copy unless --no-drop-cache', async () => {
  const resident = (file: string): number =>
    Number(execFileSync('fincore', ['--bytes', '--noheadings', '--output', 'RES', file], { encoding: 'utf8' }).trim());
  const own = makeSnapshot({ dir: join(tempDir(), 'snap'), vocab: 3000 });
  const t = (await openSnapshot(own.dir)).engram;
  const base = {
    ...request(''),
    snapshotDir: own.dir,
    index: join(own.dir, INDEX_FILE),
    tables: t,
    ranges: packRanges(t, undefined, 0, 1, 'floor'),
    rank: 0,
    world: 1,
  };
  const shard = t[1].weight.file;
  // A copy the pack never reads, cached at the same moment: under memory pressure the kernel may
  // evict pages of both, but only a drop takes the shard's while the control's stay.
  const control = join(tempDir(), 'control');
  copyFileSync(shard, control);
  const cache = (): void => {
    for (const f of [shard, control]) {
      const fd = openSync(f, 'r');
      fsyncSync(fd);
      closeSync(fd);
      readFileSync(f); // every page cached
    }
  };
  cache();
  const full = resident(shard);
  assert.ok(full >= statSync(shard).size - 4096);
  const kept = await packEngram({ ...base, out: join(tempDir(), 'k'), dropSourceCache: false });
  // The pack read the shard after the control was cached, so eviction takes the control's first.
  assert.ok(
    resident(shard) >= Math.min(full, resident(control)) - 131072,
    `without dropping, the pages stay: ${resident(shard)} of ${full} bytes, the control ${resident(control)}`,
  );
  const bytes = kept.layers.reduce((a, l) => a + l.bytes, 0);
  cache();
  const limited = await packEngram({ ...base, out: join(tempDir(), 'd'), rateLimit: 40e6 });
  // The rows of the shard's table are gone from the cache (its header and small tensors may stay,
  // and so may the kernel's multi-page folio at each end of the rows, up to the 128 KiB
  // readahead window, when the file was read into the cache in large folios).
  assert.ok(resident(shard) < full - t[1].rows * 264 + 2 * 131072, `${resident(shard)} of ${full} bytes still cached`);
  // At 40 MB/s, the copy takes at least bytes / rate less one chunk's worth of time.
  assert.ok(limited.seconds >= (bytes - 1000 * 264) / 40e6, `${bytes} bytes in ${limited.seconds} s`);
});
