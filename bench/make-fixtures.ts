// Writes the benchmark inputs: a synth snapshot with one Engram layer (real data on disk) and
// packed directories (dense, page) of the same table. Usage:
//   node dist/bench/make-fixtures.js DIR [VOCAB]     (VOCAB 400000: ~2.5 GB per file)
import { join } from 'node:path';
import { makeBenchPack, makeBenchSnapshot } from './lib/fixtures.js';
import { synthSnapshotRows } from './lib/snapshot-rows.js';

const dir = process.argv[2] ?? '.tmp/bench';
const vocab = Number(process.argv[3] ?? 400000);
const t0 = Date.now();
const snap = makeBenchSnapshot(join(dir, 'snap'), vocab);
const rows = synthSnapshotRows(snap, 1);
makeBenchPack(join(dir, 'pack-dense'), 1, rows, 'dense');
makeBenchPack(join(dir, 'pack-page'), 1, rows, 'page');
console.log(`fixtures in ${dir}: layer 1, ${rows} rows, ${((Date.now() - t0) / 1000).toFixed(1)} s`);
