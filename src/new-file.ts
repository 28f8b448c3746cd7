// A file spark writes for the user (a chart, an entrypoint script): created under a name of its
// own with O_CREAT|O_EXCL|O_NOFOLLOW, so a link planted beside the target is never written
// through, then renamed over the target so a reader never sees half a file.
import { closeSync, constants, openSync, renameSync, rmSync, writeSync } from 'node:fs';

export function writeNewFile(path: string, text: string, mode = 0o644): void {
  const partial = `${path}.${process.pid}.partial`;
  const fd = openSync(partial, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
  try {
    writeSync(fd, text);
  } catch (err) {
    rmSync(partial, { force: true });
    throw err;
  } finally {
    closeSync(fd);
  }
  renameSync(partial, path);
}
