// The Mia stack's read path re-implemented as a bench baseline (bench/baselines/mia-row-store):
// loaded from Python with ctypes as the stack's engine loads it, against the rows of the
// snapshot it was packed from, and its documented aborts, each in a child process.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, constants, openSync, truncateSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { packEngram } from '../../src/stacks/pack-engram.js';
import { packRanges } from '../../src/pack/pack-ranges.js';
import { synthRow } from '../../src/synth/synth-rows.js';
import { packageRoot } from '../../src/addon/index.js';
import { openSnapshot } from '../../src/engram/snapshot.js';
import { MIA_DRIVER, MIA_LIBRARY, MiaReader } from '../../src/gather-bench/mia-reader.js';
import { stampMiaHeaders } from '../../bench/lib/mia-header.js';
import { makeSnapshot } from '../helpers/synth.js';
import { readManifest } from '../helpers/packed.js';
import { needs } from '../helpers/external-tool.js';
import { python3 } from '../helpers/python3.js';
import { tempDir } from '../helpers/tmp.js';

const snap = makeSnapshot({ seed: 5 });
const tables = (await openSnapshot(snap.dir)).engram;
const out = join(tempDir(), 'pack');
await packEngram({
  snapshotDir: snap.dir,
  tables,
  out,
  rank: 1,
  world: 3,
  split: 'floor',
  ranges: packRanges(tables, undefined, 1, 3, 'floor'),
  layout: 'dense',
  threads: 2,
  chunkRows: 1024,
});
await stampMiaHeaders(out);
const layer = readManifest(out).layers[0];
const pack = join(out, layer.file);
const lib = join(packageRoot(), MIA_LIBRARY);
const driver = join(packageRoot(), MIA_DRIVER);

function directWorks(path: string): boolean {
  try {
    closeSync(openSync(path, constants.O_RDONLY | constants.O_DIRECT));
    return true;
  } catch {
    return false;
  }
}

// The engine's way in: ctypes.CDLL, the struct in the documented field order, numpy outputs.
const PY = String.raw`
import ctypes, json, sys, os
import numpy as np
lib_path, pack, layer, rows, lo, hi, budget = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:8])
ids = np.array(json.loads(sys.argv[8]), dtype=np.int64)
lib = ctypes.CDLL(lib_path, use_errno=True)
for name in ["row_store_open", "row_store_range", "row_store_attach_packed", "row_store_lookup", "row_store_stats", "row_store_close"]:
    getattr(lib, name)
lib.row_store_open.restype = ctypes.c_void_p
lib.row_store_open.argtypes = [ctypes.c_char_p] + [ctypes.c_uint64] * 4
lib.row_store_range.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64]
lib.row_store_attach_packed.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint64]
lib.row_store_stats.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64)]
lib.row_store_close.argtypes = [ctypes.c_void_p]
class Work(ctypes.Structure):
    _fields_ = [("store", ctypes.c_void_p), ("ids", ctypes.c_void_p), ("weights", ctypes.c_void_p), ("scales", ctypes.c_void_p), ("count", ctypes.c_uint64)]
# The checkpoint: the layer's snapshot shard (never read for owned rows once the pack is attached)
ck = sys.argv[9]
s = lib.row_store_open(ck.encode(), rows, 0, 0, budget)
assert s
lib.row_store_range(s, lo, hi)
attached = lib.row_store_attach_packed(s, pack.encode(), layer)
res = {"attached": attached, "absent": lib.row_store_attach_packed(s, (pack + ".missing").encode(), layer)}
def lookup(batch):
    w = np.full((len(batch), 256), 0xAA, dtype=np.uint8)
    sc = np.full((len(batch), 8), 0xAA, dtype=np.uint8)
    work = Work(s, batch.ctypes.data, w.ctypes.data, sc.ctypes.data, len(batch))
    lib.row_store_lookup(ctypes.byref(work))
    return np.concatenate([w, sc], axis=1)
first = lookup(ids)
again = lookup(ids)
lookup(ids[:0])
st = (ctypes.c_uint64 * 9)()
lib.row_store_stats(s, st)
res["rows"] = [r.tobytes().hex() for r in first]
res["same"] = bool((first == again).all())
res["stats"] = list(st)
lib.row_store_close(s)
print(json.dumps(res))
`;

