// An output directory (pack --out), made and proven writable before any work: the errno a
// user sees must be the real one. Node's recursive mkdir reports ENOENT when the real cause is
// a read-only mount (EROFS) or a forbidden parent (EACCES), and a read-only disk with little
// room would otherwise first be reported as "not enough free space".
import { constants } from 'node:fs';
import { access, mkdir, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { toSparkError } from './errors.js';

export async function makeWritableDir(dir: string): Promise<void> {
  try {
    await mkdir(dir, { recursive: true });
  } catch (err) {
    throw toSparkError(await realCause(err, dir));
  }
  try {
    await access(dir, constants.W_OK);
  } catch (err) {
    throw toSparkError(err);
  }
}

/** For an ENOENT from a recursive mkdir: the error of creating the first missing component. */
async function realCause(err: unknown, dir: string): Promise<unknown> {
  if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return err;
  const missing: string[] = [];
  let at = dir;
  while (!(await stat(at).then(() => true, () => false))) {
    missing.push(at);
    const up = dirname(at);
    if (up === at) return err;
    at = up;
  }
  const first = missing.at(-1);
  if (first === undefined) return err;
  return mkdir(first).then(
    () => err,
    (e: unknown) => e,
  );
}
