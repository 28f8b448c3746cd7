// The snapshot rules' view of an opened snapshot, through the one reader of shard headers
// (src/engram/snapshot.ts). Loaded on first use, so a preflight that reads no snapshot never
// loads the reader or the native addon.
import type { SnapshotFacts } from '../preflight-api/types.js';

/**
 * Opens the snapshot at `dir`, validating the index, every shard header and each file's size
 * against its header, and returns what the rules need. Throws the reader's SparkError
 * (E_SHARD_MISSING, E_SHARD_TRUNCATED, E_INDEX_*, E_SAFETENSORS_*, E_ENGRAM_*) on a bad snapshot.
 */
export async function openSnapshotFacts(dir: string): Promise<SnapshotFacts> {
  const { openSnapshot } = await import('../engram/snapshot.js');
  const s = await openSnapshot(dir);
  const facts: SnapshotFacts = {
    dir: s.dir,
    shards: s.shards.length,
    engram: s.engram.map((t) => ({ layer: t.layer, rows: t.rows, dim: t.dim, rowBytes: t.rowBytes })),
  };
  if (s.revision !== undefined) facts.revision = s.revision;
  return facts;
}
