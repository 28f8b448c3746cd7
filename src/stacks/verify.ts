// `spark verify` without the CLI. What the directory holds (local-dir.ts) picks the room that
// checks it (registry.ts): a sparse copy (overlay/verify-sparse.ts), the Mia stack's own shards
// without a manifest (mia/verify-mia.ts), a dense or page pack (packed/verify-packed.ts). Each
// checks what its format allows: manifest, sizes, header blocks, chunk checksums, and with a
// source snapshot the rows themselves, all of them or a sample. A data file that is a link out
// of the directory fails the check and is not read.
import { readdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import { SparkError } from '../errors/errors.js';
import { LEGACY_PACK_MANIFEST_NAME, PACK_MANIFEST_NAME, readLocalDir } from './local-dir.js';
import type { VerifyReport, VerifyRequest } from '../pack/verify-report.js';
import { formatOf } from './registry.js';

/** The directory's manifest, strictly parsed; any problem with it fails the check (exit 1). */
async function readManifests(dir: string) {
  try {
    return await readLocalDir(dir);
  } catch (err) {
    if (err instanceof SparkError && err.code === 'E_PACK_MANIFEST')
      throw new SparkError('E_PACK_MISMATCH', err.message, err.details);
    throw err;
  }
}

/** A directory without a manifest: missing, an interrupted pack, or not a pack at all. */
async function notACopy(dir: string): Promise<SparkError> {
  const names = await readdir(dir).catch(() => undefined);
  if (names === undefined) return new SparkError('E_FILE_NOT_FOUND', `${dir} does not exist`, { path: dir });
  const interrupted = names.some((n) => n.endsWith('.partial') || n.endsWith('.journal'));
  return new SparkError(
    'E_PACK_INCOMPLETE',
    `${dir} is not a pack or sparse copy: it has neither ${LEGACY_PACK_MANIFEST_NAME} nor ${PACK_MANIFEST_NAME}` +
      (interrupted ? ' (an interrupted pack: re-run the same spark pack command to resume it)' : ''),
    { path: dir },
  );
}

export async function verifyPack(req: VerifyRequest): Promise<VerifyReport> {
  const dir = resolve(req.dir);
  const local = await readManifests(dir);
  if (local.kind === 'none') throw await notACopy(dir);
  return formatOf(local).verify(req, dir, local);
}
