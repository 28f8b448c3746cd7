// Where preflight finds the model: the snapshot directory (for config.json and the shard
// headers) and the Engram directory a recipe points its containers at. Nothing here reads a
// shard; config.json is one small file.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { hfModelDir } from '../recipes/index.js';

export interface SnapshotSource {
  /** Host directory (or single .safetensors file). */
  dir: string;
  /** How it was found: the --snapshot flag, the recipe's SPARK_ENGRAM_DIR through its mounts,
   *  or the model id under the cluster's hf_cache (refs/main). */
  how: '--snapshot' | 'SPARK_ENGRAM_DIR' | 'hf_cache';
}

/** What the snapshot rules need from an opened snapshot. */
export interface SnapshotFacts {
  dir: string;
  revision?: string;
  shards: number;
  engram: { layer: number; rows: number; dim: number; rowBytes: number }[];
}

/** A checkpoint: an index, a single model.safetensors, or one .safetensors file. */
export function isSnapshotPath(path: string): boolean {
  if (path.endsWith('.safetensors')) return existsSync(path);
  return existsSync(join(path, 'model.safetensors.index.json')) || existsSync(join(path, 'model.safetensors'));
}

/** A packed Engram directory (its manifest is written last, so present = complete). */
export { isPackedDir as isPackDir } from '../engram/packed-manifest.js';

/**
 * The snapshot of `model` in a Hugging Face cache: hub/models--org--name/snapshots/<rev>, where
 * rev is refs/main, or the only snapshot present.
 */
export function hfSnapshotDir(hfCache: string, model: string): string | undefined {
  const base = hfModelDir(hfCache, model);
  try {
    const rev = readFileSync(join(base, 'refs', 'main'), 'utf8').trim();
    const dir = join(base, 'snapshots', rev);
    if (rev !== '' && existsSync(dir)) return dir;
  } catch {
    // no refs/main: fall through to the snapshots listing
  }
  try {
    const revs = readdirSync(join(base, 'snapshots')).filter((d) => statSync(join(base, 'snapshots', d)).isDirectory());
    return revs.length === 1 ? join(base, 'snapshots', revs[0]!) : undefined;
  } catch {
    return undefined;
  }
}

/** The revision of a snapshot directory under a Hugging Face cache (its directory name). */
export function revisionOf(dir: string): string | undefined {
  const m = /\/snapshots\/([0-9a-f]{7,64})\/?$/.exec(dir);
  return m?.[1];
}
