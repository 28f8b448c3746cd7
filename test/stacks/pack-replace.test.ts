// Replacing a complete copy (--force): the old copy, manifest and files, stays usable until the
// new one is whole. The new files are finished as .partial beside the old ones and renamed over
// them at the end, so the free-space check counts the old files as staying (it says before any
// work that the disk cannot hold both), and a disk that fills anyway leaves the old copy intact.
// Sparse: the new copy's shards have the old one's names; dense: a new chunk size, same names.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packEngram, type PackRequest } from '../../src/stacks/pack-engram.js';
import { verifyPack } from '../../src/stacks/verify.js';
import { openSnapshot } from '../../src/engram/snapshot.js';
import { makeSnapshot } from '../helpers/synth.js';
import { mountTmpfs } from '../helpers/tmpfs.js';
import { needsRoot } from '../helpers/external-tool.js';
import { packRequest, rejects } from '../helpers/pack-request.js';

const snap = makeSnapshot();
const tables = (await openSnapshot(snap.dir)).engram;

/** The old copy and the request that replaces it under the same file names. */
function requests(layout: 'sparse' | 'dense', out: string): { old: PackRequest; next: PackRequest } {
  if (layout === 'sparse') {
    return {
      old: packRequest(snap.dir, tables, out, { layout, rank: 0, world: 2, chunkRows: 1000 }),
      next: packRequest(snap.dir, tables, out, { layout, rank: 1, world: 2, chunkRows: 1000, force: true }),
    };
  }
  return {
    old: packRequest(snap.dir, tables, out, { layout, rank: 0, world: 2, chunkRows: 512 }),
    next: packRequest(snap.dir, tables, out, { layout, rank: 0, world: 2, chunkRows: 1024, force: true }),
  };
}

function snapshotOf(dir: string): Map<string, Buffer> {
  return new Map(readdirSync(dir).map((n) => [n, readFileSync(join(dir, n))]));
}

async function assertOldCopyUsable(out: string, old: Map<string, Buffer>, rank: number): Promise<void> {
  for (const [name, bytes] of old)
    assert.ok(readFileSync(join(out, name)).equals(bytes), `${name} is the old copy's, byte for byte`);
  const v = await verifyPack({ dir: out, rows: 'full', threads: 2, source: { snapshotDir: snap.dir, tables } });
  assert.equal(v.ok, true, v.problems.join('\n'));
  assert.equal(v.rank, rank);
}

for (const layout of ['sparse', 'dense'] as const) {
  test(`${layout}: --force on a disk that cannot hold the old copy and the new one is refused before any work, naming both`, async (t) => {
    if (!needsRoot(t, 'mounts a small tmpfs to fill')) return;
    const fs = mountTmpfs(11 << 20);
    try {
      const out = join(fs.dir, 'copy');
      const { old, next } = requests(layout, out);
      await packEngram(old);
      const before = snapshotOf(out);
      const e = await rejects(packEngram(next), 'E_NO_SPACE');
      assert.equal(e.exitCode, 3);
      assert.match(
        e.message,
        new RegExp(
          `^not enough free space in ${out} to build the new pack beside the one it replaces, which stays usable until the new one is complete: ` +
            'the pack needs [\\d.]+ MiB more \\(its 2 files take [\\d.]+ MiB\\), [\\d.]+ MiB \\(\\d+ bytes\\) are free; ' +
            'remove the old pack first \\(its manifest and files\\) and re-run, free space, or use another --out',
        ),
      );
      assert.deepEqual([...snapshotOf(out).keys()].sort(), [...before.keys()].sort(), 'a refused run changes nothing');
      await assertOldCopyUsable(out, before, 0);
    } finally {
      fs.unmount();
    }
  });

  test(`${layout}: --force that fills the disk mid-copy leaves the old copy usable; with room, the same command resumes and replaces it`, async (t) => {
    if (!needsRoot(t, 'mounts a small tmpfs to fill')) return;
    const fs = mountTmpfs(11 << 20);
    try {
      const out = join(fs.dir, 'copy');
      const { old, next } = requests(layout, out);
      await packEngram(old);
      const before = snapshotOf(out);
      // A write error (a dying disk) first, then the disk full: the old copy survives both.
      await rejects(packEngram({ ...next, checkSpace: false, testing: { faultAfterChunks: 2 } }), 'E_IO');
      await assertOldCopyUsable(out, before, 0);
      const e = await rejects(packEngram({ ...next, checkSpace: false }), 'E_NO_SPACE');
      assert.match(e.message, /chunks already written are kept: free space and re-run the same command to resume/);
      assert.ok(
        readdirSync(out).some((n) => n.endsWith('.partial')),
        'the new copy so far is beside the old one',
      );
      await assertOldCopyUsable(out, before, 0);
      // Without --force the old copy is still a complete pack that differs.
      const refused = await rejects(packEngram({ ...next, force: false }), 'E_PACK_EXISTS');
      assert.match(refused.message, /a replacement that was interrupted resumes with the same --force command/);

      fs.resize(32 << 20);
      const s = await packEngram(next);
      assert.equal(s.noop, false);
      assert.ok(
        s.files.some((f) => f.chunksKept > 0),
        'the chunks written before the disk filled were kept',
      );
      const v = await verifyPack({ dir: out, rows: 'full', threads: 2, source: { snapshotDir: snap.dir, tables } });
      assert.equal(v.ok, true, v.problems.join('\n'));
      const left = readdirSync(out).filter((n) => /\.(partial|journal|replaced|tmp)$/.test(n));
      assert.deepEqual(left, []);
      assert.equal((await packEngram({ ...next, force: false })).noop, true);
    } finally {
      fs.unmount();
    }
  });
}
