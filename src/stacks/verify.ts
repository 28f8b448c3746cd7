// `spark verify` without the CLI. Which checks run depends on what the directory holds
// (engram/local-dir.ts): a sparse copy is checked by verify-sparse.ts, the Mia stack's own
// shards without a manifest by verify-mia.ts; a dense/page pack here (each layer in verify-layers.ts): the
// manifest's sanity (format, ranges inside their tables and matching the split it claims,
// entries consistent with the layout), every data file's size and header block, every chunk
// checksum (native, parallel), and with a source snapshot the rows themselves, all of them or
// a sample. A data file that is a link out of the directory fails the check and is not read.
import { readdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import { SparkError } from '../errors/errors.js';
import { LEGACY_PACK_MANIFEST_NAME, PACK_MANIFEST_NAME, readLocalDir } from './local-dir.js';
import { miaAbortsOnV1 } from './pack-verdict.js';
import type { PackedManifest } from './packed/packed-manifest.js';
import { checkManifest } from './packed/manifest-check.js';
import type { ModelConfig } from '../engram/config.js';
import type { VerifyReport, VerifyRequest } from '../pack/verify-report.js';
import { verifySparse } from './overlay/verify-sparse.js';
import { checkSourceIdentity } from '../pack/verify-source.js';
import { checkLayers } from './packed/verify-layers.js';
import { verifyMia } from './mia/verify-mia.js';

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

function checkedManifest(m: PackedManifest, path: string, config: ModelConfig | undefined): PackedManifest {
  const problems = checkManifest(m, config);
  if (problems.length > 0) {
    const more = problems.length > 1 ? ` (and ${problems.length - 1} more problems)` : '';
    throw new SparkError('E_PACK_MISMATCH', `${path}: ${problems[0]}${more}`, { path, problems });
  }
  return m;
}

export async function verifyPack(req: VerifyRequest): Promise<VerifyReport> {
  const dir = resolve(req.dir);
  const local = await readManifests(dir);
  if (local.kind === 'none') throw await notACopy(dir);
  if (local.kind === 'mia') {
    return verifyMia(req, dir, local.shards);
  }
  const report =
    local.kind === 'sparse'
      ? await verifySparse({ ...req, dir, manifest: local.manifest })
      : await verifyPacked(
          req,
          dir,
          checkedManifest(local.manifest, local.manifestPath, req.source?.config),
          local.manifestPath,
        );
  const recorded = local.kind === 'sparse' ? local.manifest.spark?.source : local.manifest.source;
  await checkSourceIdentity(report, recorded, req);
  report.ok = report.problems.length === 0;
  return report;
}

async function verifyPacked(
  req: VerifyRequest,
  dir: string,
  m: PackedManifest,
  manifestPath: string,
): Promise<VerifyReport> {
  const t0 = performance.now();
  const report: VerifyReport = {
    dir,
    kind: 'packed',
    ok: true,
    rank: m.rank,
    world: m.world,
    split: m.split,
    checked: [
      `${manifestPath.endsWith(PACK_MANIFEST_NAME) ? PACK_MANIFEST_NAME : `${LEGACY_PACK_MANIFEST_NAME} (as first shipped)`}, format version ${m.version}`,
      'data file sizes and header blocks',
      'chunk checksums',
    ],
    layers: [],
    // Version 1: every check below may pass, and still the Mia stack cannot use the pack.
    problems: m.version === 1 ? [miaAbortsOnV1(dir, m)] : [],
    bytesRead: 0,
    seconds: 0,
  };
  if (req.source)
    report.checked.push(req.rows === 'full' ? 'every row against the source' : 'a sample of rows against the source');
  await checkLayers(req, dir, m, report, t0);
  return report;
}
