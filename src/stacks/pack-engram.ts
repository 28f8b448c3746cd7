// `spark pack` without the CLI: copies one rank's Engram rows into a node-local directory in the
// layout asked for, planned by the room that owns it (registry.ts: overlay/pack-sparse.ts,
// packed/pack-packed.ts), resumably, then writes the manifest last and atomically.
//
// Order of durability: the output directory is checked (never the snapshot, pack-out.ts),
// created (parents fsync'd) and locked; what it holds under the names the pack writes must be
// spark's own, or --force given (pack-owner.ts); every file is then written through its descriptor,
// never through a link. Each data file is written as .partial with a journal (native engine),
// fsync'd and renamed (when a complete pack is replaced, only once every file is whole, so the
// old pack stays usable until then); the sources' identity is re-checked; the manifest is
// written to a temporary file, fsync'd, renamed and the directory fsync'd; only then are the
// journals and a replaced pack's files removed. A directory without the manifest is not a pack.
import { resolve } from 'node:path';
import { SparkError } from '../errors/errors.js';
import { lockDirectory, type IoMode, type PackDirectory, type PackLayerResult } from '../addon/pack.js';
import { formatBytes } from '../terminal/format.js';
import { identifySources, pollWhile, recheckSources } from '../pack/pack-io.js';
import {
  checkOutPath,
  clearReplaced,
  makeOutDir,
  readExistingPack,
  removeStrayShards,
  supersedeManifests,
} from './pack-out.js';
import { ownership, refuseForeign } from './pack-owner.js';
import { layoutNamed } from './registry.js';
import {
  checkManifestSize,
  plannedRanges,
  sourceFiles,
  type LayoutPlan,
  type PackFileSummary,
  type PackRequest,
  type PackSummary,
  unitChunks,
} from './pack-plan.js';
import { checkSpace, fsInfo } from '../pack/pack-space.js';

export type {
  PackFileSummary,
  PackLayerSummary,
  PackProgressInfo,
  PackRange,
  PackRequest,
  PackSummary,
} from './pack-plan.js';

export async function packEngram(req: PackRequest): Promise<PackSummary> {
  const t0 = performance.now();
  if (req.out.trim() === '')
    throw new SparkError('E_USAGE', '--out is empty: name the node-local directory to write the pack to');
  const out = resolve(req.out);
  const ranges = plannedRanges(req);
  const layout = layoutNamed(req.layout);
  const files = sourceFiles(ranges, layout.copiesIndex ? req.index : undefined);
  const sources = await identifySources(files);
  const plan = (await layout.planner())(req, ranges, sources);
  checkManifestSize(plan);
  await checkOutPath(
    out,
    req.snapshotDir,
    files.map((f) => f.file),
  );
  await makeOutDir(out);
  const dir = lockDirectory(out);
  try {
    return await packLocked(req, plan, dir, sources, t0);
  } finally {
    dir.unlock();
  }
}

async function packLocked(
  req: PackRequest,
  plan: LayoutPlan,
  dir: PackDirectory,
  sources: Awaited<ReturnType<typeof identifySources>>,
  t0: number,
): Promise<PackSummary> {
  const target = await prepareTarget(req, plan, dir);
  if (target.kind === 'same') return packSummary(req, plan, dir, t0, { noop: true, ...target.summary });
  const { own, replacing, foreign, strays } = target;
  const { results, fileSummaries, copied } = await copyUnits(req, plan, dir, replacing, t0);
  // A snapshot that changed underneath is an error, not a pack.
  await recheckSources(sources);
  if (replacing) {
    // Every new file is whole: only now does the old pack stop being one.
    supersedeManifests(dir);
    for (const u of plan.units) dir.rename(`${u.file}.partial`, u.file);
  }
  dir.writeFile(plan.manifestName, plan.finish(dir, results));
  const removed = [...new Set([...strays, ...foreign, ...clearReplaced(dir, plan.files, own)])];
  return packSummary(req, plan, dir, t0, { noop: false, files: fileSummaries, bytesWritten: copied, removed });
}

