// One bench case: batches run one after another with fresh ids each (a reused pool of ids
// would be served from the cache the first pass filled). Only the gathers are timed; drawing
// ids and the optional eviction between batches are not. Alongside wall time, each gather is
// charged the process's CPU time (user + sys, every thread: the reader pool, page faults) and
// the bytes the process fetched from storage (/proc/self/io read_bytes: page-cache misses and
// O_DIRECT reads, not cache hits).
import { readFileSync } from 'node:fs';

export interface Timed {
  rows: number;
  rowsPerSec: number;
  p50: number;
  p99: number;
  n: number;
  /** Seconds spent inside gathers. */
  busySeconds: number;
  /** Process CPU seconds (user + sys) spent while gathers ran. */
  cpuSeconds: number;
  /** Bytes fetched from storage while gathers ran; undefined without /proc/self/io. */
  deviceBytes?: number;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** read_bytes of /proc/self/io, or undefined where it is not readable. */
export function processReadBytes(text?: string): number | undefined {
  let t = text;
  if (t === undefined) {
    try {
      t = readFileSync('/proc/self/io', 'utf8');
    } catch {
      return undefined;
    }
  }
  const m = /^read_bytes:\s+(\d+)/m.exec(t);
  return m ? Number(m[1]) : undefined;
}

export async function timeLoop(
  seconds: number,
  next: () => number[],
  run: (ids: number[]) => Promise<unknown>,
  between?: () => Promise<void> | void,
): Promise<Timed> {
  const lat: number[] = [];
  let rows = 0;
  let busy = 0;
  let cpuUs = 0;
  let device: number | undefined = 0;
  const deadline = performance.now() + seconds * 1000;
  for (let i = 0; performance.now() < deadline || i < 1; i++) {
    const ids = next();
    if (between) await between();
    const io0 = processReadBytes();
    const c0 = process.cpuUsage();
    const b0 = performance.now();
    await run(ids);
    const ms = performance.now() - b0;
    const c = process.cpuUsage(c0);
    const io1 = processReadBytes();
    cpuUs += c.user + c.system;
    device = device !== undefined && io0 !== undefined && io1 !== undefined ? device + (io1 - io0) : undefined;
    lat.push(ms);
    busy += ms;
    rows += ids.length;
  }
  lat.sort((a, b) => a - b);
  return {
    rows,
    rowsPerSec: rows / (busy / 1000),
    p50: percentile(lat, 50),
    p99: percentile(lat, 99),
    n: lat.length,
    busySeconds: busy / 1000,
    cpuSeconds: cpuUs / 1e6,
    ...(device !== undefined ? { deviceBytes: device } : {}),
  };
}
