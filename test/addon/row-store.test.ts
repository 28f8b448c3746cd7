import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { PackedTableSpec, TableSpec } from '../../src/domain/table-spec.js';
import { RowStore, toIdArray, threadsFromEnv } from '../../src/addon/row-store.js';
import { rawSnapshotTable, testRow, writePacked, writeRawSnapshot, writeSparseShard } from '../helpers/engram-files.js';

const dir = mkdtempSync(join(tmpdir(), 'row-store-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

const DIM = 256;
const RB = DIM + DIM / 32;
const snap = writeRawSnapshot(join(dir, 'snap.safetensors'), 1, 3000, DIM);
const snapTable: TableSpec = rawSnapshotTable(snap, 1);
writePacked(join(dir, 'dense.bin'), 14, 1000, 4000, DIM, 'dense');
writePacked(join(dir, 'page.bin'), 14, 1000, 4000, DIM, 'page');
const packed = (file: string, layout: 'dense' | 'page', direct = false): PackedTableSpec => ({
  kind: 'packed',
  layer: 14,
  path: join(dir, file),
  start: 1000,
  end: 4000,
  dataOffset: 4096,
  stride: RB,
  rowBytes: RB,
  layout,
  direct,
});

function assertRows(out: Buffer, layer: number, ids: readonly number[]): void {
  assert.equal(out.length >= ids.length * RB, true);
  ids.forEach((id, i) => {
    assert.ok(out.subarray(i * RB, (i + 1) * RB).equals(testRow(layer, id, DIM)), `row ${i} (id ${id}) differs`);
  });
}

const IDS = [0, 2999, 17, 17, 18, 19, 1500, 31, 30, 2998, 17, 0, 700];

// The read-call counters below need every row read by a call: mapCached off (the copies out of
// a mapping have their own test).
test('snapshot rows are byte-exact for every id type, with duplicates scattered back', async () => {
  const store = await RowStore.open([snapTable], { threads: 4, mapCached: false });
  try {
    assertRows(await store.gather(1, IDS), 1, IDS);
    assertRows(await store.gather(1, Uint32Array.from(IDS)), 1, IDS);
    assertRows(await store.gather(1, BigUint64Array.from(IDS, BigInt)), 1, IDS);
    const s = store.stats();
    assert.equal(s.batches, 3);
    assert.equal(s.rows, 3 * IDS.length);
    assert.equal(s.duplicates, 3 * 3);
    assert.ok(s.reads <= 3 * 2 * 10 && s.reads > 0, `reads ${s.reads}`);
    // The fixture was just written, so the page cache serves every read on the calling thread
    // (none where the kernel or filesystem cannot read without waiting: RWF_NOWAIT).
    assert.ok(s.inlineReads === s.reads || s.inlineReads === 0, `inlineReads ${s.inlineReads}, reads ${s.reads}`);
    assert.equal(s.threads, 4);
  } finally {
    await store.close();
  }
});

test('rows land at out[i * rowBytes] of a caller buffer, which is returned', async () => {
  const store = await RowStore.open([snapTable], { threads: 2, merge: false, dedup: false, mapCached: false });
  try {
    const out = Buffer.alloc(IDS.length * RB + 5, 0xab);
    const got = await store.gather(1, IDS, out);
    assert.equal(got, out);
    assertRows(out, 1, IDS);
    assert.equal(out[IDS.length * RB + 4], 0xab);
    assert.equal(store.stats().reads, 2 * IDS.length);
    const u8 = new Uint8Array(RB);
    const view = await store.gather(1, [5], u8);
    assert.ok(view.equals(testRow(1, 5, DIM)));
  } finally {
    await store.close();
  }
});

test('resident scales: one read per distinct row, their RAM reported', async () => {
  const store = await RowStore.open([{ ...snapTable, residentScales: [0, 3000] }], {
    threads: 4,
    merge: false,
    mapCached: false,
  });
  try {
    assert.equal(store.stats().residentBytes, 3000 * (DIM / 32));
    const before = store.stats().reads;
    assertRows(await store.gather(1, IDS), 1, IDS);
    assert.equal(store.stats().reads - before, 10);
    assert.equal(store.tables()[0].residentScales, true);
  } finally {
    await store.close();
  }
});

test('rows the page cache holds are copied out of a mapping with no read call, the same bytes', async () => {
  // Just written: every page is cached, and learnCached() finds them before the first batch.
  const store = await RowStore.open([snapTable, packed('dense.bin', 'dense')], { threads: 2 });
  try {
    assert.equal(store.stats().mappedFiles, 2);
    assert.ok((await store.learnCached()) >= Math.floor((3000 * DIM) / 4096));
    assertRows(await store.gather(1, IDS), 1, IDS);
    const ids = [1000, 3999, 1015, 1015];
    assertRows(await store.gather(14, ids), 14, ids);
    const s = store.stats();
    assert.equal(s.reads, 0);
    assert.equal(s.mappedRows, IDS.length + ids.length);
    assert.equal(s.rows, IDS.length + ids.length);
  } finally {
    await store.close();
  }
  // gatherCached: all or nothing, on this thread, never a read.
  const fresh = await RowStore.open([snapTable], { threads: 2 });
  try {
    const out = Buffer.alloc(IDS.length * RB);
    await fresh.learnCached();
    assert.equal(fresh.gatherCached(1, IDS, out), true);
    assertRows(out, 1, IDS);
    assert.equal(fresh.stats().reads, 0);
    assert.throws(() => fresh.gatherCached(1, [3000], out), RangeError);
  } finally {
    await fresh.close();
  }
  const calls = await RowStore.open([snapTable], { threads: 2, mapCached: false });
  try {
    assert.equal(calls.stats().mappedFiles, 0);
    assert.equal(await calls.learnCached(), 0);
    assert.equal(calls.gatherCached(1, IDS, Buffer.alloc(IDS.length * RB)), false);
    assertRows(await calls.gather(1, IDS), 1, IDS);
    assert.equal(calls.stats().mappedRows, 0);
    assert.ok(calls.stats().reads > 0);
  } finally {
    await calls.close();
  }
});

test('packed dense, page and O_DIRECT page layouts are byte-exact', async () => {
  const ids = [1000, 3999, 1015, 1014, 1016, 2500, 2500, 3000];
  for (const table of [packed('dense.bin', 'dense'), packed('page.bin', 'page'), packed('page.bin', 'page', true)]) {
    const store = await RowStore.open([table], { threads: 8 });
    try {
      assertRows(await store.gather(14, ids), 14, ids);
      const info = store.tables()[0];
      assert.equal(info.lo, 1000);
      assert.equal(info.hi, 4000);
      assert.equal(info.rowBytes, RB);
      if (table.kind === 'packed' && table.direct) {
        assert.equal(info.directRequested, true);
        // Reads are 4 KiB aligned when O_DIRECT took effect, exact rows otherwise.
        assert.equal(store.stats().bytesRead % (info.directActive ? 4096 : 1), 0);
      }
    } finally {
      await store.close();
    }
  }
});

test('an id outside the table is a RangeError naming it, before any read', async () => {
  const store = await RowStore.open([snapTable, packed('dense.bin', 'dense')], { threads: 2 });
  try {
    await assert.rejects(store.gather(1, [5, 3000]), (e: Error & { code?: string }) => {
      assert.ok(e instanceof RangeError);
      assert.equal(e.code, 'E_ROW_RANGE');
      assert.match(e.message, /row id 3000 \(batch index 1\) is outside the table \[0, 3000\) of layer 1/);
      return true;
    });
    await assert.rejects(store.gather(14, [999]), /row id 999 .*this pack's range \[1000, 4000\)/);
    await assert.rejects(store.gather(14, [4000]), RangeError);
    await assert.rejects(store.gather(1, [-1]), RangeError);
    await assert.rejects(store.gather(1, [1.5]), RangeError);
    await assert.rejects(store.gather(2, [1]), /layer 2 is not in this row store/);
    await assert.rejects(store.gather(1, [1, 2], Buffer.alloc(2 * RB - 1)), (e: Error) => {
      assert.ok(e instanceof TypeError);
      assert.match(e.message, /out holds 527 bytes but 2 rows of 264 bytes need 528/);
      return true;
    });
    assert.equal(store.stats().reads, 0);
  } finally {
    await store.close();
  }
});

test('ids: number arrays become Uint32Array, or BigUint64Array past 2^32', () => {
  assert.ok(toIdArray([1, 2]) instanceof Uint32Array);
  assert.deepEqual([...(toIdArray([1, 2 ** 33]) as BigUint64Array)], [1n, 2n ** 33n]);
  assert.equal(threadsFromEnv({}), 64);
  assert.equal(threadsFromEnv({ SPARK_ENGRAM_THREADS: '96' }), 96);
  assert.throws(() => threadsFromEnv({ SPARK_ENGRAM_THREADS: 'x' }), /SPARK_ENGRAM_THREADS/);
});

test('short reads and EINTR are retried; EIO is reported with file and offset', async () => {
  const flaky = await RowStore.open([snapTable], { threads: 3, faults: { shortEvery: 2, eintrEvery: 3 } });
  try {
    assertRows(await flaky.gather(1, IDS), 1, IDS);
    assert.ok(flaky.stats().retries > 3);
  } finally {
    await flaky.close();
  }
  const broken = await RowStore.open([packed('dense.bin', 'dense')], {
    threads: 1,
    retry: { retries: 1, delayMs: 0 },
    faults: { eioEvery: 1 },
  });
  try {
    await assert.rejects(broken.gather(14, [1010]), (e: Error & { code?: string; path?: string; offset?: number }) => {
      assert.equal(e.code, 'E_IO');
      assert.equal(e.path, join(dir, 'dense.bin'));
      assert.equal(e.offset, 4096 + 10 * RB);
      assert.match(
        e.message,
        /dense\.bin: pread of 264 bytes failed: Input\/output error \(after 1 retry\) \(at byte 6736\)/,
      );
      return true;
    });
  } finally {
    await broken.close();
  }
});

test('a file cut short after opening is an E_IO end-of-file error at the offset', async () => {
  const path = join(dir, 'cut.bin');
  writePacked(path, 3, 0, 100, DIM, 'dense');
  const store = await RowStore.open([{ ...packed('cut.bin', 'dense'), layer: 3, start: 0, end: 100 }], { threads: 1 });
  try {
    truncateSync(path, 4096 + 50 * RB + 7);
    await assert.rejects(store.gather(3, [50]), (e: Error & { code?: string; offset?: number }) => {
      assert.equal(e.code, 'E_IO');
      assert.equal(e.offset, 4096 + 50 * RB + 7);
      assert.match(e.message, /unexpected end of file/);
      return true;
    });
  } finally {
    await store.close();
  }
});

test('closing with batches in flight rejects them cleanly; later gathers reject too', async () => {
  const store = await RowStore.open([snapTable], { threads: 2, merge: false, faults: { delayUs: 2000 } });
  const ids = Array.from({ length: 600 }, (_, i) => i * 4);
  const inflight = [store.gather(1, ids), store.gather(1, ids.slice(1))];
  await new Promise((r) => setTimeout(r, 15));
  const closed = store.close();
  const settled = await Promise.allSettled(inflight);
  for (const r of settled) {
    assert.equal(r.status, 'rejected');
    assert.equal((r as PromiseRejectedResult).reason.code, 'E_STORE_CLOSED');
  }
  await closed;
  const s = store.stats();
  assert.equal(s.rows, 0);
  assert.equal(s.batches, 0);
  assert.ok(s.reads > 0 && s.reads < 1199, `reads ${s.reads}`);
  await assert.rejects(store.gather(1, [1]), { code: 'E_STORE_CLOSED' });
});

test('an output buffer dropped by the caller stays alive until its batch settles', async () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const store = await RowStore.open([snapTable], { threads: 2, faults: { delayUs: 500 } });
  try {
    const ids = Array.from({ length: 200 }, (_, i) => i * 13);
    const p = store.gather(1, ids, Buffer.alloc(ids.length * RB));
    for (let i = 0; i < 5; i++) {
      gc();
      await new Promise((r) => setTimeout(r, 2));
    }
    assertRows(await p, 1, ids);
  } finally {
    await store.close();
  }
});

test('full-size DSV4.1 tables: rows near 0, at rank boundaries and at N-1 are exact past 2^32', async () => {
  const N1 = 384006168;
  const N14 = 384016682;
  const pick = (n: number): number[] => {
    const quarter = [1, 2, 3].map((r) => Math.floor((n * r) / 4));
    return [0, 1, 2, ...quarter.flatMap((b) => [b - 1, b]), n - 2, n - 1];
  };
  const ids1 = pick(N1);
  const ids14 = pick(N14);
  const s47 = writeSparseShard(
    join(dir, 'model-00047-of-00048.safetensors'),
    [{ layer: 1, rows: N1, dim: DIM }],
    new Map([[1, ids1]]),
  );
  const s48 = writeSparseShard(
    join(dir, 'model-00048-of-00048.safetensors'),
    [{ layer: 14, rows: N14, dim: DIM }],
    new Map([[14, ids14]]),
  );
  const spec = (shard: typeof s47): TableSpec => {
    const t = shard.tables[0];
    return {
      kind: 'snapshot',
      layer: t.layer,
      rows: t.rows,
      dim: t.dim,
      weight: { path: shard.path, offset: t.weightOffset },
      scale: { path: shard.path, offset: t.scaleOffset },
    };
  };
  assert.ok(s48.tables[0].scaleOffset > 2 ** 36);
  const store = await RowStore.open([spec(s47), spec(s48)], { threads: 8 });
  try {
    assertRows(await store.gather(1, ids1), 1, ids1);
    assertRows(await store.gather(14, BigUint64Array.from(ids14, BigInt)), 14, ids14);
    await assert.rejects(store.gather(14, [N14]), /row id 384016682 /);
  } finally {
    await store.close();
  }
});

test('a ranged snapshot table (a sparse copy): ids outside [lo, hi) are refused naming the range; holes checked at open by rule', async () => {
  const rows = 100_000;
  const [lo, hi] = [40_000, 40_400];
  const written = Array.from({ length: hi - lo }, (_, i) => lo + i);
  const shard = writeSparseShard(
    join(dir, 'sparse-range.safetensors'),
    [{ layer: 1, rows, dim: DIM }],
    new Map([[1, written]]),
  );
  const t = shard.tables[0];
  const spec = (range: [number, number], holes: 'allow' | 'refuse' | 'corrupt'): TableSpec => ({
    kind: 'snapshot',
    layer: 1,
    rows,
    dim: DIM,
    weight: { path: shard.path, offset: t.weightOffset },
    scale: { path: shard.path, offset: t.scaleOffset },
    range,
    holes,
  });
  const store = await RowStore.open([spec([lo, hi], 'corrupt')], { threads: 2 });
  try {
    const ids = [lo, hi - 1, lo + 123, lo];
    assertRows(await store.gather(1, ids), 1, ids);
    assert.deepEqual(
      store.tables().map((x) => [x.lo, x.hi]),
      [[lo, hi]],
    );
    for (const bad of [lo - 1, hi]) {
      await assert.rejects(store.gather(1, [lo, bad]), {
        code: 'E_ROW_RANGE',
        message: `row id ${bad} (batch index 1) is outside this sparse copy's range [${lo}, ${hi}) of layer 1`,
      });
    }
  } finally {
    await store.close();
  }
  // The same file read past the written rows: a hole inside the range is corruption...
  await assert.rejects(
    RowStore.open([spec([lo, hi + 4000], 'corrupt')], { threads: 1 }),
    (err: Error & { code: string; path: string }) => {
      assert.equal(err.code, 'E_SHARD_TRUNCATED');
      assert.equal(err.path, shard.path);
      const row = Number(/of row (\d+) is a hole inside the copy's range \[40000, 44400\)/.exec(err.message)?.[1]);
      assert.ok(row >= hi - 16 && row < hi + 4000, err.message);
      return true;
    },
  );
  // ...a whole table with holes and no manifest is refused, and 'allow' reads the holes as zeros.
  await assert.rejects(RowStore.open([spec([0, rows], 'refuse')], { threads: 1 }), {
    code: 'E_SNAPSHOT',
    message: /layer 1: weight of row \d+ is a hole \(never written\) and the directory has no engram-local\.json/,
  });
  const allow = await RowStore.open([spec([0, rows], 'allow')], { threads: 1 });
  try {
    assert.ok((await allow.gather(1, [5])).equals(Buffer.alloc(RB)));
  } finally {
    await allow.close();
  }
  // A range past the table, or resident scales outside the range, are usage errors.
  await assert.rejects(RowStore.open([spec([lo, rows + 1], 'allow')], { threads: 1 }), {
    code: 'E_USAGE',
    message: /range \[40000, 100001\) is not inside the table \[0, 100000\)/,
  });
  await assert.rejects(
    RowStore.open([{ ...spec([lo, hi], 'allow'), residentScales: [0, hi] } as TableSpec], { threads: 1 }),
    { code: 'E_USAGE', message: /resident scale range \[0, 40400\) is not inside the readable rows \[40000, 40400\)/ },
  );
});
