import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { packEngram, type PackRequest } from '../../src/stacks/pack-engram.js';
import { verifyPack } from '../../src/stacks/verify.js';
import { synthRow } from '../../src/synth/synth-rows.js';
import { crc32 } from '../../src/addon/pack.js';
import { SparkError } from '../../src/errors/errors.js';
import { makeSnapshot } from '../helpers/synth.js';
import { tempDir } from '../helpers/tmp.js';
import { openSnapshot } from '../../src/engram/snapshot.js';
import { encodeMiaHeader } from '../../src/stacks/mia/mia-shard.js';
import { readManifest, readPackedRow } from '../helpers/packed.js';
import { mountTmpfs } from '../helpers/tmpfs.js';
import { needsRoot } from '../helpers/external-tool.js';
import { packRequest, rejects } from '../helpers/pack-request.js';

const snap = makeSnapshot();
const tables = (await openSnapshot(snap.dir)).engram;

function request(out: string, over: Partial<PackRequest> = {}): PackRequest {
  return packRequest(snap.dir, tables, out, over);
}

for (const layout of ['dense', 'page'] as const) {
  test(`${layout}: every packed row equals the source row, and verify --full passes`, async () => {
    const out = join(tempDir(), 'pack');
    const chunkRows = layout === 'page' ? 15 * 40 : 512;
    const s = await packEngram(request(out, { layout, rank: 1, world: 2, chunkRows }));
    assert.equal(s.noop, false);
    const m = readManifest(out);
    assert.equal(m.format, 'spark-engram-packed');
    assert.deepEqual([m.rank, m.world, m.split], [1, 2, 'floor']);
    assert.deepEqual(
      m.source.files.map((f) => f.name),
      snap.files.slice(-2).map((f) => f.name),
    );
    for (const [i, e] of m.layers.entries()) {
      const t = tables[i];
      assert.deepEqual([e.layer, e.rows, e.start, e.end], [t.layer, t.rows, Math.floor(t.rows / 2), t.rows]);
      assert.equal(e.layout, layout);
      assert.equal(e.rowBytes, 264);
      const data = readFileSync(join(out, e.file));
      if (layout === 'dense') {
        // The Mia stack's shard header (its contract suite: mia-contract.test.ts).
        assert.ok(
          data
            .subarray(0, 4096)
            .equals(encodeMiaHeader({ layer: e.layer, lo: e.start, hi: e.end, rows: e.rows, rowBytes: 264 })),
        );
        assert.equal(e.file, `engram-l${e.layer}-r1of2.bin`);
      } else {
        const header = data.subarray(0, 4096).toString('utf8');
        assert.equal(JSON.parse(header.trimEnd()).layer, e.layer);
        assert.match(header, / {100}$/);
        assert.equal(e.file, `spark-page-l${e.layer}-r1of2.rows`);
      }
      for (let id = e.start; id < e.end; id++) {
        if (!readPackedRow(out, e, id).equals(synthRow(e.layer, id, 256)))
          assert.fail(`layer ${e.layer} row ${id} differs`);
      }
      // Checksums are zlib's CRC-32 of each chunk as stored.
      const span = e.layout === 'page' ? (chunkRows / 15) * 4096 : chunkRows * 264;
      assert.equal(
        e.checksum.values[0],
        crc32(data.subarray(4096, 4096 + span))
          .toString(16)
          .padStart(8, '0'),
      );
      if (layout === 'page') assert.equal(data.length, 4096 + Math.ceil((e.end - e.start) / 15) * 4096);
    }
    assert.deepEqual(
      readdirSync(out).sort(),
      m.layers
        .map((e) => e.file)
        .concat('spark-pack.json')
        .sort(),
    );
    const v = await verifyPack({ dir: out, source: { snapshotDir: snap.dir, tables }, rows: 'full', threads: 2 });
    assert.deepEqual(v.problems, []);
    assert.equal(
      v.layers.reduce((a, l) => a + (l.rows?.compared ?? 0), 0),
      m.layers.reduce((a, e) => a + e.end - e.start, 0),
    );
  });
}

