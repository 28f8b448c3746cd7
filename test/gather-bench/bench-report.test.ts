// The gather bench's honesty: the device-ceiling fio job, the engine fallback, the ratios and
// per-row numbers derived from raw counts, and the verdict on whether "cold" stayed cold.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { coldVerdict, memTotalBytes, pageCacheLimit } from '../../src/gather-bench/cold.js';
import {
  CEILING_IODEPTH,
  CEILING_JOBS,
  ceilingEngines,
  closeCeiling,
  fioArgs,
  measureCeiling,
  parseEngineList,
  parseFioJson,
  type Ceiling,
  type FioRun,
} from '../../src/gather-bench/fio.js';
import {
  ceilingFractions,
  ceilingShortfall,
  pairMergeGains,
  recommendThreads,
  storeNumbers,
  timedNumbers,
  type GatherBenchResult,
} from '../../src/gather-bench/gather-result.js';
import { readRegions, regionBytes } from '../../src/gather-bench/read-range.js';
import { processReadBytes } from '../../src/gather-bench/time-loop.js';
import { benchPack } from '../helpers/bench-gather.js';
import { cli } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

const GiB = 2 ** 30;

test('the ceiling job: io_uring, O_DIRECT, 4 KiB random reads, 2 jobs x QD 128, over the 4 KiB-aligned inside of the region', () => {
  let seen: FioRun | undefined;
  const c = measureCeiling(
    { file: '/data/shard', offset: 664, size: 10 * 4096, seconds: 3 },
    (o) => ((seen = o), { iops: 68000, cpuPercent: 12 }),
    ['psync', 'libaio', 'io_uring'],
  );
  assert.ok('iops' in c);
  assert.equal(c.engine, 'io_uring');
  assert.equal(c.iops, 68000);
  assert.equal(c.note, undefined);
  const args = fioArgs(seen!);
  for (const a of [
    '--ioengine=io_uring',
    `--iodepth=${CEILING_IODEPTH}`,
    `--numjobs=${CEILING_JOBS}`,
    '--direct=1',
    '--rw=randread',
    '--bs=4k',
    '--offset=4096',
    `--size=${9 * 4096}`,
    '--runtime=3',
    '--filename=/data/shard',
  ]) {
    assert.ok(args.includes(a), `${a} in ${args.join(' ')}`);
  }
  assert.ok(!args.some((a) => a.startsWith('--fadvise_hint')), 'no buffered hint on a direct job');
  // psync, as before: no iodepth, buffered with the random hint.
  const psync = fioArgs({ file: 'f', offset: 0, size: 8192, threads: 16, seconds: 2, direct: false, keepCache: false });
  assert.ok(
    psync.includes('--ioengine=psync') &&
      psync.includes('--numjobs=16') &&
      psync.includes('--fadvise_hint=random') &&
      psync.includes('--invalidate=1'),
  );
  assert.ok(!psync.some((a) => a.startsWith('--iodepth')));
});

test('the ceiling falls back to libaio when io_uring is missing or refused, and says why; no engine is a note, not a number', () => {
  const noUring = measureCeiling(
    { file: 'f', offset: 0, size: 4096, seconds: 1 },
    () => ({ iops: 50000, cpuPercent: 1 }),
    ['psync', 'libaio'],
  );
  assert.ok('iops' in noUring);
  assert.equal(noUring.engine, 'libaio');
  assert.match(noUring.note!, /libaio instead of io_uring: fio has no io_uring engine/);
  const refused = measureCeiling(
    { file: 'f', offset: 0, size: 4096, seconds: 1 },
    (o) => {
      if (o.engine === 'io_uring') throw new Error('fio (io_uring) failed: io_uring_setup: Operation not permitted');
      return { iops: 41000, cpuPercent: 1 };
    },
    ['io_uring', 'libaio'],
  );
  assert.ok('iops' in refused);
  assert.equal(refused.engine, 'libaio');
  assert.equal(refused.iops, 41000);
  assert.match(refused.note!, /Operation not permitted/);
  const none = measureCeiling(
    { file: 'f', offset: 0, size: 4096, seconds: 1 },
    () => {
      throw new Error('fio (x) failed: O_DIRECT: Invalid argument');
    },
    ['io_uring', 'libaio'],
  );
  assert.ok(!('iops' in none));
  assert.match(none.note, /^no device ceiling: .*Invalid argument/);
  assert.match(
    (
      measureCeiling({ file: 'f', offset: 0, size: 1, seconds: 1 }, () => ({ iops: 1, cpuPercent: 0 }), []) as {
        note: string;
      }
    ).note,
    /fio is not installed/,
  );
  assert.deepEqual(ceilingEngines(['psync']), []);
});

