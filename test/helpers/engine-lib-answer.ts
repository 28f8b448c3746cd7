// The preflight library command (the sh that reads engine-library files on a node without
// spark), run here as ssh would run it, and the files it is tried on.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { engineLibScript, parseEngineLibs } from '../../src/preflight/facts/engine-lib.js';

/** A file of `size` random bytes that is no ELF file (its first byte is 0). */
export function randomFile(path: string, size: number): string {
  const b = randomBytes(size);
  b[0] = 0;
  writeFileSync(path, b);
  return path;
}

/** The library command's answer for `paths`, run here under `shell` as ssh would on a node. */
export function engineLibAnswer(paths: string[], shell: string): ReturnType<typeof parseEngineLibs> {
  const r = spawnSync(shell, ['-c', engineLibScript(paths)], { encoding: 'utf8', maxBuffer: 256 << 20 });
  assert.equal(r.status, 0, r.stderr);
  return parseEngineLibs(r.stdout, paths);
}

/** What each file's verdict says: its kind, its size and why it was not read as a library. */
export function engineLibVerdicts(files: ReturnType<typeof parseEngineLibs>['files']) {
  return files.map((f) => [f.kind, f.size, f.elfError ?? f.unread]);
}
