// A complete copy is held to the identity an interrupted pack's journal keys on: size, mtime,
// inode, ctime and header CRC-32 of every source shard. A shard rewritten in place with its size
// and mtime restored (as `rsync -t --inplace` leaves it) makes a re-run refuse the old copy
// (exit 2, --force replaces it) and a plain verify fail (exit 1), in both families of layout.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { packEngram, type PackRequest } from '../../src/stacks/pack-engram.js';
import { verifyPack } from '../../src/stacks/verify.js';
import { openSnapshot } from '../../src/engram/snapshot.js';
import { readLocalDir } from '../../src/stacks/local-dir.js';
import type { RecordedSourceFile } from '../../src/engram/manifest-fields.js';
import { crc32 } from '../../src/addon/pack.js';
import { makeSnapshot } from '../helpers/synth.js';
import { tempDir } from '../helpers/tmp.js';
import { packRequest, rejects } from '../helpers/pack-request.js';

async function ownSnapshot() {
  const snap = makeSnapshot({ dir: join(tempDir(), 'snap') });
  return { dir: snap.dir, tables: (await openSnapshot(snap.dir)).engram };
}

/** Overwrites 256 bytes at `at` in place, then puts the mtime back to the nanosecond: size and mtime say nothing changed. */
function rewriteInPlace(file: string, at: number, byte: number): void {
  const before = statSync(file, { bigint: true });
  const fd = openSync(file, 'r+');
  writeSync(fd, Buffer.alloc(256, byte), 0, 256, at);
  fsyncSync(fd);
  closeSync(fd);
  const ns = before.mtimeNs;
  execFileSync('touch', ['-m', '-d', `@${ns / 1_000_000_000n}.${String(ns % 1_000_000_000n).padStart(9, '0')}`, file]);
  const after = statSync(file, { bigint: true });
  assert.equal(after.mtimeNs, before.mtimeNs);
  assert.equal(after.size, before.size);
}

async function recordedFiles(out: string): Promise<RecordedSourceFile[]> {
  const local = await readLocalDir(out);
  if (local.kind === 'sparse') return local.manifest.spark!.source.files;
  if (local.kind === 'packed') return local.manifest.source.files;
  throw new Error('no copy');
}