function packSummary(
  req: PackRequest,
  plan: LayoutPlan,
  dir: PackDirectory,
  t0: number,
  r: { noop: boolean; files: PackFileSummary[]; bytesWritten: number; removed: string[] },
): PackSummary {
  return {
    out: dir.path,
    manifest: `${dir.path}/${plan.manifestName}`,
    rank: req.rank,
    world: req.world,
    split: req.split,
    layout: req.layout,
    noop: r.noop,
    resumed: r.files.some((f) => f.chunksKept > 0),
    bytes: plan.bytes,
    ...(plan.apparentBytes !== undefined ? { apparentBytes: plan.apparentBytes } : {}),
    bytesWritten: r.bytesWritten,
    seconds: (performance.now() - t0) / 1000,
    layers: plan.layers,
    files: r.files,
    io: {
      read: overallIo(r.files.map((f) => f.io.read)),
      write: overallIo(r.files.map((f) => f.io.write)),
    },
    removed: r.removed,
  };
}

/** Each file of the plan as a summary of a file nothing was done to (yet). */
function untouchedFiles(plan: LayoutPlan): PackFileSummary[] {
  return plan.units.map((u, i) => ({
    file: u.file,
    layers: u.layers,
    chunks: unitChunks(plan)[i],
    chunksKept: 0,
    chunksRejected: 0,
    chunksWritten: 0,
    journalDiscarded: false,
    io: { read: 'none', write: 'none' },
  }));
}

type PreparedTarget =
  | { kind: 'same'; summary: { files: PackFileSummary[]; bytesWritten: 0; removed: string[] } }
  | {
      kind: 'pack';
      own: ReturnType<typeof ownership>;
      replacing: boolean;
      foreign: string[];
      strays: string[];
    };

/**
 * The output directory made ready: a complete pack the same as this one is a no-op; one that
 * differs is refused without --force; foreign files, holes and space are checked before any
 * change; stray shards go and a pack that is not kept stops being one.
 */
async function prepareTarget(req: PackRequest, plan: LayoutPlan, dir: PackDirectory): Promise<PreparedTarget> {
  const existing = await readExistingPack(dir);
  const own = ownership(dir, existing);
  // Replacing a complete pack (--force): it stays usable, manifest and files, until the new one
  // is whole. The new files are finished as .partial beside the old ones and renamed over them
  // only at the end, so the disk must hold both, and a full disk or a kill leaves the old copy.
  let replacing = false;
  if (existing.kind !== 'none') {
    const d = await plan.difference(existing);
    if (d.kind === 'same') {
      const removed = clearReplaced(dir, plan.files, own);
      return { kind: 'same', summary: { files: untouchedFiles(plan), bytesWritten: 0, removed } };
    }
    if (d.kind === 'conflict' && !req.force) {
      throw new SparkError(
        'E_PACK_EXISTS',
        `${dir.path} already holds a complete pack that differs from this one (${d.why}); use another --out, or --force to replace it ` +
          '(the old pack stays usable until the new one is complete; a replacement that was interrupted resumes with the same --force command)',
        { path: dir.path },
      );
    }
    replacing = d.kind === 'conflict';
  }
  // Refusals that need no change to the directory come first: a refused run leaves it as it was.
  // A file under a name this pack writes that is not provably spark's is someone's data: it is
  // refused without --force; with it, it is replaced as a replaced pack's files are (a complete
  // one stays until the new file is whole), and named in `removed`.
  const foreign = own.foreign(plan);
  if (foreign.length > 0 && !req.force) refuseForeign(dir, foreign);
  if (foreign.some((name) => plan.units.some((u) => u.file === name))) replacing = true;
  if (plan.needsHoles) checkHoles(req, dir, plan);
  if (req.checkSpace !== false) {
    const { block } = await fsInfo(dir.path);
    const need = plan.space(block);
    await checkSpace(dir.path, need.files, need.extra, replacing);
  }
  // No file may stand under a name the Mia stack opens that its reader would abort on, or that
  // this pack writes with another header: those go before any work. A replaced pack that loses
  // one of its files that way is no pack from here on; otherwise it stays usable until the new
  // one is whole (below). A pack that is not whole (stale) is no pack from here either.
  const strays = removeStrayShards(dir, plan.shardHeaders, own);
  if (!replacing || strays.length > 0) supersedeManifests(dir);
  return { kind: 'pack', own, replacing, foreign, strays };
}

