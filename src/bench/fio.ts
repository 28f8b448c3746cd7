// The fio baseline: random 4 KiB reads with psync, one job per thread, on the same file region
// the row store reads, buffered with the random hint or O_DIRECT to match the case.
import { spawnSync } from 'node:child_process';

export interface FioRun {
  file: string;
  /** Byte region to read (rounded inwards to 4 KiB). */
  offset: number;
  size: number;
  threads: number;
  seconds: number;
  direct: boolean;
  /** Leave the page cache as it is (warm cases); fio otherwise drops the file's pages first. */
  keepCache: boolean;
}

export function fioVersion(): string | undefined {
  const r = spawnSync('fio', ['--version'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

export function fioArgs(o: FioRun): string[] {
  const start = Math.ceil(o.offset / 4096) * 4096;
  const size = Math.floor((o.offset + o.size - start) / 4096) * 4096;
  return [
    '--name=spark-bench',
    `--filename=${o.file}`,
    '--rw=randread',
    '--bs=4k',
    '--ioengine=psync',
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

/** IOPS of the run, or throws with fio's complaint. */
export function runFio(o: FioRun): number {
  const r = spawnSync('fio', fioArgs(o), { encoding: 'utf8', maxBuffer: 1 << 26 });
  if (r.status !== 0) throw new Error(`fio failed: ${(r.stderr || r.stdout).split('\n')[0]}`);
  const json = JSON.parse(r.stdout.slice(r.stdout.indexOf('{'))) as { jobs: { read: { iops: number } }[] };
  return json.jobs[0].read.iops;
}
