// A small tmpfs for full-disk tests, and a ramfs that refuses O_DIRECT (both need root, like the
// rest of the suite's mount tests).
// Always unmount in a finally: a leaked mount outlives the test process.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './tmp.js';

export interface Tmpfs {
  dir: string;
  resize(bytes: number): void;
  unmount(): void;
}

export function mountTmpfs(bytes: number): Tmpfs {
  const dir = join(tempDir('spark-tmpfs-'), 'mnt');
  mkdirSync(dir);
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes}`, 'tmpfs', dir]);
  let mounted = true;
  return {
    dir,
    resize(n: number) {
      execFileSync('mount', ['-o', `remount,size=${n}`, dir]);
    },
    unmount() {
      if (mounted) execFileSync('umount', [dir]);
      mounted = false;
    },
  };
}

/** A ramfs: a filesystem that refuses O_DIRECT at open (EINVAL), as the Mia stack's reader meets some. */
export function mountRamfs(): { dir: string; unmount(): void } {
  const dir = join(tempDir('spark-ramfs-'), 'mnt');
  mkdirSync(dir);
  execFileSync('mount', ['-t', 'ramfs', 'ramfs', dir]);
  let mounted = true;
  return {
    dir,
    unmount() {
      if (mounted) execFileSync('umount', [dir]);
      mounted = false;
    },
  };
}
