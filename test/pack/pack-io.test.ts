// How `spark pack` and `spark verify` move their bytes: O_DIRECT wherever the filesystem
// allows it (the page cache, GPU memory on a serving node, left alone), buffered where it
// refuses, said in the JSON either way, and the same bytes whatever the path: ranges that
// start and end off a block (264-byte rows, a 3-way split), an interrupted direct copy
// resumed, the rate limit held; a sparse copy verified the same way as a pack.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  closeSync,
  constants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { packEngram, type PackRequest } from '../../src/stacks/pack-engram.js';
import { openSnapshot } from '../../src/engram/snapshot.js';
import { cli } from '../helpers/cli.js';
import { packRequest, rejects } from '../helpers/pack-request.js';
import { checkSparseCopy } from '../helpers/sparse-check.js';
import { floorRange, writeSparseCopy } from '../helpers/sparse-copy.js';
import { makeSnapshot } from '../helpers/synth.js';
import { tempDir } from '../helpers/tmp.js';

const snap = makeSnapshot();
const tables = (await openSnapshot(snap.dir)).engram;

/** Whether `dir`'s filesystem opens files with O_DIRECT (tmpfs before Linux 6.6 does not). */
function directOpens(dir: string): boolean {
  const probe = join(dir, '.direct-probe');
  writeFileSync(probe, Buffer.alloc(4096, 1));
  try {
    closeSync(openSync(probe, constants.O_RDONLY | constants.O_DIRECT));
    return true;
  } catch {
    return false;
  }
}

// Rank 1 of 3: every table's range starts and ends at a row whose offset is not a block's.
function request(out: string, over: Partial<PackRequest> = {}): PackRequest {
  return packRequest(snap.dir, tables, out, { rank: 1, world: 3, chunkRows: 777, ...over });
}

async function assertDenseExact(out: string): Promise<void> {
  const r = await cli(['verify', out, '--source', snap.dir, '--full', '--json']);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  const doc = JSON.parse(r.stdout) as { ok: boolean; io?: string };
  assert.equal(doc.ok, true);
  assert.equal(doc.io, directOpens(out) ? 'direct' : 'buffered', 'verify reads with O_DIRECT where it can');
}

test('spark pack copies with O_DIRECT where the filesystem allows it, byte-exact at unaligned ranges, and says so', async () => {
  for (const layout of ['sparse', 'dense', 'page'] as const) {
    const out = join(tempDir(), 'pack');
    const s = await packEngram(request(out, { layout, chunkRows: layout === 'page' ? 780 : 777 })); // page: whole pages of 15 rows
    const expected = directOpens(out) && directOpens(snap.dir) ? 'direct' : 'buffered';
    assert.deepEqual(s.io, { read: expected, write: expected }, layout);
    for (const f of s.files) assert.deepEqual(f.io, { read: expected, write: expected }, `${layout} ${f.file}`);
    if (layout === 'sparse') assert.ok(checkSparseCopy(out, snap.dir).rows > 0);
    else await assertDenseExact(out);
  }
});

test('a filesystem refusing O_DIRECT at open or at the first write: buffered, the same bytes, and said so', async () => {
  for (const refusal of ['open', 'transfer'] as const) {
    for (const layout of ['sparse', 'dense'] as const) {
      const out = join(tempDir(), 'pack');
      const s = await packEngram(request(out, { layout, testing: { directRefusal: refusal } }));
      assert.deepEqual(s.io, { read: 'buffered', write: 'buffered' }, `${layout}, refused at ${refusal}`);
      if (layout === 'sparse') assert.ok(checkSparseCopy(out, snap.dir).rows > 0);
      else await assertDenseExact(out);
    }
  }
});

test('spark pack --json reports io; a second run that copies nothing reports none', async () => {
  const out = join(tempDir(), 'pack');
  const argv = ['pack', snap.dir, '--out', out, '--rank', '1', '--world', '3', '--json'];
  const first = await cli(argv);
  assert.equal(first.code, 0, first.stderr);
  const doc = JSON.parse(first.stdout) as { io: { read: string; write: string } };
  const expected = directOpens(out) && directOpens(snap.dir) ? 'direct' : 'buffered';
  assert.deepEqual(doc.io, { read: expected, write: expected });
  const again = await cli(argv);
  assert.equal(again.code, 0, again.stderr);
  assert.deepEqual((JSON.parse(again.stdout) as { io: unknown }).io, { read: 'none', write: 'none' });
});

test('a direct copy that fails mid-pack resumes: committed chunks kept, the rest copied, the same bytes', async () => {
  for (const layout of ['sparse', 'dense'] as const) {
    const out = join(tempDir(), 'pack');
    await rejects(
      packEngram(request(out, { layout, chunkRows: 300, syncBytes: 1, testing: { faultAfterChunks: 5 } })),
      'E_IO',
    );
    const s = await packEngram(request(out, { layout, chunkRows: 300 }));
    assert.ok(s.resumed, layout);
    assert.ok(
      s.files.some((f) => f.chunksKept > 0 && f.chunksWritten > 0),
      layout,
    );
    if (layout === 'sparse') assert.ok(checkSparseCopy(out, snap.dir).rows > 0);
    else await assertDenseExact(out);
  }
});

