// What kind of node-local directory a path is, from its manifest alone:
//   sparse   engram-local.json whose `layers` is the overlay's {"L": [lo, hi]} object: the
//            overlay's sparse copy (spark pack --layout sparse, or the overlay's own tools);
//   packed   spark-pack.json (layouts dense and page), or the engram-local.json of format
//            version 1 as first shipped, whose `layers` is an array;
//   mia      no manifest, but files under the Mia stack's shard names (engram-l*-r*of*.bin):
//            the stack's own pack, or an interrupted spark pack (mia-dir.ts reads them);
//   none     no manifest: a snapshot (or nothing spark made).
// The manifest names differ so the overlay, which reads any engram-local.json as a sparse copy,
// never mistakes a dense or page pack for one.
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { SparkError } from '../errors/errors.js';
import { readTextIfExists } from '../files/read-optional.js';
import { manifestObject, MAX_MANIFEST_BYTES } from '../engram/manifest-fields.js';
import { PACK_MANIFEST_NAME, parsePackedManifest, type PackedManifest } from './packed/packed-manifest.js';
import { scanMiaShards, type MiaShardFile } from './mia/mia-dir.js';
import {
  hasSparseLayers,
  parseSparseManifest,
  SPARSE_MANIFEST_NAME,
  type SparseManifest,
} from './overlay/sparse-manifest.js';

/** The manifest of spark's own one-read layouts (dense, page). */
export { PACK_MANIFEST_NAME };
/** The name version 1 packs were first written under, read still. */
export const LEGACY_PACK_MANIFEST_NAME = SPARSE_MANIFEST_NAME;
/** The files whose presence makes a directory a node-local copy: a sparse copy's (which has an index too) and a pack's. */
export const COPY_MANIFESTS: readonly string[] = [SPARSE_MANIFEST_NAME, PACK_MANIFEST_NAME];

export type LocalDir =
  | { kind: 'sparse'; dir: string; manifestPath: string; manifest: SparseManifest }
  | { kind: 'packed'; dir: string; manifestPath: string; manifest: PackedManifest }
  | { kind: 'mia'; dir: string; shards: MiaShardFile[] }
  | { kind: 'none'; dir: string };

const MANIFEST_READ = { what: 'manifest', maxBytes: MAX_MANIFEST_BYTES };

/** Reads and checks whichever manifest `dir` holds; a malformed one is E_PACK_MANIFEST. */
export async function readLocalDir(dir: string): Promise<LocalDir> {
  // A file (one .safetensors) or a missing path holds no manifest.
  if (
    !(await stat(dir).then(
      (st) => st.isDirectory(),
      () => false,
    ))
  )
    return { kind: 'none', dir };
  const packPath = join(dir, PACK_MANIFEST_NAME);
  const packText = await readTextIfExists(packPath, MANIFEST_READ);
  if (packText !== undefined)
    return { kind: 'packed', dir, manifestPath: packPath, manifest: parsePackedManifest(packText, packPath) };
  const localPath = join(dir, SPARSE_MANIFEST_NAME);
  const localText = await readTextIfExists(localPath, MANIFEST_READ);
  if (localText === undefined) {
    const shards = scanMiaShards(dir);
    return shards.length > 0 ? { kind: 'mia', dir, shards } : { kind: 'none', dir };
  }
  const doc = manifestObject(localPath, localText);
  if (hasSparseLayers(doc))
    return { kind: 'sparse', dir, manifestPath: localPath, manifest: parseSparseManifest(localText, localPath) };
  if (Array.isArray((doc as { layers?: unknown } | null)?.layers)) {
    return { kind: 'packed', dir, manifestPath: localPath, manifest: parsePackedManifest(localText, localPath) };
  }
  throw new SparkError(
    'E_PACK_MANIFEST',
    `${localPath}: layers must be an object of "L": [lo, hi] (a sparse copy) or, in a version 1 pack, an array; re-run spark pack`,
    { path: localPath, key: 'layers' },
  );
}