/** Every unit copied in turn (resuming what its journal proves), with progress over the whole pack. */
async function copyUnits(
  req: PackRequest,
  plan: LayoutPlan,
  dir: PackDirectory,
  replacing: boolean,
  t0: number,
): Promise<{ results: PackLayerResult[]; fileSummaries: PackFileSummary[]; copied: number }> {
  const totalBytes = plan.units.reduce((s, u) => s + u.bytes, 0);
  let doneBefore = 0;
  let copied = 0;
  const results: PackLayerResult[] = [];
  const fileSummaries: PackFileSummary[] = untouchedFiles(plan);
  for (const [i, unit] of plan.units.entries()) {
    const job = unit.start({
      dir,
      threads: req.threads,
      ...(req.rateLimit !== undefined ? { rateLimit: req.rateLimit } : {}),
      ...(req.syncBytes !== undefined ? { commitBytes: req.syncBytes } : {}),
      ...(req.dropSourceCache !== undefined ? { dropSourceCache: req.dropSourceCache } : {}),
      ...(req.testing?.faultAfterChunks !== undefined ? { faultAfterChunks: req.testing.faultAfterChunks } : {}),
      ...(req.testing?.directRefusal !== undefined ? { testDirectRefusal: req.testing.directRefusal } : {}),
      ...(replacing ? { finishAsPartial: true } : {}),
    });
    let kept = 0;
    const report = (): void => {
      const p = job.progress();
      if (p.phase === 'checking') kept = p.bytesDone;
      req.onProgress?.({
        unit: unit.label,
        unitIndex: i,
        unitCount: plan.units.length,
        phase: p.phase,
        bytesDone: doneBefore + p.bytesDone,
        bytesTotal: totalBytes,
        bytesCopied: copied + Math.max(0, p.bytesDone - kept),
        seconds: (performance.now() - t0) / 1000,
      });
    };
    const r = await pollWhile(job.promise, report, req.onProgress ? 250 : 0);
    results.push(r);
    doneBefore += unit.bytes;
    copied += r.bytesWritten;
    Object.assign(fileSummaries[i], {
      chunksKept: r.chunksKept,
      chunksRejected: r.chunksRejected,
      chunksWritten: r.chunksWritten,
      journalDiscarded: r.journalDiscarded,
      io: { read: r.readIo, write: r.writeIo },
    });
  }
  return { results, fileSummaries, copied };
}

/** One mode for several files: any page-cache copy shows; 'none' when nothing was copied. */
function overallIo(modes: IoMode[]): IoMode {
  if (modes.includes('buffered')) return 'buffered';
  return modes.includes('direct') ? 'direct' : 'none';
}

/** Refuses (exit 3) a filesystem that would allocate every byte of every sparse shard. */
function checkHoles(req: PackRequest, dir: PackDirectory, plan: LayoutPlan): void {
  const probe = dir.probeHoles(Boolean(req.testing?.fillHoleProbe));
  if (probe.allocated * 2 < probe.apparent) return;
  throw new SparkError(
    'E_NO_HOLES',
    `${dir.path} is on a filesystem that does not keep holes (a ${formatBytes(probe.apparent)} file with 4 KiB written ` +
      `took ${formatBytes(probe.allocated)}): the sparse copy would fill ${formatBytes(plan.apparentBytes ?? 0)} instead of ` +
      `${formatBytes(plan.bytes)}; pack onto ext4, xfs or btrfs, or use --layout dense`,
    { path: dir.path, apparent: probe.apparent, allocated: probe.allocated },
  );
}