test('the rate limit holds with reads running ahead of writes', async () => {
  const out = join(tempDir(), 'pack');
  const chunkRows = 500;
  // Each file's limiter lets its first chunk start at once; every later one waits its turn.
  const plain = await packEngram(request(join(tempDir(), 'pack'), { layout: 'dense', chunkRows }));
  const rate = Math.ceil(plain.bytes / 1.5); // bytes per second: about 1.5 s for the pack
  const s = await packEngram(request(out, { layout: 'dense', chunkRows, rateLimit: rate }));
  const free = s.files.length * (chunkRows * 264 + 4096); // a first chunk and a header block per file
  const floor = (s.bytes - free) / rate;
  assert.ok(
    s.seconds >= floor * 0.98,
    `${s.seconds.toFixed(2)} s for ${s.bytes} bytes at ${rate} B/s: at least ${floor.toFixed(2)} s`,
  );
  await assertDenseExact(out);
});

/** A new directory on tmpfs (/dev/shm), removed at exit; undefined where there is none. */
function tmpfsDir(): string | undefined {
  if (!existsSync('/dev/shm')) return undefined;
  const d = mkdtempSync('/dev/shm/spark-test-');
  process.on('exit', () => rmSync(d, { recursive: true, force: true }));
  return d;
}

interface SparseVerifyDoc {
  ok: boolean;
  io?: string;
  bytesRead: number;
  problems: string[];
  layers: { chunks: { checked: number; bad: number }; rows?: { compared: number; bad: number; first?: number } }[];
}

async function verifyDoc(argv: string[], code: number): Promise<SparseVerifyDoc> {
  const r = await cli(['verify', ...argv, '--json']);
  assert.equal(r.code, code, r.stdout + r.stderr);
  return JSON.parse(r.stdout) as SparseVerifyDoc;
}

test('spark verify of a sparse copy reads with O_DIRECT where the filesystem allows it, buffered where not, every byte of the range once, and finds the same damage', async () => {
  const ranges = tables.map((t) => floorRange(t.layer, t.rows, 1, 3)); // starts and ends off a block
  for (const parent of [tempDir(), tmpfsDir()]) {
    if (parent === undefined) continue;
    const dir = join(parent, 'copy');
    mkdirSync(dir);
    const copy = writeSparseCopy(snap.dir, dir, { flavour: 'spark', ranges, rank: 1, world: 3, chunkRows: 777 });
    const io = directOpens(dir) ? 'direct' : 'buffered';
    const headers = (copy.manifest.spark as { shards: { headerBytes: number }[] }).shards.reduce(
      (n, s) => n + s.headerBytes,
      0,
    );
    const rangeBytes = ranges.reduce((n, r) => n + (r.end - r.start) * 264, 0);
    const clean = await verifyDoc([dir], 0);
    assert.equal(clean.io, io, parent);
    assert.equal(clean.bytesRead, headers + rangeBytes, 'the headers and every row of the ranges, each read once');
    assert.deepEqual(
      clean.layers.map((l) => l.chunks.bad),
      ranges.map(() => 0),
    );
    const full = await verifyDoc([dir, '--source', snap.dir, '--full'], 0);
    assert.equal(full.io, io);
    // The headers against their CRC-32s, then against the source's; every row on each side.
    assert.equal(full.bytesRead, 3 * headers + 2 * rangeBytes);

    // One byte of the second layer's scale column, in row start + 2000: chunk 2 of that layer.
    const t = copy.tables[1];
    const r = ranges[1];
    const row = r.start + 2000;
    const fd = openSync(join(dir, t.shard), 'r+');
    const at = t.scaleOffset + row * 8 + 5;
    const b = Buffer.alloc(1);
    readSync(fd, b, 0, 1, at);
    writeSync(fd, Buffer.from([b[0] ^ 0x40]), 0, 1, at);
    closeSync(fd);
    const where = `${t.shard}: layer ${t.layer}`;
    const bad = await verifyDoc([dir], 1);
    assert.equal(bad.io, io);
    assert.deepEqual(bad.problems, [`${where}: chunk 2 (rows ${r.start + 1554}-${r.start + 2330}) fails its checksum`]);
    const rows = await verifyDoc([dir, '--source', snap.dir, '--full'], 1);
    assert.deepEqual(rows.problems.slice(-1), [`${where}: row ${row} differs from the source`]);
    assert.deepEqual(rows.layers[1].rows, { mode: 'full', compared: r.end - r.start, bad: 1, first: row });
  }
});

test('spark verify of a sparse copy made by another tool: --full reads through the native pass and says how; a sample has no chunk pass', async () => {
  const ranges = tables.map((t) => floorRange(t.layer, t.rows, 0, 2));
  const dir = join(tempDir(), 'copy');
  mkdirSync(dir);
  writeSparseCopy(snap.dir, dir, { flavour: 'overlay', ranges });
  const full = await verifyDoc([dir, '--source', snap.dir, '--full'], 0);
  assert.equal(full.io, directOpens(dir) ? 'direct' : 'buffered');
  assert.deepEqual(
    full.layers.map((l) => l.rows?.compared),
    ranges.map((r) => r.end - r.start),
  );
  assert.deepEqual(
    full.layers.map((l) => l.chunks.checked),
    ranges.map(() => 0),
    'no checksums to check',
  );
  const sample = await verifyDoc([dir, '--source', snap.dir, '--sample', '10'], 0);
  assert.equal(sample.io, undefined);
  assert.deepEqual(
    sample.layers.map((l) => l.rows?.compared),
    ranges.map(() => 12),
  );
});