test('the ceiling is the mean of the runs before and after the cases', () => {
  const c = measureCeiling({ file: 'f', offset: 0, size: 8192, seconds: 2 }, () => ({ iops: 60000, cpuPercent: 0 }), [
    'io_uring',
  ]) as Ceiling;
  const closed = closeCeiling(c, (o) => {
    assert.equal(o.engine, 'io_uring');
    assert.equal(o.seconds, 2);
    return { iops: 70000, cpuPercent: 0 };
  });
  assert.deepEqual([closed.iopsBefore, closed.iopsAfter, closed.iops], [60000, 70000, 65000]);
  const failed = closeCeiling(c, () => {
    throw new Error('disk gone');
  });
  assert.equal(failed.iops, 60000);
  assert.match(failed.note!, /second ceiling run failed: disk gone/);
});

test("fio's engine list and JSON are parsed; a document without read IOPS is refused", () => {
  assert.deepEqual(parseEngineList('Available IO engines:\n\tcpuio\n\tpsync\n\tio_uring\n\tio_uring_cmd\n\tlibaio\n'), [
    'cpuio',
    'psync',
    'io_uring',
    'io_uring_cmd',
    'libaio',
  ]);
  assert.deepEqual(
    parseFioJson(
      'note: both iodepth >= 1 and synchronous I/O engine are selected\n{"jobs":[{"read":{"iops":1234.5},"usr_cpu":3,"sys_cpu":7}]}',
    ),
    { iops: 1234.5, cpuPercent: 10 },
  );
  assert.throws(() => parseFioJson('{"jobs":[]}'), /no jobs\[0\]\.read\.iops/);
  assert.throws(() => parseFioJson('fio: engine not loadable'), /no JSON/);
});

test('reads, rows and device pages as fractions of the ceiling; none without one', () => {
  const ceiling = { iops: 50000 } as Ceiling;
  assert.deepEqual(ceilingFractions({ rowsPerSec: 60000, readsPerSec: 45000, devicePagesPerSec: 40000 }, ceiling), {
    rows: 1.2,
    reads: 0.9,
    devicePages: 0.8,
  });
  assert.deepEqual(ceilingFractions({ rowsPerSec: 25000 }, ceiling), { rows: 0.5 });
  assert.equal(ceilingFractions({ rowsPerSec: 1 }, undefined), undefined);
  assert.equal(ceilingFractions({ rowsPerSec: 1 }, { iops: 0 } as Ceiling), undefined);
});

test('a case that took more than the ceiling from the device flags the ceiling as measured low', () => {
  const r = (reads?: number, devicePages?: number) =>
    ({
      ofCeiling: {
        rows: 1,
        ...(reads !== undefined ? { reads } : {}),
        ...(devicePages !== undefined ? { devicePages } : {}),
      },
    }) as GatherBenchResult;
  assert.equal(ceilingShortfall([r(0.9), r(undefined, 1.04)]), undefined);
  assert.equal(ceilingShortfall([r(0.9), r(undefined, 1.7), r(1.2, 0.8)]), 1.7);
  assert.equal(ceilingShortfall([{} as GatherBenchResult]), undefined);
});

