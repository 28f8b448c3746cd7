// The addon boundary under abuse: output buffers transferred mid-batch, a C++ exception in a
// worker, reader threads that will not start, NFS-style transient errors and stale handles,
// and environments (worker threads, processes) that exit while batches are in flight.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { MessageChannel, Worker } from 'node:worker_threads';
import type { PackedTableSpec, TableSpec } from '../../src/domain/table-spec.js';
import { RowStore } from '../../src/addon/row-store.js';
import { rawSnapshotTable, testRow, writePacked, writeRawSnapshot } from '../helpers/engram-files.js';
import { tempDir } from '../helpers/tmp.js';

const dir = tempDir('row-boundary-');
const DIM = 256;
const RB = DIM + DIM / 32;
const snapTable = rawSnapshotTable(writeRawSnapshot(join(dir, 'snap.safetensors'), 1, 3000, DIM), 1);
writePacked(join(dir, 'dense.bin'), 14, 0, 2000, DIM, 'dense');
const denseTable: PackedTableSpec = {
  kind: 'packed',
  layer: 14,
  path: join(dir, 'dense.bin'),
  start: 0,
  end: 2000,
  dataOffset: 4096,
  stride: RB,
  rowBytes: RB,
  layout: 'dense',
};
const IDS = Array.from({ length: 300 }, (_, i) => (i * 7) % 2000);

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function assertRows(out: Uint8Array, layer: number, ids: readonly number[]): void {
  ids.forEach((id, i) => {
    assert.ok(
      Buffer.from(out.subarray(i * RB, (i + 1) * RB)).equals(testRow(layer, id, DIM)),
      `row ${i} (id ${id}) differs`,
    );
  });
}

const threadCount = (): number => readdirSync('/proc/self/task').length;
// A joined thread can linger in /proc for a moment after the join returns: poll briefly.
async function threadsSettleAt(n: number): Promise<number> {
  for (let i = 0; i < 200 && threadCount() !== n; i++) await sleep(5);
  return threadCount();
}

async function transferAway(buffer: ArrayBuffer, how: 'structuredClone' | 'postMessage'): Promise<void> {
  if (how === 'structuredClone') {
    structuredClone(buffer, { transfer: [buffer] });
    return;
  }
  const { port1, port2 } = new MessageChannel();
  const received = once(port2, 'message');
  port1.postMessage(buffer, [buffer]);
  await received;
  port1.close();
  port2.close();
}

test('an output buffer transferred while its batch is read is never written: the batch rejects', async () => {
  // Slow reads keep the batch in flight while its buffer is transferred, the receiving side
  // dropped and collected, and its memory handed out again.
  const store = await RowStore.open([snapTable], { threads: 2, merge: false, faults: { delayUs: 1000 } });
  try {
    for (const how of ['structuredClone', 'postMessage'] as const) {
      const out = new Uint8Array(IDS.length * RB);
      const batch = store.gather(1, IDS, out);
      await transferAway(out.buffer, how);
      assert.equal(out.byteLength, 0, "the caller's view is detached");
      const litter: Uint8Array[] = [];
      for (let i = 0; i < 4; i++) {
        gc();
        await sleep(5);
        litter.push(new Uint8Array(IDS.length * RB).fill(0x5a));
      }
      await assert.rejects(batch, (e: Error & { code?: string }) => {
        assert.equal(e.code, 'E_USAGE', e.message);
        assert.match(e.message, /output buffer was detached or shrunk while the batch was read/);
        return true;
      });
      for (const l of litter)
        assert.ok(
          l.every((b) => b === 0x5a),
          'memory reused after the transfer is untouched',
        );
    }
    assertRows(await store.gather(1, IDS.slice(0, 40)), 1, IDS.slice(0, 40));
    assert.equal(store.stats().inflight, 0);
  } finally {
    await store.close();
  }
});

test('without an output buffer the rows arrive in a new Buffer; with one, in that buffer', async () => {
  const store = await RowStore.open([snapTable], { threads: 3 });
  try {
    const fresh = await store.gather(1, IDS);
    assert.ok(Buffer.isBuffer(fresh));
    assert.equal(fresh.length, IDS.length * RB);
    assertRows(fresh, 1, IDS);
    const mine = new Uint8Array(IDS.length * RB + 3).fill(0xee);
    const got = await store.gather(1, IDS, mine);
    assert.equal(got.buffer, mine.buffer);
    assertRows(mine, 1, IDS);
    assert.deepEqual([...mine.subarray(IDS.length * RB)], [0xee, 0xee, 0xee]);
  } finally {
    await store.close();
  }
});

test('a C++ exception on a reader thread rejects the batch with E_INTERNAL; the process and the store live on', async () => {
  const store = await RowStore.open([snapTable], { threads: 3, merge: false, faults: { throwAt: 5 } });
  try {
    await assert.rejects(store.gather(1, IDS), (e: Error & { code?: string; exitCode?: number }) => {
      assert.equal(e.code, 'E_INTERNAL');
      assert.equal(e.exitCode, 3);
      assert.match(e.message, /internal error: injected fault: a read threw/);
      return true;
    });
    assertRows(await store.gather(1, IDS), 1, IDS);
  } finally {
    await store.close();
  }
});

