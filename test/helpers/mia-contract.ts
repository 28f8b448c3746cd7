// The Mia stack's packed shard as its format describes it, spelled out byte by byte for
// test/stacks/mia/mia-contract.test.ts and test/long/mia-contract-scenarios.test.ts: the floor
// split, the 48 header bytes, and a writer of the stack's own packer (no manifest, .partial,
// fsync, rename). Not taken from spark's encoder, so a drift on either side fails.
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { synthRow } from '../../src/synth/synth-rows.js';

/** The floor split, as the stack's reader computes it: lo = N*R//TP, hi = N*(R+1)//TP. */
export const floor = (n: number, r: number, tp: number): [number, number] => [
  Math.floor((n * r) / tp),
  Math.floor((n * (r + 1)) / tp),
];

/** The 48 header bytes the format describes, spelled out: "DSV41EN1", then five LE u64. */
export function headerBytes(layer: number, lo: number, hi: number, n: number): Buffer {
  const b = Buffer.alloc(48);
  Buffer.from([0x44, 0x53, 0x56, 0x31, 0x45, 0x4e, 0x34, 0x31]).copy(b, 0);
  [layer, lo, hi, n, 264].forEach((v, i) => b.writeBigUInt64LE(BigInt(v), 8 + i * 8));
  return b;
}

/** The stack's packer, as the format describes it: NAME.partial, every row, fsync, rename. */
export function writeStackPack(
  tables: readonly { layer: number; rows: number }[],
  dir: string,
  rank: number,
  world: number,
  range = floor,
): void {
  mkdirSync(dir, { recursive: true });
  for (const t of tables) {
    const [lo, hi] = range(t.rows, rank, world);
    const name = `engram-l${t.layer}-r${rank}of${world}.bin`;
    const fd = openSync(join(dir, `${name}.partial`), 'wx');
    const head = Buffer.alloc(4096);
    headerBytes(t.layer, lo, hi, t.rows).copy(head);
    writeSync(fd, head);
    for (let id = lo; id < hi; id++) writeSync(fd, synthRow(t.layer, id, 256));
    fsyncSync(fd);
    closeSync(fd);
    renameSync(join(dir, `${name}.partial`), join(dir, name));
  }
}
