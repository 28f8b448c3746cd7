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

/** One timed gather: wall milliseconds, CPU seconds and storage bytes charged to it. */
export interface Sample {
  ms: number;
  cpuSeconds: number;
  deviceBytes?: number;
}
/** A reader that times its own gathers (a child process reports its own numbers). */
export type MeasuredRun = (ids: number[]) => Promise<Sample>;

/** Times a gather in this process: wall time, process.cpuUsage, /proc/self/io read_bytes. */
export function inProcess(run: (ids: number[]) => Promise<unknown>): MeasuredRun {
  return async (ids) => {
    const io0 = processReadBytes();
    const c0 = process.cpuUsage();
    const b0 = performance.now();
    await run(ids);
    const ms = performance.now() - b0;
    const c = process.cpuUsage(c0);
    const io1 = processReadBytes();
    return {
      ms,
      cpuSeconds: (c.user + c.system) / 1e6,
      ...(io0 !== undefined && io1 !== undefined ? { deviceBytes: io1 - io0 } : {}),
    };
  };
}

function summarize(samples: Sample[], rowsPerSample: number[]): Timed {
  const lat = samples.map((x) => x.ms).sort((a, b) => a - b);
  const busy = lat.reduce((a, b) => a + b, 0);
  const rows = rowsPerSample.reduce((a, b) => a + b, 0);
  const device = samples.every((x) => x.deviceBytes !== undefined)
    ? samples.reduce((a, x) => a + (x.deviceBytes ?? 0), 0)
    : undefined;
  return {
    rows,
    rowsPerSec: rows / (busy / 1000),
    p50: percentile(lat, 50),
    p99: percentile(lat, 99),
    n: lat.length,
    busySeconds: busy / 1000,
    cpuSeconds: samples.reduce((a, x) => a + x.cpuSeconds, 0),
    ...(device !== undefined ? { deviceBytes: device } : {}),
  };
}

export async function timeLoop(
  seconds: number,
  next: () => number[],
  run: (ids: number[]) => Promise<unknown>,
  between?: () => Promise<void> | void,
): Promise<Timed> {
  return (await timeInterleaved(seconds, next, [inProcess(run)], between))[0];
}

/**
 * Several readers on the same batches: each batch of fresh ids goes to every reader in turn,
 * the first reader rotating from batch to batch so none always runs first (or always right
 * after an eviction, or on a drive another reader just woke). `between` runs before every
 * reader's turn. Runs until seconds x readers have passed (about `seconds` of gathers each).
 */
export async function timeInterleaved(
  seconds: number,
  next: () => number[],
  runs: MeasuredRun[],
  between?: () => Promise<void> | void,
): Promise<Timed[]> {
  const samples: Sample[][] = runs.map(() => []);
  const rows: number[] = [];
  const deadline = performance.now() + seconds * 1000 * runs.length;
  for (let i = 0; performance.now() < deadline || i < 1; i++) {
    const ids = next();
    rows.push(ids.length);
    for (let k = 0; k < runs.length; k++) {
      const r = (i + k) % runs.length;
      if (between) await between();
      samples[r].push(await runs[r](ids));
    }
  }
  return samples.map((s) => summarize(s, rows));
}
