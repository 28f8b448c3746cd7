// The output directory of `spark pack`: where it may be, how it is created, what it already
// holds, and how a replaced pack's files are cleared away.
//
// Where: never the snapshot itself or inside it, and never a directory that holds (through
// the snapshot's links) a file the pack reads: the sparse layout writes shards under their
// original names, and a rename there would land on a source file. The snapshot inside --out is
// fine: nothing is written into it.
//
// Replacing a pack: its manifest is renamed to `<manifest>.replaced` (the directory is then no
// pack, as during any pack): a pack whose files are gone, before the copy; a complete pack
// (--force), only once every new file is whole (pack.ts), so it stays usable until then. Once
// the new manifest has landed, the replaced pack's files that the new one does not use are
// removed, then the `.replaced` file. A crash in between leaves `.replaced`, and the next run
// finishes the cleanup.
import { realpath, stat } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep, isAbsolute, basename } from 'node:path';
import { SparkError, usageError } from '../errors/errors.js';
import { makeWritableDir } from '../files/writable-dir.js';
import type { PackDirectory } from '../addon/pack.js';
import { readLocalDir, type LocalDir } from './local-dir.js';
import { MAX_MANIFEST_BYTES } from '../engram/manifest-fields.js';
import { fsyncDir } from '../pack/pack-io.js';
import { SPARSE_MANIFEST_NAME } from './overlay/sparse-manifest.js';
import { INDEX_FILE } from '../engram/snapshot.js';
import { readShardHead, scanMiaShards } from './mia/mia-dir.js';
import { manifestFiles, MANIFEST_NAMES, present, REPLACED_SUFFIX, type Ownership } from './pack-owner.js';

/** The real path of `p`, or of its nearest existing ancestor joined with the rest. */
async function realish(p: string): Promise<string> {
  const rest: string[] = [];
  let at = resolve(p);
  for (;;) {
    try {
      return join(await realpath(at), ...rest.reverse());
    } catch {
      const up = dirname(at);
      if (up === at) return resolve(p);
      rest.push(basename(at));
      at = up;
    }
  }
}