test('a second run on a complete directory is a no-op; a different request is refused unless --force', async () => {
  const out = join(tempDir(), 'pack');
  await packEngram(request(out));
  const before = readFileSync(join(out, 'spark-pack.json'));
  const again = await packEngram(request(out));
  assert.equal(again.noop, true);
  assert.equal(again.bytesWritten, 0);
  assert.ok(before.equals(readFileSync(join(out, 'spark-pack.json'))));
  const e = await rejects(packEngram(request(out, { layout: 'page', chunkRows: 600 })), 'E_PACK_EXISTS');
  assert.match(e.message, /dense layout.*--force/);
  const forced = await packEngram(request(out, { layout: 'page', chunkRows: 600, force: true }));
  assert.equal(forced.noop, false);
  assert.equal(readManifest(out).layers[0].layout, 'page');
});

test('verify names the chunk of one flipped byte, the truncation, and a damaged header', async () => {
  const out = join(tempDir(), 'pack');
  await packEngram(request(out));
  const e = readManifest(out).layers[1];
  const path = join(out, e.file);
  const good = readFileSync(path);
  const flipped = Buffer.from(good);
  const at = 4096 + 3 * 512 * 264 + 1000; // chunk 3
  flipped[at] ^= 0x01;
  writeFileSync(path, flipped);
  let v = await verifyPack({ dir: out, rows: 'none', threads: 2 });
  assert.equal(v.ok, false);
  assert.equal(v.layers[1].chunks.first?.index, 3);
  assert.match(
    v.problems[0],
    new RegExp(
      `^${e.file}: layer ${e.layer}: chunk 3 \\(bytes \\d+-\\d+, rows ${e.start + 1536}-${e.start + 2047}\\) fails its checksum$`,
    ),
  );
  v = await verifyPack({ dir: out, source: { snapshotDir: snap.dir, tables }, rows: 'full', threads: 2 });
  assert.equal(v.layers[1].rows?.first, e.start + 1536 + Math.floor(1000 / 264));
  writeFileSync(path, good.subarray(0, good.length - 10));
  v = await verifyPack({ dir: out, rows: 'none', threads: 2 });
  assert.match(v.problems.join('\n'), /truncated/);
  assert.equal(v.layers[1].chunks.bad, 1);
  const header = Buffer.from(good);
  header[4000] = 0x41;
  writeFileSync(path, header);
  v = await verifyPack({ dir: out, rows: 'none', threads: 2 });
  assert.deepEqual(v.problems, [
    `${e.file}: layer ${e.layer}: the header block (bytes 0-4095) is not the one the Mia stack's reader expects for this range`,
  ]);
});

test('a directory without a manifest is refused by verify, naming the interrupted pack', async () => {
  const out = join(tempDir(), 'pack');
  await packEngram(request(out, { layout: 'page', chunkRows: 600 }));
  writeFileSync(join(out, 'x.rows.partial'), '');
  const { rmSync } = await import('node:fs');
  rmSync(join(out, 'spark-pack.json'));
  const e = await rejects(verifyPack({ dir: out, rows: 'none', threads: 1 }), 'E_PACK_INCOMPLETE');
  assert.equal(e.exitCode, 1);
  assert.match(e.message, /interrupted pack/);
});

test('a manifest that does not match its split or its files is refused', async () => {
  const out = join(tempDir(), 'pack');
  await packEngram(request(out));
  const m = readManifest(out);
  m.layers[0].end -= 1;
  writeFileSync(join(out, 'spark-pack.json'), JSON.stringify(m));
  const e = await rejects(verifyPack({ dir: out, rows: 'none', threads: 1 }), 'E_PACK_MISMATCH');
  assert.equal(e.exitCode, 1);
  assert.match(e.message, /not rank 0 of 2 under the floor split/);
});

test('a snapshot that changes during the pack is an error, and no manifest is written', async () => {
  const out = join(tempDir(), 'pack');
  const victim = tables[0].weight.file;
  let touched = false;
  const e = await rejects(
    packEngram(
      request(out, {
        onProgress: () => {
          if (touched) return;
          touched = true;
          utimesSync(victim, new Date(), new Date(Date.now() + 5000));
        },
      }),
    ),
    'E_SOURCE_CHANGED',
  );
  assert.match(e.message, /changed while it was being packed/);
  assert.equal(existsSync(join(out, 'spark-pack.json')), false);
});

