// What the pack and verify benches share: one command timed whole, the page cache's size, and
// byte ranges of files rounded out to the 4 KiB blocks a direct read (fio, direct=1) needs.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Runs argv to completion; throws naming the command when it exits non-zero. */
export function run(argv: string[]): { seconds: number; stdout: string } {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 28 });
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  if (r.status !== 0) throw new Error(`${argv.join(' ')} exited ${r.status}: ${r.stderr.toString().slice(0, 500)}`);
  return { seconds, stdout: r.stdout.toString() };
}

/** Page cache in bytes (/proc/meminfo Cached). */
export function cachedBytes(): number {
  const m = /^Cached:\s+(\d+) kB/m.exec(readFileSync('/proc/meminfo', 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
}

const ALIGN = 4096;
export const alignDown = (n: number): number => Math.floor(n / ALIGN) * ALIGN;
export const alignUp = (n: number): number => Math.ceil(n / ALIGN) * ALIGN;

/** Bytes [offset, offset + bytes) of a file. */
export interface Range {
  file: string;
  offset: number;
  bytes: number;
}

/** Throws unless fio runs: the benches' baselines are fio's direct reads and copies. */
export function requireFio(): void {
  if (spawnSync('fio', ['--version']).status !== 0) throw new Error('fio is required: apt-get install fio');
}

/** One timed command of a bench. */
export interface CaseResult {
  name: string;
  bytes: number;
  seconds: number;
  mbPerSec: number;
  /** The command's own time (spark's "seconds"; fio's runtime where the bench reads it): without start-up. */
  innerSeconds?: number;
  io?: unknown;
  /** spark's verdict, where the command is a check. */
  ok?: boolean;
  cacheGrowthBytes?: number;
}
