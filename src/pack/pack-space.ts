// Will the pack fit? Counted in bytes really allocated, not apparent sizes: a sparse shard of
// ~98 GB apparent allocates only its header and the rank's rows. What an interrupted run
// already allocated (the .partial, or a finished file) is subtracted.
import { statfs } from 'node:fs/promises';
import { join } from 'node:path';
import { SparkError } from '../errors/errors.js';
import { fileInfo } from './pack-io.js';

export interface SpaceNeed {
  /** The finished file's name in the output directory. */
  file: string;
  /** Bytes it allocates when finished. */
  bytes: number;
}

/** Allocated bytes of [offset, offset + bytes) on a filesystem of `block`-byte blocks. */
export function blockSpan(offset: number, bytes: number, block: number): number {
  if (bytes <= 0) return 0;
  const first = Math.floor(offset / block);
  const last = Math.floor((offset + bytes - 1) / block);
  return (last - first + 1) * block;
}

function gib(n: number): string {
  return n >= 2 ** 30 ? `${(n / 2 ** 30).toFixed(2)} GiB` : `${(n / 2 ** 20).toFixed(1)} MiB`;
}

/** The filesystem's block size (what allocation rounds to) and free bytes. */
export async function fsInfo(out: string): Promise<{ block: number; free: number }> {
  const fs = await statfs(out);
  return { block: fs.bsize, free: fs.bavail * fs.bsize };
}

/**
 * Fails with E_NO_SPACE (exit 3, the numbers in the message) when `files` plus `extraBytes`
 * (manifest, journals, the index) do not fit in what is free at `out`. `beside`: a complete
 * pack is being replaced and keeps its files until the new one is whole, so a finished file
 * under a new file's name is the old pack's and counts for nothing; only a .partial does.
 */
export async function checkSpace(out: string, files: SpaceNeed[], extraBytes: number, beside = false): Promise<void> {
  let need = extraBytes;
  for (const f of files) {
    let have = 0;
    for (const name of beside ? [`${f.file}.partial`] : [f.file, `${f.file}.partial`]) {
      const st = await fileInfo(join(out, name));
      if (st) have = Math.max(have, Math.min(st.allocated, f.bytes));
    }
    need += f.bytes - have;
  }
  const { free } = await fsInfo(out);
  if (need > free) {
    const total = files.reduce((s, f) => s + f.bytes, 0);
    const where = beside
      ? `${out} to build the new pack beside the one it replaces, which stays usable until the new one is complete`
      : out;
    const fix = beside
      ? 'remove the old pack first (its manifest and files) and re-run, free space, or use another --out'
      : 'free space or use another --out';
    throw new SparkError(
      'E_NO_SPACE',
      `not enough free space in ${where}: the pack needs ${gib(need)} more (its ${files.length} files take ${gib(total)}), ` +
        `${gib(free)} (${free} bytes) are free; ${fix} (--no-space-check skips this check)`,
      { path: out, needBytes: need, freeBytes: free },
    );
  }
}