test('full disk: refused up front with the numbers; mid-pack ENOSPC is exit 3 and a later run resumes', async (t) => {
  if (!needsRoot(t, 'mounts a small tmpfs to fill')) return;
  const fs = mountTmpfs(8 << 20);
  try {
    const out = join(fs.dir, 'pack');
    // Both layers of rank 0 of 1: about 12.6 MiB, more than the 8 MiB disk.
    const whole = request(out, { rank: 0, world: 1 });
    const e = await rejects(packEngram(whole), 'E_NO_SPACE');
    assert.equal(e.exitCode, 3);
    assert.match(
      e.message,
      /needs 14\.\d MiB more \(its 2 files take 14\.\d MiB\), 8\.0 MiB \(8388608 bytes\) are free/,
    );
    assert.match(e.message, /are free/);
    // Without the check the first layer fits and the second does not.
    const e2 = await rejects(packEngram({ ...whole, checkSpace: false }), 'E_NO_SPACE');
    assert.match(
      e2.message,
      /engram-l14-r0of1\.bin\.partial: reserving \d+ bytes failed: No space left on device; chunks already written are kept/,
    );
    assert.equal(existsSync(join(out, 'spark-pack.json')), false);
    assert.ok(statSafe(join(fs.dir, 'pack')).length > 0);
    fs.resize(32 << 20);
    const s = await packEngram(whole);
    assert.equal(s.resumed, true);
    assert.equal(s.files[0].chunksKept, s.files[0].chunks);
    const v = await verifyPack({ dir: out, source: { snapshotDir: snap.dir, tables }, rows: 'full', threads: 2 });
    assert.deepEqual(v.problems, []);
  } finally {
    fs.unmount();
  }
});

function statSafe(dir: string): string[] {
  return readdirSync(dir);
}

test('a flipped byte anywhere in a data file (header, rows, page padding) fails verify, naming its chunk', async () => {
  const out = join(tempDir(), 'pack');
  await packEngram(request(out, { layout: 'page', chunkRows: 15 * 50 }));
  const m = readManifest(out);
  for (const e of m.layers) {
    const path = join(out, e.file);
    const good = readFileSync(path);
    const span = 50 * 4096;
    for (let trial = 0; trial < 12; trial++) {
      // Spread over the file: the header block, then anywhere in the data, padding included.
      const at =
        trial === 0 ? Math.floor(Math.random() * 4096) : 4096 + Math.floor(Math.random() * (good.length - 4096));
      const bad = Buffer.from(good);
      bad[at] ^= 1 << Math.floor(Math.random() * 8);
      writeFileSync(path, bad);
      const v = await verifyPack({ dir: out, rows: 'none', threads: 2 });
      assert.equal(v.ok, false, `byte ${at} of ${e.file}`);
      if (at < 4096) {
        assert.match(v.problems[0], /the header block \(bytes 0-4095\) is not the one the manifest implies/);
      } else {
        const k = Math.floor((at - 4096) / span);
        assert.deepEqual(v.problems, [
          `${e.file}: layer ${e.layer}: chunk ${k} (bytes ${4096 + k * span}-${Math.min(good.length, 4096 + (k + 1) * span) - 1}, ` +
            `rows ${e.start + k * 750}-${Math.min(e.end, e.start + (k + 1) * 750) - 1}) fails its checksum`,
        ]);
      }
    }
    writeFileSync(path, good);
  }
  assert.equal((await verifyPack({ dir: out, rows: 'none', threads: 2 })).ok, true);
});

test('two packs into the same directory at once: one runs, the other is refused (E_PACK_BUSY, exit 3)', async () => {
  const out = join(tempDir(), 'pack');
  const results = await Promise.allSettled([packEngram(request(out)), packEngram(request(out))]);
  const refused = results.filter((r) => r.status === 'rejected');
  assert.equal(refused.length, 1);
  const err = (refused[0] as PromiseRejectedResult).reason as SparkError;
  assert.ok(err instanceof SparkError);
  assert.equal(err.code, 'E_PACK_BUSY');
  assert.equal(err.exitCode, 3);
  assert.match(err.message, /another spark pack is writing this directory/);
  assert.equal((await verifyPack({ dir: out, rows: 'none', threads: 2 })).ok, true);
});
