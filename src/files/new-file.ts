// A file spark writes for the user (a chart, an entrypoint script, a converted recipe, a copy of
// an engine library, a synthetic snapshot's files): created under a name of its own beside the
// target with O_CREAT|O_EXCL|O_NOFOLLOW, so a link planted beside the target is never written
// through, synced, then renamed over the target, so a reader never sees half a file.
//
// Whatever fails after the temporary file exists (a write, the sync, or the rename itself: the
// target is a directory, say), that file is removed before the error is passed on: a failed
// write leaves nothing behind, and a retry adds nothing. A name the open refused (a link
// planted there) is never removed: it is not spark's.
import { closeSync, constants, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';

/** The temporary name a write of `path` by this process uses (beside it, in its directory). */
export function partialName(path: string): string {
  return `${path}.${process.pid}.partial`;
}

/** Writes `data` as the file `path` (created or replaced whole, never through a link). */
export function writeNewFile(path: string, data: string | Uint8Array, mode = 0o644): void {
  writeNewFileWith(path, mode, (fd) => {
    const bytes = typeof data === 'string' ? Buffer.from(data) : data;
    for (let at = 0; at < bytes.length;) at += writeSync(fd, bytes, at, bytes.length - at);
  });
}

/**
 * Creates `path` from what `fill` writes into the descriptor of the temporary file; `fill`
 * may write at any offset and truncate. Errors of the write name the target (Node leaves the
 * path out of errors on descriptors); a refused rename names the target, not the temporary file.
 */
export function writeNewFileWith(path: string, mode: number, fill: (fd: number) => void): void {
  const partial = partialName(path);
  const fd = openSync(partial, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
  let done = false;
  try {
    try {
      fill(fd);
      fsyncSync(fd);
    } catch (err) {
      throw namingTarget(err, path);
    } finally {
      closeSync(fd);
    }
    try {
      renameSync(partial, path);
    } catch (err) {
      throw namingTarget(err, path);
    }
    done = true;
  } finally {
    if (!done) rmSync(partial, { force: true });
  }
}

/** A Node error about the temporary file (or a descriptor) restated as about the target. */
function namingTarget(err: unknown, path: string): unknown {
  const e = err as NodeJS.ErrnoException & { dest?: unknown };
  if (!(err instanceof Error) || typeof e.code !== 'string' || typeof e.syscall !== 'string') return err;
  e.path = path;
  delete e.dest;
  return err;
}