for (const layout of ['sparse', 'dense'] as const) {
  test(`${layout}: the manifest records each source shard's inode, ctime and header CRC-32, as the journal keys on them`, async () => {
    const snap = await ownSnapshot();
    const out = join(tempDir(), 'copy');
    await packEngram(packRequest(snap.dir, snap.tables, out, { layout, rank: 1 }));
    const files = await recordedFiles(out);
    assert.ok(files.length > 0);
    for (const f of files) {
      const path = join(snap.dir, f.name);
      const st = statSync(path);
      const bytes = readFileSync(path);
      const headerBytes = 8 + Number(bytes.readBigUInt64LE(0));
      assert.deepEqual(f, {
        name: f.name,
        bytes: st.size,
        mtimeMs: st.mtimeMs,
        ino: st.ino,
        ctimeMs: st.ctimeMs,
        headerBytes,
        headerCrc32: crc32(bytes.subarray(0, headerBytes)).toString(16).padStart(8, '0'),
      });
    }
  });

  test(`${layout}: bytes rewritten in place (size and mtime kept): the re-run refuses the copy, plain verify fails, --force refreshes it`, async () => {
    const snap = await ownSnapshot();
    const out = join(tempDir(), 'copy');
    const req: PackRequest = packRequest(snap.dir, snap.tables, out, { layout, rank: 0, world: 1 });
    await packEngram(req);
    const ok = await verifyPack({ dir: out, rows: 'none', threads: 2 });
    assert.equal(ok.ok, true, ok.problems.join('\n'));
    assert.deepEqual(ok.sourceIdentity, { snapshot: snap.dir, status: 'unchanged' });

    const t = snap.tables[0];
    rewriteInPlace(t.weight.file, t.weight.fileOffset + 7 * 256, 0x42);
    const e = await rejects(packEngram(req), 'E_PACK_EXISTS');
    assert.equal(e.exitCode, 2);
    assert.match(
      e.message,
      new RegExp(
        `the snapshot file ${t.weight.fileName} changed since it was packed: written in place \\(ctime .+ -> .+\\).*--force`,
      ),
    );

    const stale = await verifyPack({ dir: out, rows: 'none', threads: 2 });
    assert.equal(stale.ok, false);
    assert.deepEqual(stale.sourceIdentity, { snapshot: snap.dir, status: 'changed' });
    assert.equal(stale.problems.length, 1, stale.problems.join('\n'));
    assert.match(
      stale.problems[0],
      new RegExp(
        `^the snapshot ${snap.dir} changed since this copy was made \\(${t.weight.fileName}: written in place \\(ctime .*\\)\\): the copy may hold old rows; re-pack with spark pack --force`,
      ),
    );
    // --source --full compares every row instead, and finds the one that changed.
    const rows = await verifyPack({
      dir: out,
      rows: 'full',
      threads: 2,
      source: { snapshotDir: snap.dir, tables: snap.tables },
    });
    assert.equal(rows.sourceIdentity, undefined);
    assert.ok(
      rows.problems.some((p) => p.includes(`row 7 differs from the source`)),
      rows.problems.join('\n'),
    );

    const s = await packEngram({ ...req, force: true });
    assert.equal(s.noop, false);
    const row = layout === 'sparse' ? t.weight.fileOffset + 7 * 256 : 4096 + 7 * 264;
    const file = layout === 'sparse' ? t.weight.fileName : s.layers.find((l) => l.layer === t.layer)!.file;
    assert.ok(
      readFileSync(join(out, file))
        .subarray(row, row + 256)
        .equals(Buffer.alloc(256, 0x42)),
      'the refreshed copy holds the new bytes',
    );
    const fresh = await verifyPack({ dir: out, rows: 'none', threads: 2 });
    assert.equal(fresh.ok, true, fresh.problems.join('\n'));
    assert.equal((await packEngram(req)).noop, true);
  });
}

test('plain verify where the snapshot path does not exist: the identity is not checked, and the report says so', async () => {
  const snap = await ownSnapshot();
  const out = join(tempDir(), 'copy');
  await packEngram(packRequest(snap.dir, snap.tables, out, { layout: 'sparse', rank: 1 }));
  renameSync(snap.dir, `${snap.dir}-elsewhere`);
  const r = await verifyPack({ dir: out, rows: 'none', threads: 2 });
  assert.equal(r.ok, true, r.problems.join('\n'));
  assert.deepEqual(r.sourceIdentity, { snapshot: snap.dir, status: 'not found' });
  assert.ok(
    r.checked.includes(`source identity not checked: ${snap.dir} is not a directory here`),
    r.checked.join('; '),
  );
  // A shard gone from a snapshot that is there is a change.
  renameSync(`${snap.dir}-elsewhere`, snap.dir);
  renameSync(snap.tables[0].weight.file, `${snap.tables[0].weight.file}.moved`);
  const gone = await verifyPack({ dir: out, rows: 'none', threads: 2 });
  assert.equal(gone.ok, false);
  assert.match(gone.problems[0], new RegExp(`\\(${snap.tables[0].weight.fileName}: it is gone from the snapshot\\)`));
});

test('a manifest written before the identity was recorded (no ino, ctime, header CRC): held to size and mtime, as before', async () => {
  const snap = await ownSnapshot();
  const out = join(tempDir(), 'copy');
  const req = packRequest(snap.dir, snap.tables, out, { layout: 'dense', rank: 1 });
  await packEngram(req);
  const path = join(out, 'spark-pack.json');
  const doc = JSON.parse(readFileSync(path, 'utf8')) as { source: { files: Record<string, unknown>[] } };
  doc.source.files = doc.source.files.map(({ name, bytes, mtimeMs }) => ({ name, bytes, mtimeMs }));
  writeFileSync(path, JSON.stringify(doc));
  assert.equal((await packEngram(req)).noop, true);
  const r = await verifyPack({ dir: out, rows: 'none', threads: 2 });
  assert.equal(r.ok, true, r.problems.join('\n'));
  assert.equal(r.sourceIdentity?.status, 'unchanged');
});
