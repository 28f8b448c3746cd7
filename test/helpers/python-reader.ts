// Shared by test/python/python-reader.test.ts and test/long/python-reader-copies.test.ts: the
// Python reader run as a process, the dequantizer it must match, and a floor pack of rank 1 of 3.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { packEngram } from '../../src/stacks/pack-engram.js';
import { packRanges } from '../../src/pack/pack-ranges.js';
import { packageRoot } from '../../src/addon/index.js';
import type { EngramTable } from '../../src/engram/snapshot.js';
import { tempDir } from './tmp.js';

const reader = join(packageRoot(), 'python', 'spark_engram_reader.py');

/** spark's Python reader as a process: its exit code and output. */
export function python(args: string[]): { code: number; stdout: string; stderr: string } {
  const r = spawnSync('python3', [reader, ...args], { encoding: 'utf8' });
  if (r.error) throw r.error;
  return { code: r.status ?? 128, stdout: r.stdout, stderr: r.stderr };
}

/** F8_E4M3 (e4m3fn) times 2^(e - 127): the reference the Python dequantizer must match. */
export function dequant(row: Buffer, dim: number): number[] {
  const out: number[] = [];
  for (let c = 0; c < dim; c++) {
    const b = row[c];
    const e = (b >> 3) & 15;
    const m = b & 7;
    const mag = e === 0 ? (m / 8) * 2 ** -6 : (1 + m / 8) * 2 ** (e - 7);
    out.push((b & 0x80 ? -mag : mag) * 2 ** (row[dim + (c >> 5)] - 127));
  }
  return out;
}

/** Rank 1 of 3's floor pack of `tables` from the snapshot at `snapshotDir`. */
export async function packed(snapshotDir: string, tables: EngramTable[], layout: 'dense' | 'page'): Promise<string> {
  const out = join(tempDir(), 'pack');
  await packEngram({
    snapshotDir,
    tables,
    out,
    rank: 1,
    world: 3,
    split: 'floor',
    ranges: packRanges(tables, undefined, 1, 3, 'floor'),
    layout,
    threads: 2,
    chunkRows: layout === 'page' ? 15 * 64 : 1024,
  });
  return out;
}
