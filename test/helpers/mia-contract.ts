// The Mia stack's packed shard as its format describes it, spelled out byte by byte for
// test/stacks/mia/mia-contract.test.ts and test/long/mia-contract-scenarios.test.ts: the floor
// split, the 48 header bytes, a writer of the stack's own packer (no manifest, .partial,
// fsync, rename), and the check of spark's dense packs against them. Not taken from spark's
// encoder, so a drift on either side fails.
import assert from 'node:assert/strict';
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { synthRow } from '../../src/synth/synth-rows.js';
import { packEngram } from '../../src/stacks/pack-engram.js';
import type { EngramTable } from '../../src/engram/snapshot.js';
import { packDirVerdict } from '../../src/stacks/mia/reader-verdict.js';
import { packRequest } from './pack-request.js';
import { tempDir } from './tmp.js';

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

/**
 * Every rank of `world`'s dense pack is the Mia shard: for both layers the header, the zeros
 * after it, the size, the name and the rows at both ends of the floor range; and the reader
 * attaches each.
 */
export async function checkDenseShards(snapDir: string, tables: EngramTable[], world: number): Promise<void> {
  for (let rank = 0; rank < world; rank++) {
    const out = join(tempDir(), `w${world}r${rank}`);
    await packEngram(packRequest(snapDir, tables, out, { rank, world, layout: 'dense' }));
    for (const t of tables) {
      const [lo, hi] = floor(t.rows, rank, world);
      const data = readFileSync(join(out, `engram-l${t.layer}-r${rank}of${world}.bin`));
      const where = `layer ${t.layer} rank ${rank} of ${world}`;
      assert.deepEqual(data.subarray(0, 48), headerBytes(t.layer, lo, hi, t.rows), where);
      assert.ok(
        data.subarray(48, 4096).every((b) => b === 0),
        `${where}: bytes 48-4095 are zero`,
      );
      assert.equal(data.length, 4096 + (hi - lo) * 264, where);
      for (const id of [lo, lo + 1, hi - 2, hi - 1]) {
        const at = 4096 + (id - lo) * 264;
        assert.deepEqual(data.subarray(at, at + 264), synthRow(t.layer, id, 256), `${where}: row ${id}`);
      }
    }
    const v = await packDirVerdict(out);
    assert.equal(v.kind, 'spark-v2-dense');
    assert.deepEqual(
      v.shards.map((s) => [s.file, s.miaReader, s.exactSize]),
      tables.map((t) => [`engram-l${t.layer}-r${rank}of${world}.bin`, 'attach', true]),
    );
  }
}
