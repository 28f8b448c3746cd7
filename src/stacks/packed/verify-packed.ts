// `spark verify` of a dense or page pack: the manifest's sanity against the model (manifest-check.ts),
// then every data file's size, header block and chunk checksums (verify-layers.ts), and the
// source snapshot's identity when it is given.
import { SparkError } from '../../errors/errors.js';
import type { ModelConfig } from '../../engram/config.js';
import type { VerifyReport, VerifyRequest } from '../../pack/verify-report.js';
import { checkSourceIdentity } from '../../pack/verify-source.js';
import { miaAbortsOnV1 } from '../mia/reader-verdict.js';
import { checkManifest } from './manifest-check.js';
import {
  MANIFEST_NAME as LEGACY_PACK_MANIFEST_NAME,
  PACK_MANIFEST_NAME,
  type PackedManifest,
} from './packed-manifest.js';
import { checkLayers } from './verify-layers.js';

export async function verifyPackedDir(
  req: VerifyRequest,
  dir: string,
  manifest: PackedManifest,
  manifestPath: string,
): Promise<VerifyReport> {
  const m = checkedManifest(manifest, manifestPath, req.source?.config);
  const report = await verifyPacked(req, dir, m, manifestPath);
  await checkSourceIdentity(report, m.source, req);
  report.ok = report.problems.length === 0;
  return report;
}

function checkedManifest(m: PackedManifest, path: string, config: ModelConfig | undefined): PackedManifest {
  const problems = checkManifest(m, config);
  if (problems.length > 0) {
    const more = problems.length > 1 ? ` (and ${problems.length - 1} more problems)` : '';
    throw new SparkError('E_PACK_MISMATCH', `${path}: ${problems[0]}${more}`, { path, problems });
  }
  return m;
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
