// Pack requests and refusals for the pack tests.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { PackRequest } from '../../src/stacks/pack-engram.js';
import type { PackTable } from '../../src/pack/pack-io.js';
import { packRanges } from '../../src/pack/pack-ranges.js';
import { INDEX_FILE } from '../../src/engram/snapshot.js';
import { SparkError } from '../../src/errors/errors.js';

/** A request for rank `rank` of `world` (floor split) of the snapshot's tables; `over` wins. */
export function packRequest(
  snapshotDir: string,
  tables: PackTable[],
  out: string,
  over: Partial<PackRequest> = {},
): PackRequest {
  const rank = over.rank ?? 0;
  const world = over.world ?? 2;
  return {
    snapshotDir,
    index: join(snapshotDir, INDEX_FILE),
    tables,
    out,
    rank,
    world,
    split: 'floor',
    ranges: packRanges(tables, undefined, rank, world, 'floor'),
    layout: 'dense',
    threads: 3,
    chunkRows: 512,
    ...over,
  };
}

/** Awaits `p`, which must fail with a SparkError of `code`; returns it. */
export async function rejects(p: Promise<unknown>, code: string): Promise<SparkError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof SparkError, String(err));
    assert.equal(err.code, code, err.message);
    return err;
  }
  assert.fail(`expected ${code}`);
}
