// spark pack replaces or removes only what it can prove is its own (src/stacks/pack-owner.ts):
// a complete shard another tool wrote under a name the pack writes (the Mia stack's packer's,
// of another snapshot or of this one), that tool's NAME.partial, a file a user put there, in
// every layout, is refused without --force and left byte for byte; --force replaces it and
// names it in `removed`. spark's own leftovers (a killed pack's .partial, journal and
// finished files) are taken over without asking.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { packEngram, type PackRequest } from '../../src/stacks/pack-engram.js';
import { INDEX_FILE, openSnapshot } from '../../src/engram/snapshot.js';
import { bin } from '../helpers/cli.js';
import { writeMiaPack } from '../helpers/mia-pack.js';
import { packRequest, rejects } from '../helpers/pack-request.js';
import { makeSnapshot } from '../helpers/synth.js';
import { tempDir } from '../helpers/tmp.js';

const ours = makeSnapshot({ seed: 2 });
const other = makeSnapshot({ seed: 1 });
const tables = (await openSnapshot(ours.dir)).engram;

function request(out: string, over: Partial<PackRequest> = {}): PackRequest {
  return packRequest(ours.dir, tables, out, { rank: 0, world: 2, ...over });
}

/** Every file in `dir` with its bytes, for "left as it was". */
function contents(dir: string): Map<string, Buffer> {
  return new Map(
    readdirSync(dir)
      .sort()
      .map((n) => [n, readFileSync(join(dir, n))]),
  );
}

