// The snapshot rules' view of an opened snapshot. The one reader of shard headers is
// src/engram/snapshot.ts (openSnapshot); this adapter keeps the rules independent of it.
import type { SnapshotFacts } from './sources.js';

/**
 * Opens the snapshot at `dir` (validating the index, every shard header and each file's size)
 * and returns the facts the rules need; throws the reader's SparkError on a bad snapshot.
 * Undefined while no snapshot reader is available in this build.
 */
export async function openSnapshotFacts(dir: string): Promise<SnapshotFacts | undefined> {
  void dir;
  return undefined;
}
