// Whether a "cold" case was cold. Evicting the source before a case is not enough when the
// bytes the case reads fit in the page cache: every read warms a page, later reads of that
// page are memory copies, and a long case drifts warm. A case is cold by construction when
// its reads bypass the cache (O_DIRECT), when the source is evicted before every batch, or
// when the read range is larger than the page cache can hold (MemTotal, or the memory limit
// of the cgroup the bench runs in, whichever is smaller).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface PageCacheLimit {
  bytes: number;
  /** Where the number comes from: MemTotal, or the cgroup file that is lower. */
  from: string;
}

function readNumber(path: string): number | undefined {
  try {
    const text = readFileSync(path, 'utf8').trim();
    return /^\d+$/.test(text) ? Number(text) : undefined; // "max" (cgroup v2 unlimited) is no limit
  } catch {
    return undefined;
  }
}

/** MemTotal from a /proc/meminfo text, in bytes. */
export function memTotalBytes(meminfo: string): number | undefined {
  const m = /^MemTotal:\s+(\d+)\s*kB/m.exec(meminfo);
  return m ? Number(m[1]) * 1024 : undefined;
}

/**
 * The most page cache this process's files can occupy: MemTotal, lowered by the memory limit
 * of the process's cgroup (v2 memory.max or v1 memory.limit_in_bytes) when one is set.
 * `root` is the filesystem root, so tests can give a fake /proc and /sys.
 */
export function pageCacheLimit(root = '/'): PageCacheLimit | undefined {
  let meminfo = '';
  try {
    meminfo = readFileSync(join(root, 'proc/meminfo'), 'utf8');
  } catch {
    /* not Linux: no limit known */
  }
  const total = memTotalBytes(meminfo);
  let best: PageCacheLimit | undefined = total === undefined ? undefined : { bytes: total, from: 'MemTotal' };
  let cgroups = '';
  try {
    cgroups = readFileSync(join(root, 'proc/self/cgroup'), 'utf8');
  } catch {
    /* no cgroups */
  }
  for (const line of cgroups.split('\n')) {
    const [, controllers, path] = line.split(':');
    if (path === undefined) continue;
    const files =
      controllers === ''
        ? [join('sys/fs/cgroup', path, 'memory.max'), 'sys/fs/cgroup/memory.max']
        : controllers.split(',').includes('memory')
          ? [join('sys/fs/cgroup/memory', path, 'memory.limit_in_bytes'), 'sys/fs/cgroup/memory/memory.limit_in_bytes']
          : [];
    // The process's own cgroup directory when it is visible, else the (namespaced) root.
    for (const f of files) {
      const v = readNumber(join(root, f));
      if (v === undefined) continue;
      if (!best || v < best.bytes) best = { bytes: v, from: `/${f}` };
      break;
    }
  }
  return best;
}

export interface ColdVerdict {
  valid: boolean;
  reason: string;
}

const gib = (b: number): string => `${(b / 2 ** 30).toFixed(1)} GiB`;

/** Whether a cold case stays cold, and why (see the top of this file). */
export function coldVerdict(o: {
  direct: boolean;
  evictEveryBatch: boolean;
  readRangeBytes: number;
  limit: PageCacheLimit | undefined;
}): ColdVerdict {
  if (o.direct) return { valid: true, reason: 'O_DIRECT reads bypass the page cache' };
  if (o.evictEveryBatch) return { valid: true, reason: 'the source is evicted from the page cache before every batch' };
  if (!o.limit)
    return {
      valid: false,
      reason: `the page cache size is unknown (no /proc/meminfo): cannot tell whether the ${gib(o.readRangeBytes)} read range stays cold; use --evict-every-batch`,
    };
  if (o.readRangeBytes > o.limit.bytes) {
    return {
      valid: true,
      reason: `the read range (${gib(o.readRangeBytes)}) is larger than the page cache can hold (${gib(o.limit.bytes)}, ${o.limit.from})`,
    };
  }
  return {
    valid: false,
    reason: `the read range (${gib(o.readRangeBytes)}) fits in the page cache (${gib(o.limit.bytes)}, ${o.limit.from}): re-reads inside a case are served from memory; use --evict-every-batch, --direct on a page pack, or a source larger than the page cache`,
  };
}
