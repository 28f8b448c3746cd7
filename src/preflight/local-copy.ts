// Node-local copies as preflight sees them: whether a host directory holds one (a sparse copy's
// engram-local.json, a pack's spark-pack.json or version 1 engram-local.json), and the copy
// itself, read by the same code the wrapper and `spark engram-ranges` use.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadLocalCopy, type LocalCopy } from '../engram/layer-source.js';
import { PACK_MANIFEST_NAME } from '../engram/local-dir.js';
import { SPARSE_MANIFEST_NAME } from '../engram/sparse-manifest.js';
import { toSparkError, type SparkError } from '../errors.js';

/** A directory holding a copy's manifest: a sparse copy (which has an index too) or a pack. */
export function hasCopyManifest(dir: string): boolean {
  return existsSync(join(dir, PACK_MANIFEST_NAME)) || existsSync(join(dir, SPARSE_MANIFEST_NAME));
}

/** The copy in `dir`, undefined when there is none, or the error reading it. */
export async function readCopy(dir: string): Promise<{ copy: LocalCopy } | { error: SparkError } | undefined> {
  try {
    const copy = await loadLocalCopy(dir);
    return copy ? { copy } : undefined;
  } catch (err) {
    return { error: toSparkError(err) };
  }
}
