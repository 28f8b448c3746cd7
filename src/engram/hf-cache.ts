// The Hugging Face cache, as huggingface_hub lays it out: hub/models--org--name/ holding
// refs/<ref> (a commit hash), snapshots/<commit>/ (links into blobs/) and blobs/. The one
// place that knows this layout and picks a revision: `spark launch` (the model it serves),
// preflight (the snapshot it checks) and the snapshot reader (the revision it records).
import { readdir, stat } from 'node:fs/promises';
import { basename, dirname, posix } from 'node:path';
import { SparkError } from '../errors/errors.js';
import { readSmallText } from '../files/small-file.js';

/** A snapshot's name: the full 40-hex commit hash (huggingface_hub never shortens it). */
export const COMMIT = /^[0-9a-f]{40}$/;

/** The cache directory of a model id: `hub/models--org--name`. */
export function hfModelDir(hfCache: string, model: string): string {
  return posix.join(hfCache, 'hub', `models--${model.split('/').join('--')}`);
}

/** The snapshot directory of one revision. */
export function hfSnapshotPath(modelDir: string, revision: string): string {
  return posix.join(modelDir, 'snapshots', revision);
}

/** The revision of a snapshot directory (`…/snapshots/<commit>`), undefined for any other path. */
export function revisionOfSnapshotDir(dir: string): string | undefined {
  const name = basename(dir);
  return COMMIT.test(name) && basename(dirname(dir)) === 'snapshots' ? name : undefined;
}

/** The revision a path inside a model's cache directory names (`<modelDir>/snapshots/<rev>/…`). */
export function revisionInModelPath(path: string, modelDir: string): string | undefined {
  const base = posix.join(modelDir, 'snapshots') + '/';
  if (!path.startsWith(base)) return undefined;
  return path.slice(base.length).split('/')[0] || undefined;
}

/** Reads a small text file (a ref); undefined when it cannot be read. */
export type ReadText = (path: string) => Promise<string | undefined>;

export const readLocalText: ReadText = async (path) => {
  try {
    return await readSmallText(path, { what: 'ref file' });
  } catch {
    return undefined;
  }
};

export interface RevisionChoice {
  revision: string;
  /** Pinned by the caller, read from a ref, or the only snapshot present. */
  from: 'pinned' | 'refs' | 'only snapshot';
  /** The ref read (`refs/main`), when one was. */
  ref?: string;
}

export interface ResolveRevisionOptions {
  /** A commit hash, or a ref name under refs/ (a branch or tag); default `main`. */
  pinned?: string;
  /** How refs are read (the launcher reads them on the head node); default this machine. */
  readText?: ReadText;
  /** The model id, for messages. */
  model?: string;
}

/**
 * The revision of the model in `modelDir` that huggingface_hub would load: a pinned commit as
 * is; a ref name through refs/<name>; with nothing pinned and no refs/main (a copied cache),
 * the only snapshot present. Throws E_USAGE for a malformed ref name, E_SNAPSHOT otherwise.
 */
export async function resolveRevision(modelDir: string, options: ResolveRevisionOptions = {}): Promise<RevisionChoice> {
  const { pinned } = options;
  if (pinned !== undefined && COMMIT.test(pinned)) return { revision: pinned, from: 'pinned' };
  const refName = pinned ?? 'main';
  if (refName === '' || refName.split('/').some((p) => p === '' || p === '.' || p === '..')) {
    throw new SparkError(
      'E_USAGE',
      `revision "${refName}" is neither a commit hash nor a ref name; pass a 40-hex commit`,
    );
  }
  const refPath = posix.join(modelDir, 'refs', refName);
  const text = await (options.readText ?? readLocalText)(refPath);
  if (text !== undefined) {
    const rev = text.trim();
    if (!COMMIT.test(rev)) {
      throw new SparkError(
        'E_SNAPSHOT',
        `${refPath} holds "${rev.slice(0, 60)}", not a commit hash; download the model again, or pass --revision <commit>`,
        { path: refPath },
      );
    }
    return { revision: rev, from: 'refs', ref: `refs/${refName}` };
  }
  if (pinned === undefined) {
    const only = await onlySnapshot(posix.join(modelDir, 'snapshots'));
    if (only !== undefined) return { revision: only, from: 'only snapshot' };
  }
  throw new SparkError(
    'E_SNAPSHOT',
    `cannot resolve ${options.model ?? modelDir}@${refName}: ${refPath} is not readable; ` +
      `download the model into ${dirname(dirname(modelDir))}, or pass --revision <commit>`,
    { path: refPath },
  );
}

async function onlySnapshot(dir: string): Promise<string | undefined> {
  try {
    const revs: string[] = [];
    for (const n of await readdir(dir))
      if (COMMIT.test(n) && (await stat(posix.join(dir, n))).isDirectory()) revs.push(n);
    return revs.length === 1 ? revs[0] : undefined;
  } catch {
    return undefined;
  }
}