const FOREIGN =
  /holds what spark did not write under the names this pack writes: (.*) \(no spark manifest or journal proves/;

/** The names a refusal lists. */
function listed(message: string): string[] {
  const m = FOREIGN.exec(message);
  assert.ok(m, message);
  return m[1]!.split(', ');
}

test("pack --layout dense onto the Mia stack's own pack (another snapshot's, or this one's) refuses without --force and leaves it byte for byte; --force replaces it and lists it", async () => {
  for (const [what, source] of [
    ['another snapshot', other.dir],
    ['this snapshot', ours.dir],
  ] as const) {
    const out = join(tempDir(), 'engram');
    await writeMiaPack(out, source, { rank: 0, world: 2 });
    const v = bin(['verify', out, '--source', source, '--full']);
    assert.equal(v.code, 0, `${what}: the stack's pack is whole: ${v.stdout}${v.stderr}`);
    const before = contents(out);
    const argv = ['pack', ours.dir, '--out', out, '--rank', '0', '--world', '2', '--layout', 'dense', '--json'];
    const r = bin(argv);
    assert.equal(r.code, 2, `${what}: ${r.stdout}${r.stderr}`);
    assert.equal(r.stdout, '');
    assert.deepEqual(listed(JSON.parse(r.stderr).error.message), ['engram-l1-r0of2.bin', 'engram-l14-r0of2.bin']);
    assert.match(JSON.parse(r.stderr).error.message, /use another --out, or --force to replace them/);
    assert.equal(JSON.parse(r.stderr).error.code, 'E_PACK_EXISTS');
    assert.deepEqual(contents(out), before, `${what}: a refused run changes nothing`);
    const f = bin([...argv, '--force']);
    assert.equal(f.code, 0, f.stderr);
    assert.deepEqual(JSON.parse(f.stdout).removed, ['engram-l1-r0of2.bin', 'engram-l14-r0of2.bin']);
    assert.equal(bin(['verify', out, '--source', ours.dir, '--full']).code, 0);
  }
});

test("a NAME.partial or NAME.journal no journal of spark's vouches for (the Mia packer's half shard, a copy over spark's own, a text file) is refused and untouched; --force removes it and lists it", async () => {
  const half = readFileSync(
    (await writeMiaPack(join(tempDir(), 'mia'), ours.dir, { rank: 0, world: 2, layers: [1] })).get(1)!,
  ).subarray(0, 4096 + 264 * 100);
  const cases: { what: string; make(out: string): Promise<void> | void; names: string[] }[] = [
    {
      what: "the Mia stack's packer's .partial",
      make: (out) => writeFileSync(join(out, 'engram-l1-r0of2.bin.partial'), half),
      names: ['engram-l1-r0of2.bin.partial'],
    },
    {
      what: "another file copied over spark's own .partial (its journal names the file it replaced)",
      async make(out) {
        await rejects(packEngram(request(out, { testing: { faultAfterChunks: 2 } })), 'E_IO');
        const p = join(out, 'engram-l1-r0of2.bin.partial');
        copyFileSync(p, p + '.copy');
        renameSync(p + '.copy', p);
      },
      names: ['engram-l1-r0of2.bin.partial'],
    },
    {
      what: 'a .journal that is no journal of spark',
      make: (out) => writeFileSync(join(out, 'engram-l14-r0of2.bin.journal'), 'my notes\n'),
      names: ['engram-l14-r0of2.bin.journal'],
    },
  ];
  for (const c of cases) {
    const out = join(tempDir(), 'engram');
    mkdirSync(out);
    await c.make(out);
    const before = contents(out);
    const e = await rejects(packEngram(request(out)), 'E_PACK_EXISTS');
    assert.deepEqual(listed(e.message), c.names, c.what);
    assert.deepEqual(contents(out), before, `${c.what}: a refused run changes nothing`);
    const s = await packEngram(request(out, { force: true }));
    assert.deepEqual(s.removed, c.names, c.what);
    assert.deepEqual(readdirSync(out).sort(), ['engram-l1-r0of2.bin', 'engram-l14-r0of2.bin', 'spark-pack.json']);
    assert.equal(bin(['verify', out, '--source', ours.dir, '--full']).code, 0);
  }
});

test("spark's own leftovers go without asking: a killed pack's .partial and journal are resumed, nothing listed as removed", async () => {
  const out = join(tempDir(), 'engram');
  await rejects(packEngram(request(out, { syncBytes: 1, testing: { faultAfterChunks: 4 } })), 'E_IO');
  assert.ok(readdirSync(out).includes('engram-l1-r0of2.bin.partial'));
  assert.ok(readdirSync(out).includes('engram-l1-r0of2.bin.journal'));
  const s = await packEngram(request(out, { syncBytes: 1 }));
  assert.equal(s.resumed, true);
  assert.ok(s.files[0]!.chunksKept >= 4, JSON.stringify(s.files[0]));
  assert.deepEqual(s.removed, []);
  // Once complete, the journals are gone with the pack's manifest as their proof: a pack whose
  // manifest was removed is no longer provably spark's, and is refused like any other.
  renameSync(join(out, 'spark-pack.json'), join(tempDir(), 'spark-pack.json'));
  const e = await rejects(packEngram(request(out)), 'E_PACK_EXISTS');
  assert.deepEqual(listed(e.message), ['engram-l1-r0of2.bin', 'engram-l14-r0of2.bin']);
});

test('sparse and page layouts: a file another tool made under a name they write is refused without --force and untouched', async () => {
  // sparse: another snapshot's shards where the copy's go, and an index that is not this
  // snapshot's byte for byte (the two synthetic snapshots' indexes are alike: one is edited).
  const out = join(tempDir(), 'copy');
  const shards = [...new Set(tables.map((t) => t.weight.fileName))];
  const sparse = (over: Partial<PackRequest> = {}) => request(out, { layout: 'sparse', chunkRows: 1000, ...over });
  mkdirSync(out);
  for (const n of shards) copyFileSync(join(other.dir, n), join(out, n));
  writeFileSync(join(out, INDEX_FILE), readFileSync(join(other.dir, INDEX_FILE), 'utf8').replace('{', '{ '));
  let before = contents(out);
  let e = await rejects(packEngram(sparse()), 'E_PACK_EXISTS');
  assert.deepEqual(listed(e.message), [...shards, INDEX_FILE]);
  assert.deepEqual(contents(out), before);
  const s = await packEngram(sparse({ force: true }));
  assert.deepEqual(s.removed.sort(), [...shards, INDEX_FILE].sort());
  assert.equal(bin(['verify', out, '--source', ours.dir, '--full']).code, 0);

  // The snapshot's own index, byte for byte, is what the copy writes there: taken over (a kill
  // after it was written and before the manifest leaves it so).
  const fresh = join(tempDir(), 'copy');
  mkdirSync(fresh);
  copyFileSync(join(ours.dir, INDEX_FILE), join(fresh, INDEX_FILE));
  const t = await packEngram(request(fresh, { layout: 'sparse', chunkRows: 1000 }));
  assert.deepEqual(t.removed, []);

  // page: a file of the user's under a page file's name.
  const page = join(tempDir(), 'page');
  mkdirSync(page);
  writeFileSync(join(page, 'spark-page-l14-r0of2.rows'), 'mine\n');
  before = contents(page);
  e = await rejects(packEngram(request(page, { layout: 'page', chunkRows: 15 * 40 })), 'E_PACK_EXISTS');
  assert.deepEqual(listed(e.message), ['spark-page-l14-r0of2.rows']);
  assert.deepEqual(contents(page), before);
  const p = await packEngram(request(page, { layout: 'page', chunkRows: 15 * 40, force: true }));
  assert.deepEqual(p.removed, ['spark-page-l14-r0of2.rows']);
});