test('a reader thread that will not start fails the open with E_THREAD_START and leaves no thread behind', async () => {
  await store0(); // the first store starts libuv's and the addon's own threads
  const before = threadCount();
  await assert.rejects(
    RowStore.open([snapTable], { threads: 16, faults: { threadStartFailAt: 10 } }),
    (e: Error & { code?: string; exitCode?: number }) => {
      assert.equal(e.code, 'E_THREAD_START');
      assert.equal(e.exitCode, 3);
      assert.match(e.message, /could not start thread 10 of 16: Resource temporarily unavailable/);
      assert.match(e.message, /use fewer threads or raise the limit/);
      return true;
    },
  );
  assert.equal(await threadsSettleAt(before), before, 'the nine threads that started were stopped');
  const ok = await RowStore.open([snapTable], { threads: 16 });
  // 16 readers, plus the io_uring engine's one submitting thread when auto chose it.
  assert.equal(threadCount(), before + 16 + (ok.stats().ioEngine === 'uring' ? 1 : 0));
  await ok.close();
  assert.equal(await threadsSettleAt(before), before);
});

async function store0(): Promise<void> {
  const s = await RowStore.open([snapTable], { threads: 1 });
  await s.gather(1, [1]);
  await s.close();
}

test('transient NFS errors are retried and counted; a stale handle is reopened once', async () => {
  const store = await RowStore.open([denseTable], {
    threads: 2,
    merge: false,
    retry: { delayMs: 0 },
    faults: { etimedoutEvery: 50, estaleAt: 7 },
  });
  try {
    assertRows(await store.gather(14, IDS), 14, IDS);
    const s = store.stats();
    assert.equal(s.reopens, 1);
    assert.ok(s.errorRetries >= 1 + Math.floor(s.reads / 50), `errorRetries ${s.errorRetries}, reads ${s.reads}`);
    assertRows(await store.gather(14, IDS.slice(0, 50)), 14, IDS.slice(0, 50));
    assert.equal(store.stats().reopens, 1);
  } finally {
    await store.close();
  }
});

test('a read that keeps failing gives up after the bounded retries, naming the file and the offset', async () => {
  const store = await RowStore.open([denseTable], {
    threads: 1,
    retry: { retries: 2, delayMs: 1 },
    faults: { etimedoutEvery: 1 },
  });
  try {
    await assert.rejects(store.gather(14, [10]), (e: Error & { code?: string; path?: string; offset?: number }) => {
      assert.equal(e.code, 'E_IO');
      assert.equal(e.path, denseTable.path);
      assert.equal(e.offset, 4096 + 10 * RB);
      assert.match(
        e.message,
        /dense\.bin: pread of 264 bytes failed: Connection timed out \(after 2 retries\) \(at byte 6736\)/,
      );
      return true;
    });
    assert.equal(store.stats().errorRetries, 2);
  } finally {
    await store.close();
  }
});

// Loads the store in another environment and starts a batch that would take a minute.
const slowBatch = (moduleUrl: string, table: TableSpec, ids: number[]): string => `
  const { RowStore } = await import(${JSON.stringify(moduleUrl)});
  const store = await RowStore.open([${JSON.stringify(table)}], { threads: 2, merge: false, faults: { delayUs: 200000 } });
  store.gather(1, ${JSON.stringify(ids)}, new Uint8Array(${ids.length * RB})).catch(() => {});
`;
const moduleUrl = new URL('../../src/addon/row-store.js', import.meta.url).href;

test('a worker thread terminated mid-batch exits at once, and the process stays healthy', async () => {
  const worker = new Worker(
    `(async () => {
      const { parentPort } = await import('node:worker_threads');
      ${slowBatch(moduleUrl, snapTable, IDS)}
      parentPort.postMessage('started');
    })();`,
    { eval: true },
  );
  const [msg] = await once(worker, 'message');
  assert.equal(msg, 'started');
  await sleep(100);
  const t0 = Date.now();
  await worker.terminate();
  const seconds = (Date.now() - t0) / 1000;
  assert.ok(seconds < 3, `terminate took ${seconds} s (the batch alone would take a minute)`);
  // This environment's own stores are untouched by the other one's teardown.
  const store = await RowStore.open([snapTable], { threads: 2 });
  assertRows(await store.gather(1, IDS.slice(0, 10)), 1, IDS.slice(0, 10));
  await store.close();
});

test('process.exit with a batch in flight exits at once with its code', () => {
  const script = `${slowBatch(moduleUrl, snapTable, IDS)}
    setTimeout(() => process.exit(7), 100);`;
  const t0 = Date.now();
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20000 });
  const seconds = (Date.now() - t0) / 1000;
  assert.equal(r.status, 7, r.stderr);
  assert.ok(seconds < 10, `exit took ${seconds} s`);
});
