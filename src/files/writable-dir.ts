// An output directory (pack --out), made and proven writable before any work: the errno a
// user sees must be the real one. The missing components are created one at a time, never by
// Node's recursive mkdir: that reports ENOENT when the real cause is a read-only mount (EROFS)
// or a forbidden parent (EACCES), and loops for ever where a parent exists but refuses new
// entries with ENOENT (procfs, sysfs). A read-only disk with little room would otherwise first
// be reported as "not enough free space".
import { constants } from 'node:fs';
import { access, lstat, mkdir, readlink, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { SparkError, toSparkError, withPath } from '../errors/errors.js';

export async function makeWritableDir(dir: string): Promise<void> {
  const missing: string[] = [];
  for (let at = dir; !(await isDirectory(at)); at = dirname(at)) {
    await refuseNonDirectory(at);
    missing.unshift(at);
    if (dirname(at) === at) break;
  }
  for (const path of missing) {
    try {
      await mkdir(path);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EEXIST' && (await isDirectory(path))) continue; // made meanwhile by another process
      if (code === 'EEXIST') await refuseNonDirectory(path);
      if (code === 'ENOENT') {
        throw new SparkError(
          'E_IO',
          `${path}: cannot create a directory there: ${dirname(path)} exists but refuses new entries (a virtual file system such as /proc or /sys?); use a directory on a disk`,
          { path },
        );
      }
      throw toSparkError(withPath(err, path));
    }
  }
  try {
    await access(dir, constants.W_OK);
  } catch (err) {
    throw toSparkError(err);
  }
}

async function isDirectory(path: string): Promise<boolean> {
  return stat(path).then(
    (st) => st.isDirectory(),
    () => false,
  );
}

/** A name that exists but is no directory: a dangling link, or a file, each said as what it is. */
async function refuseNonDirectory(path: string): Promise<void> {
  const st = await lstat(path).catch(() => undefined);
  if (st === undefined || st.isDirectory()) return; // missing, or made meanwhile by another process
  if (st.isSymbolicLink()) {
    const target = await readlink(path).catch(() => '?');
    throw new SparkError(
      'E_USAGE',
      `${path} is a symbolic link to ${target}, which does not exist: create that directory, or remove the link and give a real directory`,
      { path },
    );
  }
  throw new SparkError(
    'E_USAGE',
    `${path} is a file, not a directory: give a directory for the output (or remove the file)`,
    { path },
  );
}
