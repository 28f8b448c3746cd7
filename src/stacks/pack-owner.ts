// Whose the files in a pack's output directory are. spark pack replaces or removes, without
// being told to, only what it can prove is its own (docs/pack.md, "Files that are not spark's"):
//
//   - a data file (a shard, a page file) that a spark manifest in the directory names (the
//     pack's own, or a replaced one's being cleared away), or whose journal names it: the
//     journal's key ends with the device and inode of the file it was written for
//     (native/core/pack/pack_journal.h), so a finished file whose manifest was never written
//     is proven spark's, and a file copied or renamed there by anything else is not;
//   - NAME.partial, when NAME.journal names it the same way: spark creates a .partial and then
//     its journal, and writes no byte into the .partial before the journal is durable;
//   - NAME.journal, when it is a journal spark wrote (its magic and its key's checksum hold);
//   - a file the pack writes whole (the sparse copy's index), when it holds exactly the bytes
//     the pack would write there: nothing of anyone's is lost by writing it again.
//
// Anything else under a name the pack writes (the Mia stack's packer's shards, or its own
// NAME.partial, a user's file) is someone else's: the pack refuses, before it changes anything,
// and --force replaces it (listed in the summary's `removed`).
import { lstatSync } from 'node:fs';
import { join, sep } from 'node:path';
import { SparkError } from '../errors/errors.js';
import { crc32, type PackDirectory } from '../addon/pack.js';
import { LEGACY_PACK_MANIFEST_NAME, PACK_MANIFEST_NAME, type LocalDir } from './local-dir.js';
import { MAX_MANIFEST_BYTES } from '../engram/manifest-fields.js';
import { parsePackedManifest } from './packed/packed-manifest.js';
import { hasSparseLayers, parseSparseManifest, SPARSE_MANIFEST_NAME } from './overlay/sparse-manifest.js';
import type { LayoutPlan } from './pack-plan.js';
import { formatOf } from './registry.js';

/** Every manifest name a pack directory may hold, the one readers prefer first. */
export const MANIFEST_NAMES = [PACK_MANIFEST_NAME, SPARSE_MANIFEST_NAME] as const;
/** A manifest renamed so while its pack is being replaced (pack-out.ts). */
export const REPLACED_SUFFIX = '.replaced';

const PARTIAL = '.partial';
const JOURNAL = '.journal';

export interface Ownership {
  /** Whether what is at `name` is spark's to replace or remove (nothing there: true). */
  owns(name: string): boolean;
  /** The names the plan writes (its data files, their .partial and .journal, its whole files) that hold what is not spark's. */
  foreign(plan: Pick<LayoutPlan, 'units' | 'wholeFiles'>): string[];
}

/** The ownership of what `dir` holds, given the pack it already holds (readExistingPack). */
export function ownership(dir: PackDirectory, existing: LocalDir): Ownership {
  const named = manifestNamed(dir, existing);
  const owns = (name: string): boolean => {
    if (!present(dir, name)) return true;
    if (name.endsWith(JOURNAL)) return dir.journalClaim(name, name).journal;
    if (name.endsWith(PARTIAL)) {
      const file = name.slice(0, -PARTIAL.length);
      return dir.journalClaim(file + JOURNAL, name).namesFile;
    }
    return named.has(name) || dir.journalClaim(name + JOURNAL, name).namesFile;
  };
  return {
    owns,
    foreign(plan) {
      const out: string[] = [];
      for (const u of plan.units)
        for (const name of [u.file, u.file + PARTIAL, u.file + JOURNAL]) if (!owns(name)) out.push(name);
      for (const w of plan.wholeFiles) {
        if (!present(dir, w.name) || named.has(w.name)) continue;
        const bytes = dir.readFile(w.name, w.bytes + 1);
        if (!(bytes && bytes.length === w.bytes && crc32(bytes) === w.crc)) out.push(w.name);
      }
      return out;
    },
  };
}

/** Refuses (E_PACK_EXISTS, exit 2) a pack whose names hold files that are not spark's; nothing has been changed. */
export function refuseForeign(dir: PackDirectory, foreign: readonly string[]): never {
  const shown = foreign.length > 6 ? [...foreign.slice(0, 6), `and ${foreign.length - 6} more`] : foreign;
  throw new SparkError(
    'E_PACK_EXISTS',
    `${dir.path} holds what spark did not write under the names this pack writes: ${shown.join(', ')} ` +
      "(no spark manifest or journal proves them spark's: another tool's, such as the Mia stack's packer, or yours); " +
      'they are left as they are: use another --out, or --force to replace them ' +
      '(a complete file stays until the new pack is whole)',
    { path: dir.path },
  );
}

/** The files a manifest's pack consists of (data files, shards, the index). */
export function manifestFiles(name: string, text: string, path: string): string[] {
  if (name === SPARSE_MANIFEST_NAME) {
    const doc = JSON.parse(text) as unknown;
    if (hasSparseLayers(doc)) {
      const m = parseSparseManifest(text, path);
      // A copy made by other tools names no files: its shards are unknown, leave them.
      return m.spark ? [...m.spark.shards.map((s) => s.name), m.spark.index.name] : [];
    }
  }
  if (name === PACK_MANIFEST_NAME || name === LEGACY_PACK_MANIFEST_NAME)
    return parsePackedManifest(text, path).layers.map((l) => l.file);
  return [];
}

/** Every file a spark manifest in `dir` names: the pack's own, and those of a replaced pack (`.replaced`). */
function manifestNamed(dir: PackDirectory, existing: LocalDir): Set<string> {
  const named = new Set<string>();
  if (existing.kind !== 'none') for (const f of formatOf(existing).namedFiles(existing)) named.add(f);
  for (const name of MANIFEST_NAMES) {
    const text = dir.readFile(name + REPLACED_SUFFIX, MAX_MANIFEST_BYTES);
    if (text === undefined) continue;
    try {
      for (const f of manifestFiles(name, text.toString('utf8'), join(dir.path, name + REPLACED_SUFFIX))) named.add(f);
    } catch {
      // unreadable: it proves nothing
    }
  }
  for (const f of named) if (f.includes(sep)) named.delete(f); // a name outside the directory is nobody's here
  return named;
}

/** Whether anything is at `name` in dir (lstat: a link counts, and is refused by every later step). */
export function present(dir: PackDirectory, name: string): boolean {
  try {
    lstatSync(join(dir.path, name));
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}
