// Node-local copies as preflight sees them: whether a host directory holds one (a sparse copy's
// engram-local.json, a pack's spark-pack.json or version 1 engram-local.json), and the copy
// itself, read by the same code the wrapper and `spark engram-ranges` use. Run on the node (or
// on this machine against the node's manifests and headers, rebuilt by facts/rebuild.ts).
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { LocalCopy } from '../engram/layer-source.js';
import { loadLocalCopy } from '../stacks/local-copy.js';
import { COPY_MANIFESTS, readLocalDir } from '../stacks/local-dir.js';
import { checkManifest } from '../stacks/packed/manifest-check.js';
import { toSparkError, type SparkError } from '../errors/errors.js';

/** A directory holding a copy's manifest: a sparse copy (which has an index too) or a pack. */
export function hasCopyManifest(dir: string): boolean {
  return COPY_MANIFESTS.some((m) => existsSync(join(dir, m)));
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

/** The copy in `dir` with what verify would say of a pack's manifest beyond its reader. */
export async function inspectCopy(
  dir: string,
): Promise<{ copy: LocalCopy; manifestProblems: string[] } | { error: SparkError } | undefined> {
  const read = await readCopy(dir);
  if (!read || 'error' in read) return read;
  const manifestProblems: string[] = [];
  if (read.copy.kind === 'packed') {
    try {
      const local = await readLocalDir(dirname(read.copy.manifestPath));
      if (local.kind === 'packed') manifestProblems.push(...checkManifest(local.manifest));
    } catch (err) {
      return { error: toSparkError(err) };
    }
  }
  return { copy: read.copy, manifestProblems };
}
