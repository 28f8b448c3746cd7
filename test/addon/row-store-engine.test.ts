// ioEngine: the io_uring engine and the pread pool return the same bytes; auto falls back to
// the pread pool, and says why, when io_uring_setup is refused; a forced 'uring' that cannot
// be set up is an E_IO error at open.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RowStore, type RowStoreOptions } from '../../src/addon/row-store.js';
import type { TableSpec } from '../../src/domain/table-spec.js';
import { benchPack } from '../helpers/bench-gather.js';
import { cli } from '../helpers/cli.js';
import { packedTable, rawSnapshotTable, testRow, writePacked, writeRawSnapshot } from '../helpers/engram-files.js';

const dir = mkdtempSync(join(tmpdir(), 'row-store-engine-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

const DIM = 256;
const RB = DIM + DIM / 32;
const snapTable: TableSpec = rawSnapshotTable(writeRawSnapshot(join(dir, 'snap.safetensors'), 1, 3000, DIM), 1);
writePacked(join(dir, 'page.bin'), 14, 1000, 4000, DIM, 'page');
writePacked(join(dir, 'dense.bin'), 15, 1000, 4000, DIM, 'dense');
const TABLES: TableSpec[] = [
  snapTable,
  packedTable(join(dir, 'page.bin'), 14, 1000, 4000, DIM, 'page', true),
  packedTable(join(dir, 'dense.bin'), 15, 1000, 4000, DIM, 'dense'),
];

function ids(lo: number, n: number, seed: number): number[] {
  const out: number[] = [];
  let x = seed;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    out.push(lo + (x % 3000));
  }
  return [...out, out[0]];
}

/** Opens a forced-uring store, or explains why it cannot be here (only allowed with SPARK_TEST_NO_URING=1). */
async function openUring(tables: TableSpec[], options: RowStoreOptions): Promise<RowStore | string> {
  try {
    return await RowStore.open(tables, { ...options, ioEngine: 'uring' });
  } catch (err) {
    const e = err as Error & { code?: string };
    if (e.code === 'E_IO' && process.env.SPARK_TEST_NO_URING === '1') return e.message;
    throw err;
  }
}

test("ioEngine 'uring' and 'pread' return the same bytes from snapshots and packs", async (t) => {
  // Every row by a read call: with mapCached, a batch whose pages the store has learned are
  // cached (learnCached, started at open and not awaited) is copied from a mapping with no
  // read, so the read counts would depend on when that learning ended.
  const pread = await RowStore.open(TABLES, { threads: 4, ioEngine: 'pread', mapCached: false });
  const uring = await openUring(TABLES, { threads: 4, mapCached: false });
  if (typeof uring === 'string') {
    await pread.close();
    t.skip(`io_uring unavailable here: ${uring}`);
    return;
  }
  try {
    assert.equal(pread.stats().ioEngine, 'pread');
    assert.equal(uring.stats().ioEngine, 'uring');
    for (const [layer, lo] of [
      [1, 0],
      [14, 1000],
      [15, 1000],
    ] as const) {
      for (const batch of [ids(lo, 24, layer), ids(lo, 2000, layer + 7)]) {
        const a = await pread.gather(layer, batch);
        const b = await uring.gather(layer, batch);
        assert.ok(a.equals(b), `layer ${layer}: the engines disagree`);
        batch.forEach((id, i) =>
          assert.ok(b.subarray(i * RB, (i + 1) * RB).equals(testRow(layer, id, DIM)), `layer ${layer} row ${i}`),
        );
      }
    }
    assert.equal(uring.stats().reads, pread.stats().reads); // the same plan, read by either engine
    assert.equal(uring.stats().bytesRead, pread.stats().bytesRead);
    // Many batches in flight on one ring at once.
    const batches = Array.from({ length: 16 }, (_, i) => ids(1000, 300, 100 + i));
    const outs = await Promise.all(batches.map((b) => uring.gather(14, b)));
    outs.forEach((out, k) =>
      batches[k].forEach((id, i) => assert.ok(out.subarray(i * RB, (i + 1) * RB).equals(testRow(14, id, DIM)))),
    );
    assert.equal(uring.stats().batches, 6 + 16);
  } finally {
    await pread.close();
    await uring.close();
  }
});

test('auto falls back to the pread pool when io_uring_setup is refused; a forced uring is an error', async () => {
  const store = await RowStore.open(TABLES, { threads: 2, faults: { uringSetupErrno: 1 } });
  try {
    assert.equal(store.stats().ioEngine, 'pread');
    assert.match(
      store.stats().ioEngineNote ?? '',
      /io_uring unavailable: io_uring_setup \(refused for a test\) failed: Operation not permitted/,
    );
    const batch = ids(0, 100, 3);
    const out = await store.gather(1, batch);
    batch.forEach((id, i) => assert.ok(out.subarray(i * RB, (i + 1) * RB).equals(testRow(1, id, DIM))));
  } finally {
    await store.close();
  }
  await assert.rejects(
    RowStore.open(TABLES, { threads: 2, ioEngine: 'uring', faults: { uringSetupErrno: 38 } }),
    (err: Error & { code?: string }) =>
      err.code === 'E_IO' &&
      /ioEngine 'uring' was asked for.*Function not implemented.*use ioEngine 'auto' or 'pread'/.test(err.message),
  );
  await assert.rejects(
    RowStore.open(TABLES, { threads: 2, ioEngine: 'fast' as 'auto' }),
    /options.ioEngine must be 'auto', 'pread' or 'uring'/,
  );
  await assert.rejects(RowStore.open(TABLES, { threads: 2, ioDepth: 0 }), /options.ioDepth must be between 1 and 4096/);
});

test('spark bench gather --engines pread,uring measures both engines side by side, labelled', async (t) => {
  const pack = benchPack('page', 3000, dir);
  const bad = await cli(['bench', 'gather', pack, '--engines', 'pread,aio', '--json']);
  assert.equal(bad.code, 2);
  assert.match(JSON.parse(bad.stderr).error.message, /--engines takes pread, uring; got 'aio'/);
  if (process.env.SPARK_TEST_NO_URING === '1') {
    t.skip('io_uring forbidden here (SPARK_TEST_NO_URING=1)');
    return;
  }
  // --no-map: warm rows would otherwise be copied out of the mapping, and neither engine would read.
  const r = await cli([
    'bench',
    'gather',
    pack,
    '--threads',
    '2',
    '--batch',
    '24',
    '--seconds',
    '1',
    '--no-fio',
    '--no-naive',
    '--no-map',
    '--engines',
    'pread,uring',
    '--json',
  ]);
  assert.equal(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout) as {
    results: { reader: string; threads: number; rowsPerSec: number; readsPerRow: number }[];
  };
  assert.deepEqual(
    report.results.map((x) => [x.reader, x.threads]),
    [
      ['pread-pool', 2],
      ['uring', 2],
    ],
  );
  for (const x of report.results) assert.ok(x.rowsPerSec > 0 && x.readsPerRow > 0);
});