test('store counters become reads/row, reads/s, duplicate and merged fractions; CPU per row and device pages/s from the timing', () => {
  // 1000 rows, 100 copied duplicates, 900 distinct rows x 2 pieces = 1800 pieces, 200 of them merged into others' reads.
  const n = storeNumbers({ rows: 1000, reads: 1600, duplicates: 100, merged: 200, mappedRows: 0 }, 40000);
  assert.deepEqual(n, {
    readsPerRow: 1.6,
    readsPerSec: 64000,
    duplicateFraction: 0.1,
    mergedFraction: 200 / 1800,
    mappedFraction: 0,
  });
  assert.deepEqual(storeNumbers({ rows: 0, reads: 0, duplicates: 0, merged: 0, mappedRows: 0 }, 0), {
    readsPerRow: 0,
    readsPerSec: 0,
    duplicateFraction: 0,
    mergedFraction: 0,
    mappedFraction: 0,
  });
  // 1000 rows of which 750 copied out of the mapping: 250 read, two pieces each.
  assert.equal(
    storeNumbers({ rows: 1000, reads: 500, duplicates: 0, merged: 0, mappedRows: 750 }, 1000).mappedFraction,
    0.75,
  );
  const t = timedNumbers({
    rows: 50000,
    rowsPerSec: 25000,
    p50: 1,
    p99: 2,
    n: 10,
    busySeconds: 2,
    cpuSeconds: 0.5,
    deviceBytes: 4096 * 80000,
  });
  assert.deepEqual(t, { cpuUsPerRow: 10, devicePagesPerSec: 40000 });
  assert.deepEqual(timedNumbers({ rows: 10, rowsPerSec: 1, p50: 1, p99: 1, n: 1, busySeconds: 1, cpuSeconds: 0.001 }), {
    cpuUsPerRow: 100,
  });
  assert.equal(processReadBytes('rchar: 5\nread_bytes: 123456\nwrite_bytes: 0\n'), 123456);
  assert.equal(processReadBytes('rchar: 5\n'), undefined);
});

test('merge gain pairs each merged case with its no-merge twin; twins are never recommended', () => {
  const r = (threads: number, batch: number, rowsPerSec: number, merge?: boolean) =>
    ({
      variant: 'packed',
      reader: 'pread-pool',
      threads,
      batch,
      rowsPerSec,
      ...(merge === false ? { merge } : {}),
    }) as GatherBenchResult;
  const results = [
    r(16, 144, 30000),
    r(16, 144, 20000, false),
    r(64, 144, 10000),
    r(64, 49152, 90000),
    r(64, 49152, 200000, false),
  ];
  pairMergeGains(results);
  assert.deepEqual(
    results.map((x) => x.mergeGain),
    [1.5, undefined, undefined, 0.45, undefined],
  );
  assert.deepEqual(recommendThreads(results), { threads: 64, variant: 'packed' });
});

test('cold is valid with O_DIRECT, eviction before every batch, or a read range larger than the page cache; not otherwise', () => {
  const limit = { bytes: 24 * GiB, from: 'MemTotal' };
  assert.deepEqual(coldVerdict({ direct: false, evictEveryBatch: false, readRangeBytes: 30 * GiB, limit }), {
    valid: true,
    reason: 'the read range (30.0 GiB) is larger than the page cache can hold (24.0 GiB, MemTotal)',
  });
  const small = coldVerdict({ direct: false, evictEveryBatch: false, readRangeBytes: 15 * GiB, limit });
  assert.equal(small.valid, false);
  assert.match(
    small.reason,
    /read range \(15\.0 GiB\) fits in the page cache \(24\.0 GiB, MemTotal\).*--evict-every-batch/,
  );
  assert.equal(coldVerdict({ direct: true, evictEveryBatch: false, readRangeBytes: GiB, limit }).valid, true);
  assert.equal(coldVerdict({ direct: false, evictEveryBatch: true, readRangeBytes: GiB, limit }).valid, true);
  assert.equal(
    coldVerdict({ direct: false, evictEveryBatch: false, readRangeBytes: GiB, limit: undefined }).valid,
    false,
  );
});