function python(
  env: Record<string, string>,
  ids: number[],
  budget: number,
): { attached: number; absent: number; rows: string[]; same: boolean; stats: number[] } {
  // The checkpoint row_store_open wants: the snapshot's shard of this layer (weight and scale in it).
  const t = tables.find((x) => x.layer === layer.layer)!;
  const r = spawnSync(
    python3(),
    [
      '-c',
      PY,
      lib,
      pack,
      String(layer.layer),
      String(layer.rows),
      String(layer.start),
      String(layer.end),
      String(budget),
      JSON.stringify(ids),
      t.weight.file,
    ],
    {
      encoding: 'utf8',
      env: { ...process.env, ...env },
    },
  );
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

test(
  "the Mia baseline, loaded with ctypes: the snapshot's rows for owned ids, zeros outside [lo, hi), its cache and pool as configured",
  {
    skip:
      !directWorks(pack) && 'the temporary directory refuses O_DIRECT: the Mia reader would not attach (tested below)',
  },
  (t) => {
    if (!needs(t, 'numpy')) return;
    const { start: lo, end: hi } = layer;
    const mid = Math.floor((lo + hi) / 2);
    const owned = [
      lo,
      lo + 1,
      lo + 14,
      lo + 15,
      lo + 16,
      mid,
      mid,
      hi - 1,
      ...Array.from({ length: 40 }, (_, i) => lo + i * 7),
    ];
    const ids = [...owned, lo - 1, hi, 0, layer.rows - 1];
    // 100 KiB, 4 ways: 102400 / (272 * 4 + 1) = 94 sets, 376 slots.
    const r = python({ DSV41_IO_THREADS: '4', DSV41_CACHE_WAYS: '4', DSV41_RESIDENT_SCALES: '0' }, ids, 102400);
    assert.equal(r.attached, 1);
    assert.equal(r.absent, 0);
    ids.forEach((id, i) => {
      const want = id >= lo && id < hi ? synthRow(layer.layer, id, 256, 5) : Buffer.alloc(264);
      assert.equal(r.rows[i], want.toString('hex'), `id ${id}`);
    });
    assert.ok(r.same);
    const [hits, misses, reads, cacheBytes, slots, pinned, ways, threads, packed] = r.stats;
    const distinct = new Set(owned).size;
    assert.deepEqual([cacheBytes, slots, pinned, ways, threads, packed], [94 * (272 * 4 + 1), 376, 0, 4, 4, 1]);
    // One read per miss (packed); the second pass over the same ids hits (ids fall in distinct sets).
    assert.equal(reads, misses);
    assert.equal(hits + misses, 2 * owned.length);
    assert.ok(misses >= distinct && misses <= owned.length, `misses ${misses}`);
    // Ways clamped to 16, no pool below 2 threads, no cache without a budget; pinned scales when asked.
    const plain = python({ DSV41_IO_THREADS: '1', DSV41_CACHE_WAYS: '99', DSV41_RESIDENT_SCALES: '1' }, owned, 0);
    assert.deepEqual(plain.stats.slice(3), [0, 0, (hi - lo) * 8, 16, 1, 1]);
    assert.deepEqual(plain.rows, r.rows.slice(0, owned.length));
  },
);

test("the Mia baseline library exports the six row_store_* symbols and imports nothing of Node's", (t) => {
  if (!needs(t, 'binutils')) return;
  const syms = spawnSync('readelf', ['--dyn-syms', '-W', lib], { encoding: 'utf8' }).stdout;
  const defined = syms
    .split('\n')
    .filter((l) => / row_store_\w+$/.test(l) && !/ UND /.test(l))
    .map((l) => l.trim().split(/\s+/).pop());
  assert.deepEqual(defined.sort(), [
    'row_store_attach_packed',
    'row_store_close',
    'row_store_lookup',
    'row_store_open',
    'row_store_range',
    'row_store_stats',
  ]);
  assert.doesNotMatch(syms, /napi_|node_api_/);
});

function runDriver(args: string[], input?: Buffer): { status: number | null; signal: string | null; stderr: string } {
  const r = spawnSync(driver, args, { input: input ?? Buffer.alloc(0) });
  return { status: r.status, signal: r.signal, stderr: r.stderr.toString() };
}

const base = (p = pack, over: Record<string, number> = {}) => {
  const v = { layer: layer.layer, rows: layer.rows, lo: layer.start, hi: layer.end, ...over };
  return [
    '--pack',
    p,
    '--layer',
    String(v.layer),
    '--rows',
    String(v.rows),
    '--lo',
    String(v.lo),
    '--hi',
    String(v.hi),
  ];
};

test(
  'the Mia baseline aborts the process on a header that does not match, a short file, or an id outside [0, N)',
  { skip: !directWorks(pack) && 'the temporary directory refuses O_DIRECT' },
  () => {
    for (const [why, args] of [
      ['another layer', base(pack, { layer: layer.layer + 1 })],
      ['another range', base(pack, { lo: layer.start + 1 })],
      ['another N', base(pack, { rows: layer.rows + 1 })],
    ] as const) {
      const r = runDriver([...args]);
      assert.equal(r.signal, 'SIGABRT', `${why}: ${r.stderr}`);
      assert.match(r.stderr, /packed Engram shard does not match this rank's range; re-run the pack step/);
    }
    const short = join(tempDir(), 'short.bin');
    copyFileSync(pack, short);
    truncateSync(short, 4096 + (layer.end - layer.start - 1) * 264);
    assert.equal(runDriver(base(short)).signal, 'SIGABRT');
    // An id past the table (N) aborts; one inside the table but outside the range does not.
    const batch = (ids: number[]) => {
      const b = Buffer.alloc(8 + 8 * ids.length);
      b.writeBigUInt64LE(BigInt(ids.length));
      ids.forEach((id, i) => b.writeBigInt64LE(BigInt(id), 8 + 8 * i));
      return b;
    };
    const past = runDriver(base(), batch([layer.start, layer.rows]));
    assert.equal(past.signal, 'SIGABRT');
    assert.match(past.stderr, /outside the table/);
    assert.equal(runDriver(base(), batch([-1])).signal, 'SIGABRT');
    assert.equal(runDriver(base(), batch([0, layer.start])).status, 0);
    // Absent: not attached, said plainly (exit 3), no abort.
    const absent = runDriver(base(pack + '.missing'));
    assert.equal(absent.status, 3);
    assert.match(absent.stderr, /not attached/);
  },
);

test(
  'the bench driver over a pipe: the same rows through MiaReader, one read per miss',
  { skip: !directWorks(pack) && 'the temporary directory refuses O_DIRECT' },
  async () => {
    const { reader, stats } = await MiaReader.open({
      pack,
      layer: layer.layer,
      rows: layer.rows,
      lo: layer.start,
      hi: layer.end,
      threads: 3,
      budget: 0,
      ways: 4,
      echo: true,
    });
    assert.equal(stats.packed, true);
    assert.equal(stats.threads, 3);
    const ids = Array.from({ length: 30 }, (_, i) => layer.start + i * 11);
    const r = await reader.lookup(ids);
    assert.ok(r.ms >= 0 && r.cpuSeconds >= 0);
    ids.forEach((id, i) =>
      assert.ok(r.rows!.subarray(i * 264, (i + 1) * 264).equals(synthRow(layer.layer, id, 256, 5)), `id ${id}`),
    );
    const after = await reader.stats();
    assert.equal(after.misses, 30);
    assert.equal(after.reads, 30);
    await reader.close();
  },
);
