// A real `spark pack` process for the crash tests, optionally SIGKILLed once its copy began.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { binPath } from './cli.js';

export interface PackRun {
  code: number | null;
  signal: string | null;
  stdout: string;
  /** From the first .partial appearing in `out` to the exit (0 when none was seen). */
  copyMs: number;
}

/**
 * Runs `spark <argv>` writing into `out`. With `killAfterMs`, SIGKILLs it that long after the
 * first `.partial` file appears in `out` (the copy has begun), unless it exited first.
 */
export function runPackProcess(argv: string[], out: string, killAfterMs?: number): Promise<PackRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [binPath, ...argv], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let began: number | undefined;
    let timer: NodeJS.Timeout | undefined;
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.resume();
    const watch = setInterval(() => {
      if (began !== undefined || !existsSync(out) || !readdirSync(out).some((n) => n.endsWith('.partial'))) return;
      began = performance.now();
      if (killAfterMs !== undefined) timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    }, 1);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearInterval(watch);
      if (timer) clearTimeout(timer);
      resolve({ code, signal, stdout, copyMs: began === undefined ? 0 : performance.now() - began });
    });
  });
}

export interface KillTrials {
  trials: number;
  /** The `spark pack` arguments writing into `out`. */
  packArgs(out: string): string[];
  /** Checks a directory right after a kill; returns true when it already held a complete copy. */
  afterKill(out: string, trial: number): Promise<boolean>;
  /** Checks the directory once a resumed run has finished. */
  afterResume(out: string, trial: number): Promise<void>;
  /** Checks the directory after every kill (the first run's and the killed resume's). */
  afterAnyKill?(out: string, trial: number): Promise<void>;
}

/**
 * kill -9 of a real `spark pack` at random moments of its copy, then the same command again;
 * every third trial also kills the first resume. A kill point is drawn from the fastest copy
 * seen so far (a reference run, then every run that finished before its kill), so a reference
 * slowed by a loaded machine does not leave most kills landing after the end; and only runs
 * that were really killed count as trials, up to three attempts a trial. Returns what the
 * trials hit, for the caller to require the interesting states were reached.
 */
export async function killTrials(
  k: KillTrials,
  freshDir: () => string,
): Promise<{ copyMs: number; killed: number; complete: number; resumedWithKept: number; attempts: number }> {
  const run = (out: string, killAfterMs?: number): Promise<PackRun> =>
    runPackProcess(k.packArgs(out), out, killAfterMs);
  const reference = await run(freshDir());
  if (reference.code !== 0 || reference.copyMs <= 0)
    throw new Error(`the reference run failed or was not seen copying (exit ${reference.code})`);
  let fastestCopyMs = reference.copyMs;
  const killAt = (): number => Math.random() * fastestCopyMs * 0.9;
  const seen = { copyMs: reference.copyMs, killed: 0, complete: 0, resumedWithKept: 0, attempts: 0 };
  for (let i = 0; seen.killed < k.trials && seen.attempts < 3 * k.trials; i++) {
    seen.attempts++;
    const out = freshDir();
    const first = await run(out, killAt());
    if (first.signal === 'SIGKILL') seen.killed++;
    else if (first.code === 0 && first.copyMs > 0) fastestCopyMs = Math.min(fastestCopyMs, first.copyMs);
    await k.afterAnyKill?.(out, i);
    if (await k.afterKill(out, i)) seen.complete++;
    if (i % 3 === 2) {
      await run(out, killAt());
      await k.afterAnyKill?.(out, i);
    }
    const resumed = await run(out);
    if (resumed.code !== 0) throw new Error(`trial ${i}: the resumed pack exited ${resumed.code}`);
    const summary = JSON.parse(resumed.stdout) as { files: { chunksKept: number }[] };
    if (summary.files.some((f) => f.chunksKept > 0)) seen.resumedWithKept++;
    await k.afterResume(out, i);
  }
  return seen;
}
