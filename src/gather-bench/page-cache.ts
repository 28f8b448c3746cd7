// Page-cache control for benchmarks, per file, so a cold measurement does not flush the
// whole machine's cache (here page cache is GPU memory shared with others): eviction through
// `dd iflag=nocache count=0` (posix_fadvise POSIX_FADV_DONTNEED on the whole file), residency
// through util-linux `fincore` when installed.
import { spawnSync } from 'node:child_process';
import { createReadStream } from 'node:fs';

export function evictFromCache(path: string): void {
  const r = spawnSync('dd', [`if=${path}`, 'iflag=nocache', 'count=0', 'status=none'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`could not evict ${path} from the page cache: ${r.stderr || r.error?.message}`);
}

/** Reads bytes [offset, offset + length) of the file once (default: all of it) so their pages are cached. */
export async function warmCache(path: string, offset = 0, length = Infinity): Promise<void> {
  if (length <= 0) return;
  await new Promise<void>((resolve, reject) => {
    const end = Number.isFinite(length) ? offset + length - 1 : undefined;
    const s = createReadStream(path, { highWaterMark: 4 << 20, start: offset, ...(end !== undefined ? { end } : {}) });
    s.on('data', () => {});
    s.on('end', resolve);
    s.on('error', reject);
  });
}

/** Bytes of the file in the page cache, or undefined without fincore. */
export function cachedBytes(path: string): number | undefined {
  const r = spawnSync('fincore', ['--bytes', '--noheadings', '-o', 'RES', path], { encoding: 'utf8' });
  if (r.status !== 0) return undefined;
  const res = Number(r.stdout.trim());
  return Number.isFinite(res) ? res : undefined;
}