function inside(child: string, parent: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/** Refuses (exit 2) an --out where a write could land on the snapshot's files. */
export async function checkOutPath(out: string, snapshotDir: string, sourceFiles: string[]): Promise<void> {
  if (out.trim() === '') throw usageError('--out is empty: name the node-local directory to write the pack to');
  const realOut = await realish(out);
  const realSnap = await realish(snapshotDir);
  if (inside(realOut, realSnap)) {
    throw usageError(
      `--out ${out} is ${realOut === realSnap ? 'the snapshot directory' : `inside the snapshot ${snapshotDir}`}` +
        `${realOut !== resolve(out) ? ` (really ${realOut})` : ''}: a pack there could overwrite the snapshot's own files; ` +
        'pack to a node-local directory outside the snapshot',
      { path: out },
    );
  }
  for (const f of sourceFiles) {
    const real = await realish(f);
    if (dirname(real) === realOut) {
      throw usageError(
        `--out ${out} holds ${real}, which the snapshot's ${basename(f)} links to: a pack there could overwrite it; use another --out`,
        { path: out },
      );
    }
  }
}

/** mkdir -p, then fsync of the parent of every directory it created, so the path survives a crash. */
export async function makeOutDir(out: string): Promise<void> {
  const missing: string[] = [];
  for (let at = out; ; at = dirname(at)) {
    const st = await stat(at).catch((err: NodeJS.ErrnoException) =>
      err.code === 'ENOENT' ? undefined : Promise.reject(err),
    );
    if (st) {
      if (!st.isDirectory()) throw usageError(`--out ${out}: ${at} exists and is not a directory`, { path: at });
      break;
    }
    missing.push(at);
    if (dirname(at) === at) break;
  }
  // The real errno (EROFS, EACCES), never a later "not enough space" on a read-only disk.
  await makeWritableDir(out);
  for (const d of missing) await fsyncDir(dirname(d));
}

/**
 * The pack the locked directory already holds, read as readers read it (readLocalDir), after
 * refusing a link at any manifest name: a link there would be read, then renamed or removed.
 */
export async function readExistingPack(dir: PackDirectory): Promise<LocalDir> {
  for (const name of MANIFEST_NAMES) dir.readFile(name, MAX_MANIFEST_BYTES);
  try {
    return await readLocalDir(dir.path);
  } catch (err) {
    const why = err instanceof SparkError ? err.message : String(err);
    throw new SparkError(
      'E_PACK_EXISTS',
      `${why}; it is not a manifest this spark can replace safely: remove it or use another --out`,
      {
        path: dir.path,
      },
    );
  }
}

/**
 * Renames every manifest present to `<name>.replaced`: from here on the directory is no pack.
 * A replaced sparse copy's index goes too, so that the overlay cannot take the half-replaced
 * directory for a full snapshot (an index and shards, no manifest).
 */
export function supersedeManifests(dir: PackDirectory): void {
  for (const name of MANIFEST_NAMES) {
    const text = dir.readFile(name, MAX_MANIFEST_BYTES);
    if (text === undefined) continue;
    dir.writeFile(name + REPLACED_SUFFIX, text);
    dir.remove(name);
    if (name === SPARSE_MANIFEST_NAME) dir.remove(INDEX_FILE);
  }
}

/**
 * Before a pack's work begins: removes every file under a Mia shard name that the Mia reader
 * would abort on or that this pack would not leave there as it is, of those it may remove. A
 * name this pack writes keeps its file only when the header block is byte for byte the new one
 * (the engine then takes it over through its journal, or replaces it by the rename of a
 * complete file); whoever wrote it, it was proven spark's or --force was given before this
 * (pack-owner.ts). A name it does not write keeps its file when it is a complete, sane shard of
 * its own name (another rank's, say, cleared later with the replaced pack's files if it was one
 * of them), or when it is not spark's: another tool's files there are left alone. Returns the
 * names removed.
 */
export function removeStrayShards(dir: PackDirectory, writes: ReadonlyMap<string, Buffer>, own: Ownership): string[] {
  const removed: string[] = [];
  for (const shard of scanMiaShards(dir.path)) {
    const want = writes.get(shard.name);
    let keep = false;
    if (want) {
      const head = readShardHead(join(dir.path, shard.name));
      keep = !('problem' in head) && head.block.equals(want);
    } else {
      keep = shard.problem === undefined || !own.owns(shard.name);
    }
    if (keep) continue;
    dir.remove(shard.name); // a link there is refused, never followed
    removed.push(shard.name);
  }
  return removed;
}

/**
 * After the new manifest has landed: removes the journals of the new pack's files, then every
 * replaced pack's files that the new pack does not use (with their .partial and .journal, when
 * those are spark's), then the `.replaced` manifests. Returns the names of the replaced pack's
 * files removed.
 */
export function clearReplaced(dir: PackDirectory, keep: string[], own: Ownership): string[] {
  const kept = new Set(keep);
  const removed: string[] = [];
  const drop = (name: string, report = true): void => {
    if (!present(dir, name) || !own.owns(name)) return;
    dir.remove(name); // a link or hard-linked file there is refused, never followed
    if (report) removed.push(name);
  };
  for (const f of keep) drop(`${f}.journal`, false);
  for (const name of MANIFEST_NAMES) {
    const replaced = name + REPLACED_SUFFIX;
    if (!present(dir, replaced)) continue;
    let files: string[] = [];
    try {
      files = manifestFiles(
        name,
        dir.readFile(replaced, MAX_MANIFEST_BYTES)!.toString('utf8'),
        join(dir.path, replaced),
      );
    } catch {
      files = []; // unreadable: its files cannot be known; the manifest itself still goes
    }
    for (const f of files) {
      if (kept.has(f) || MANIFEST_NAMES.includes(f as (typeof MANIFEST_NAMES)[number]) || f.includes(sep)) continue;
      for (const n of [f, `${f}.partial`, `${f}.journal`]) drop(n);
    }
    dir.remove(replaced);
    removed.push(replaced);
  }
  return removed;
}
