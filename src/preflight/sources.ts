// Where preflight finds the model: the snapshot directory (for config.json and the shard
// headers) and the Engram directory a recipe points its containers at. Nothing here reads a
// shard; config.json is one small file.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { hfModelDir, hfSnapshotPath, resolveRevision } from '../engram/hf-cache.js';
import { hostPath, type EffectiveEnv, type HostPath } from '../recipes/index.js';
import type { SnapshotSource } from '../preflight-api/types.js';
import { hasCopyManifest } from './local-copy.js';

/** A checkpoint: an index, a single model.safetensors, or one .safetensors file. */
export function isSnapshotPath(path: string): boolean {
  if (path.endsWith('.safetensors')) return existsSync(path);
  return existsSync(join(path, 'model.safetensors.index.json')) || existsSync(join(path, 'model.safetensors'));
}

/** A packed Engram directory (its manifest is written last, so present = complete). */
export { isPackedDir as isPackDir } from '../stacks/packed/packed-manifest.js';

export interface SourceInputs {
  /** --snapshot, relative to cwd. */
  snapshot?: string;
  /** The snapshot a launch serves, resolved once by the launcher. */
  served?: string;
  model: string;
  env: EffectiveEnv;
  hfCache?: string;
  toHost(containerPath: string): HostPath | undefined;
  home: string;
  cwd: string;
}

/** The snapshot preflight checks, in that order of precedence; undefined when none is on this node. */
export async function findSnapshotSource(i: SourceInputs): Promise<SnapshotSource | undefined> {
  if (i.snapshot !== undefined) return { dir: resolve(i.cwd, i.snapshot), how: '--snapshot' };
  if (i.served !== undefined) return existsSync(i.served) ? { dir: i.served, how: 'launch' } : undefined;
  const engramDir = i.env.get('SPARK_ENGRAM_DIR')?.value;
  const mapped = engramDir ? i.toHost(engramDir) : undefined;
  // A node-local copy under SPARK_ENGRAM_DIR is not the snapshot: its rules read its manifest.
  if (mapped && isSnapshotPath(mapped.host) && !hasCopyManifest(mapped.host))
    return { dir: mapped.host, how: 'SPARK_ENGRAM_DIR' };
  if (i.hfCache === undefined) return undefined;
  const modelDir = hfModelDir(hostPath(i.hfCache, i.home, i.cwd), i.model);
  try {
    const dir = hfSnapshotPath(modelDir, (await resolveRevision(modelDir)).revision);
    return existsSync(dir) ? { dir, how: 'hf_cache' } : undefined;
  } catch {
    return undefined; // no snapshot of the model in this cache: the rules say what they could not check
  }
}