test('the page cache limit is MemTotal, lowered by the cgroup v2 or v1 memory limit of the process', () => {
  const root = tempDir();
  const put = (p: string, text: string) => {
    mkdirSync(join(root, p, '..'), { recursive: true });
    writeFileSync(join(root, p), text);
  };
  put('proc/meminfo', 'MemTotal:       24684084 kB\nMemFree:  1 kB\n');
  put('proc/self/cgroup', '0::/user.slice/bench\n');
  put('sys/fs/cgroup/user.slice/bench/memory.max', 'max\n');
  assert.deepEqual(pageCacheLimit(root), { bytes: 24684084 * 1024, from: 'MemTotal' });
  put('sys/fs/cgroup/user.slice/bench/memory.max', `${8 * GiB}\n`);
  assert.deepEqual(pageCacheLimit(root), { bytes: 8 * GiB, from: '/sys/fs/cgroup/user.slice/bench/memory.max' });
  // cgroup v1: the process's own group is not visible (a container), the namespaced root is.
  put('proc/self/cgroup', '4:memory:/process_api/abc\n3:cpuset:/\n');
  put('sys/fs/cgroup/memory/memory.limit_in_bytes', `${4 * GiB}\n`);
  assert.deepEqual(pageCacheLimit(root), { bytes: 4 * GiB, from: '/sys/fs/cgroup/memory/memory.limit_in_bytes' });
  put('sys/fs/cgroup/memory/memory.limit_in_bytes', '9223372036854771712\n');
  assert.deepEqual(pageCacheLimit(root), { bytes: 24684084 * 1024, from: 'MemTotal' });
  assert.equal(memTotalBytes('MemFree: 3 kB\n'), undefined);
  assert.equal(pageCacheLimit(join(root, 'nowhere')), undefined);
});

test("a page pack's read range covers its rows' whole pages; a sparse copy's, the weight and scale rows of its range", () => {
  const page = readRegions({
    kind: 'packed',
    layer: 1,
    path: 'p',
    start: 100,
    end: 131,
    dataOffset: 4096,
    stride: 264,
    rowBytes: 264,
    layout: 'page',
  });
  assert.deepEqual(page, [{ path: 'p', offset: 4096, length: 3 * 4096 }]); // 15 rows per page: 31 rows take 3 pages
  const dense = readRegions({
    kind: 'packed',
    layer: 1,
    path: 'p',
    start: 0,
    end: 31,
    dataOffset: 4096,
    stride: 264,
    rowBytes: 264,
    layout: 'dense',
  });
  assert.equal(regionBytes(dense), 31 * 264);
  const sparse = readRegions({
    kind: 'snapshot',
    layer: 1,
    rows: 1000,
    dim: 256,
    range: [200, 300],
    weight: { path: 'w', offset: 664 },
    scale: { path: 'w', offset: 664 + 256000 },
  } as never);
  assert.deepEqual(sparse, [
    { path: 'w', offset: 664 + 200 * 256, length: 100 * 256 },
    { path: 'w', offset: 664 + 256000 + 200 * 8, length: 100 * 8 },
  ]);
});

// The --cold runs themselves (coldValid false and why, --evict-every-batch making it valid,
// --merge-gain's twins) take seconds of benchmarking: test/long/bench-gather-cold.test.ts.
test('--evict-every-batch without --cold is exit 2, naming the fix', async () => {
  const dir = benchPack('page', 30);
  const bad = await cli(['bench', 'gather', dir, '--evict-every-batch', '--json']);
  assert.equal(bad.code, 2);
  assert.match(JSON.parse(bad.stderr).error.message, /--evict-every-batch is for cold runs: add --cold/);
});
