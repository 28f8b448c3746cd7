// fio in the gather bench, two ways, both over the byte range the row store reads:
//   ceiling   what the device can do: 4 KiB random reads, O_DIRECT, io_uring (libaio when fio
//             or the kernel lacks it), a deep queue (2 jobs x 128). Every case is a fraction of it.
//   psync     blocking 4 KiB preads, one job per reader thread, buffered or O_DIRECT to match
//             the case: what a pool of that many blocking readers gets, NOT the device's limit.
import { spawnSync } from 'node:child_process';

export type FioEngine = 'psync' | 'io_uring' | 'libaio';

export interface FioRun {
  file: string;
  /** Byte region to read (rounded inwards to 4 KiB). */
  offset: number;
  size: number;
  /** Jobs (processes); psync: one per reader thread. */
  threads: number;
  seconds: number;
  direct: boolean;
  /** Leave the page cache as it is (warm cases); fio otherwise drops the file's pages first. */
  keepCache: boolean;
  engine?: FioEngine;
  /** Reads in flight per job (async engines only). */
  iodepth?: number;
}

/** The device-ceiling run's shape: enough reads in flight to keep an NVMe's queues full. */
export const CEILING_JOBS = 2;
export const CEILING_IODEPTH = 128;

export function fioVersion(): string | undefined {
  const r = spawnSync('fio', ['--version'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

/** The I/O engines this fio was built with (`fio --enghelp`), or [] without fio. */
export function fioEngines(): string[] {
  const r = spawnSync('fio', ['--enghelp'], { encoding: 'utf8' });
  return r.status === 0 ? parseEngineList(r.stdout) : [];
}

export function parseEngineList(enghelp: string): string[] {
  return enghelp
    .split('\n')
    .slice(1)
    .map((l) => l.trim())
    .filter((l) => /^[\w-]+$/.test(l));
}

/** The async engines to try for the ceiling, best first: io_uring, then libaio. */
export function ceilingEngines(available: string[]): FioEngine[] {
  return (['io_uring', 'libaio'] as const).filter((e) => available.includes(e));
}

export function fioArgs(o: FioRun): string[] {
  const start = Math.ceil(o.offset / 4096) * 4096;
  const size = Math.floor((o.offset + o.size - start) / 4096) * 4096;
  const engine = o.engine ?? 'psync';
  return [
    '--name=spark-bench',
    `--filename=${o.file}`,
    '--rw=randread',
    '--bs=4k',
    `--ioengine=${engine}`,
    ...(engine === 'psync' ? [] : [`--iodepth=${o.iodepth ?? 1}`]),
    `--numjobs=${o.threads}`,
    `--offset=${start}`,
    `--size=${size}`,
    `--runtime=${o.seconds}`,
    '--time_based',
    '--group_reporting',
    '--randrepeat=0',
    `--direct=${o.direct ? 1 : 0}`,
    ...(o.direct ? [] : ['--fadvise_hint=random']),
    `--invalidate=${o.keepCache ? 0 : 1}`,
    '--output-format=json',
  ];
}

export interface FioResult {
  iops: number;
  /** fio's CPU use, percent of one CPU per job (usr + sys). */
  cpuPercent: number;
}

/** Read IOPS from fio's JSON output (anything fio prints before the document is skipped). */
export function parseFioJson(stdout: string): FioResult {
  const at = stdout.indexOf('{');
  if (at < 0) throw new Error('fio printed no JSON');
  const json = JSON.parse(stdout.slice(at)) as {
    jobs?: { read?: { iops?: number }; usr_cpu?: number; sys_cpu?: number }[];
  };
  const job = json.jobs?.[0];
  if (typeof job?.read?.iops !== 'number') throw new Error('fio JSON has no jobs[0].read.iops');
  return { iops: job.read.iops, cpuPercent: (job.usr_cpu ?? 0) + (job.sys_cpu ?? 0) };
}

/** Runs fio; throws with the first line of fio's complaint. */
export function runFio(o: FioRun): FioResult {
  const r = spawnSync('fio', fioArgs(o), { encoding: 'utf8', maxBuffer: 1 << 26 });
  if (r.status !== 0)
    throw new Error(
      `fio (${o.engine ?? 'psync'}) failed: ${(r.stderr || r.stdout || r.error?.message || '').trim().split('\n')[0]}`,
    );
  return parseFioJson(r.stdout);
}

export interface Ceiling {
  engine: FioEngine;
  jobs: number;
  iodepth: number;
  direct: true;
  file: string;
  offset: number;
  size: number;
  seconds: number;
  /** Measured before the first case and after the last one; `iops` is their mean. */
  iopsBefore: number;
  iopsAfter?: number;
  iops: number;
  /** Why the engine is not io_uring, or why there is no ceiling. */
  note?: string;
}

export type CeilingRegion = Pick<FioRun, 'file' | 'offset' | 'size' | 'seconds'>;

/**
 * The device ceiling over `region`: io_uring when fio has it and the kernel lets it run, else
 * libaio (said in `note`). Returns a note instead when neither runs (no fio, O_DIRECT refused).
 */
export function measureCeiling(
  region: CeilingRegion,
  run: (o: FioRun) => FioResult = runFio,
  engines: string[] = fioEngines(),
): Ceiling | { note: string } {
  const candidates = ceilingEngines(engines);
  if (candidates.length === 0)
    return {
      note:
        engines.length === 0
          ? 'no device ceiling: fio is not installed'
          : 'no device ceiling: fio has neither io_uring nor libaio',
    };
  const failures: string[] = [];
  if (candidates[0] !== 'io_uring') failures.push('fio has no io_uring engine');
  for (const engine of candidates) {
    try {
      const r = run({
        ...region,
        threads: CEILING_JOBS,
        iodepth: CEILING_IODEPTH,
        engine,
        direct: true,
        keepCache: true,
      });
      return {
        engine,
        jobs: CEILING_JOBS,
        iodepth: CEILING_IODEPTH,
        direct: true,
        ...region,
        iopsBefore: r.iops,
        iops: r.iops,
        ...(failures.length ? { note: `${engine} instead of io_uring: ${failures.join('; ')}` } : {}),
      };
    } catch (err) {
      failures.push((err as Error).message);
    }
  }
  return { note: `no device ceiling: ${failures.join('; ')}` };
}

/** Adds the run after the last case; the ceiling becomes the mean of the two. */
export function closeCeiling(c: Ceiling, run: (o: FioRun) => FioResult = runFio): Ceiling {
  try {
    const after = run({
      file: c.file,
      offset: c.offset,
      size: c.size,
      seconds: c.seconds,
      threads: c.jobs,
      iodepth: c.iodepth,
      engine: c.engine,
      direct: true,
      keepCache: true,
    }).iops;
    return { ...c, iopsAfter: after, iops: (c.iopsBefore + after) / 2 };
  } catch (err) {
    return { ...c, note: [c.note, `second ceiling run failed: ${(err as Error).message}`].filter(Boolean).join('; ') };
  }
}

/** x as a fraction of the ceiling, or undefined when either is missing. */
export function ofCeiling(x: number | undefined, ceiling: Ceiling | undefined): number | undefined {
  return x !== undefined && ceiling && ceiling.iops > 0 ? x / ceiling.iops : undefined;
}
