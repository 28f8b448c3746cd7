// A small tmpfs for full-disk tests (needs root, like the rest of the suite's mount tests).
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
