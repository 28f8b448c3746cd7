// In-process gather benchmarks (tinybench), warm page cache: which of the row store's I/O
// choices pay (sort + de-duplicate, page merging, POSIX_FADV_RANDOM), resident scales, the
// naive TypeScript loop, and scaling with threads under an injected per-read delay (NFS model).
//   node dist/bench/gather.js [FIXTURE_DIR] [THREADS]    (fixtures: bench/make-fixtures.ts)
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Bench } from 'tinybench';
import { drawBatch, idModel, rng } from '../src/gather-bench/bench-ids.js';
import { NaiveGather } from '../src/gather-bench/naive-gather.js';
import { warmCache } from '../src/gather-bench/page-cache.js';
import { type RowSource, type RowSourceOptions } from '../src/stacks/row-source.js';
import { openRowSource } from '../src/stacks/local-copy.js';
import { machineInfo } from './lib/processes.js';

const dir = process.argv[2] ?? '.tmp/bench';
const threads = Number(process.argv[3] ?? 64);
const time = Number(process.env.BENCH_MS ?? 1500);

interface Row {
  case: string;
  batch: number;
  rowsPerSec: number;
  readsPerRow: number;
  samples: number;
}
const rows: Row[] = [];

async function open(sub: string, o: RowSourceOptions): Promise<RowSource> {
  return openRowSource(join(dir, sub), { layers: [1], ...o });
}

async function ablation(batch: number): Promise<void> {
  const probe = await open('pack-page', { threads: 1 });
  const model = idModel(probe.tables[0].rows, 0, probe.tables[0].rows);
  await probe.close();
  const random = rng(42);
  const pool = Array.from({ length: 8 }, () => drawBatch(model, batch, random));
  const cases: [string, string, RowSourceOptions][] = [
    ['packed page (default)', 'pack-page', {}],
    ['packed page, no dedup/sort', 'pack-page', { dedup: false }],
    ['packed page, no merge', 'pack-page', { merge: false }],
    ['packed page, no fadvise', 'pack-page', { fadviseRandom: false }],
    ['packed dense (default)', 'pack-dense', {}],
    ['snapshot (default)', 'snap', {}],
    ['snapshot, no merge', 'snap', { merge: false }],
    ['snapshot+scales', 'snap', { residentScales: true }],
  ];
  const bench = new Bench({ time, warmup: true, warmupTime: 200, throws: true });
  const sources: RowSource[] = [];
  for (const [name, sub, o] of cases) {
    const src = await open(sub, { threads, ...o });
    sources.push(src);
    let i = 0;
    bench.add(name, async () => {
      await src.store.gather(1, pool[i++ % pool.length]);
    });
  }
  const naive = await NaiveGather.open(sources[5].specs[0]);
  let k = 0;
  bench.add('naive TypeScript (snapshot, fs.read per piece)', async () => {
    await naive.gather(pool[k++ % pool.length]);
  });
  await bench.run();
  bench.tasks.forEach((t, idx) => {
    const r = t.result as { throughput?: { mean: number }; latency?: { samplesCount?: number; samples?: number[] } };
    const src = sources[idx];
    const s = src?.store.stats();
    rows.push({
      case: t.name,
      batch,
      rowsPerSec: (r.throughput?.mean ?? 0) * batch,
      readsPerRow: s ? s.reads / Math.max(1, s.rows) : batch === 0 ? 0 : 2,
      samples: r.latency?.samplesCount ?? r.latency?.samples?.length ?? 0,
    });
  });
  await naive.close();
  for (const s of sources) await s.close();
}

async function delayScaling(): Promise<void> {
  const probe = await open('pack-dense', { threads: 1 });
  const model = idModel(probe.tables[0].rows, 0, probe.tables[0].rows);
  await probe.close();
  const ids = drawBatch(model, 4096, rng(5));
  for (const t of [1, 8, 16, 32, 64, 96]) {
    const src = await open('pack-dense', { threads: t, faults: { delayUs: 1000 } });
    const t0 = performance.now();
    let n = 0;
    while (performance.now() - t0 < time) {
      await src.store.gather(1, ids);
      n += ids.length;
    }
    const s = src.store.stats();
    rows.push({
      case: `packed dense, 1 ms per read, ${t} threads`,
      batch: ids.length,
      rowsPerSec: n / ((performance.now() - t0) / 1000),
      readsPerRow: s.reads / s.rows,
      samples: s.batches,
    });
    await src.close();
  }
}

for (const sub of ['snap', 'pack-dense', 'pack-page']) {
  const src = await open(sub, { threads: 1 });
  for (const f of new Set(src.files.map((x) => x.path))) await warmCache(f);
  await src.close();
}
for (const b of [144, 49152]) await ablation(b);
await delayScaling();
const lines = ['| case | batch | rows/s | reads/row | samples |', '|---|---|---|---|---|'];
for (const r of rows)
  lines.push(`| ${r.case} | ${r.batch} | ${Math.round(r.rowsPerSec)} | ${r.readsPerRow.toFixed(2)} | ${r.samples} |`);
console.log(`warm page cache, ${threads} threads, ${time} ms per case; ${JSON.stringify(machineInfo())}`);
console.log(lines.join('\n'));
mkdirSync('bench/out', { recursive: true });
writeFileSync(
  'bench/out/gather.json',
  JSON.stringify({ machine: machineInfo(), threads, time, cache: 'warm', rows }, null, 2),
);
