// One command per node, all at once: output streamed line by line with a per-node prefix, and
// (optionally) the first failure stops the others. Each child runs in its own process group so
// stopping it also stops whatever it started locally.
import { spawn, type ChildProcess } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { killGroup } from './ssh.js';

export interface NodeJob {
  rank: number;
  host: string;
  /** Local argv to spawn (usually from nodeCommand). */
  argv: string[];
  /** A local file streamed to the command's stdin (else stdin is closed). */
  stdinFile?: string;
}

export interface NodeJobResult {
  rank: number;
  host: string;
  /** Exit code, or null when ended by a signal. */
  code: number | null;
  signal: NodeJS.Signals | null;
  ok: boolean;
  /** Ended because the run was stopped (another node failed, or stop() was called). */
  stopped: boolean;
  /** Everything written to stdout, when captured. */
  stdout: string;
  /** The last lines of output (stderr and, when not captured, stdout), for error messages. */
  tail: string[];
  seconds: number;
}

export interface FanOutOptions {
  env: NodeJS.ProcessEnv;
  /** Receives complete, prefixed output lines (each ending in a newline). */
  write(text: string): void;
  /** Keep stdout (e.g. a JSON document) instead of streaming it. */
  captureStdout?: boolean;
  /** When a job fails, stop every other job still running. */
  stopOthersOnFailure?: boolean;
  /** A finished job counts as failed when this says so (default: exit code not 0). */
  failed?(result: NodeJobResult): boolean;
  /** Called as each job ends, before the run as a whole does. */
  onExit?(result: NodeJobResult): void;
  /** Milliseconds between SIGTERM and SIGKILL when stopping. */
  graceMs?: number;
  /** Called with the elapsed milliseconds every progressEveryMs while jobs run. */
  onProgress?(elapsedMs: number, running: NodeJob[]): void;
  progressEveryMs?: number;
}

export interface FanOutRun {
  /** Every job's result, in job order, once all have ended. */
  done: Promise<NodeJobResult[]>;
  /** Stops every job still running (they end as `stopped`). */
  stop(): void;
}

const TAIL_LINES = 20;

export function nodePrefix(rank: number, host: string, width = 0): string {
  return `[${rank} ${host}]`.padEnd(width + 3 + String(rank).length) + ' ';
}

/** Splits a stream into lines; a carriage-return progress bar keeps only its last state. */
class LineSplitter {
  private partial = '';
  constructor(private readonly emit: (line: string) => void) {}
  push(chunk: string): void {
    const parts = (this.partial + chunk).split('\n');
    this.partial = parts.pop() ?? '';
    for (const p of parts) this.emit(lastSegment(p));
  }
  end(): void {
    if (this.partial !== '') this.emit(lastSegment(this.partial));
    this.partial = '';
  }
}

function lastSegment(line: string): string {
  const segments = line.split('\r').filter((s) => s !== '');
  return segments.at(-1) ?? '';
}

export function startFanOut(jobs: readonly NodeJob[], options: FanOutOptions): FanOutRun {
  const width = Math.max(0, ...jobs.map((j) => j.host.length));
  const isFailure = options.failed ?? ((r: NodeJobResult) => r.code !== 0);
  const children = new Map<number, ChildProcess>();
  const running = new Set<NodeJob>(jobs);
  let stopping = false;
  let failureSeen = false;
  const started = performance.now();
  const timer =
    options.onProgress && options.progressEveryMs
      ? setInterval(() => options.onProgress!(performance.now() - started, [...running]), options.progressEveryMs)
      : undefined;

  const stop = () => {
    if (stopping) return;
    stopping = true;
    for (const child of children.values()) killGroup(child.pid, 'SIGTERM');
    const grace = setTimeout(() => {
      for (const child of children.values()) killGroup(child.pid, 'SIGKILL');
    }, options.graceMs ?? 3000);
    grace.unref();
  };

  const runOne = (job: NodeJob): Promise<NodeJobResult> =>
    new Promise((resolve) => {
      const began = performance.now();
      const prefix = nodePrefix(job.rank, job.host, width);
      const tail: string[] = [];
      let stdout = '';
      const line = (text: string) => {
        tail.push(text);
        if (tail.length > TAIL_LINES) tail.shift();
        options.write(prefix + text + '\n');
      };
      const finish = (code: number | null, signal: NodeJS.Signals | null) => {
        children.delete(job.rank);
        running.delete(job);
        const result: NodeJobResult = {
          rank: job.rank,
          host: job.host,
          code,
          signal,
          ok: false,
          stopped: stopping,
          stdout,
          tail,
          seconds: (performance.now() - began) / 1000,
        };
        result.ok = !isFailure(result);
        if (!result.ok && !result.stopped && !failureSeen) {
          failureSeen = true;
          if (options.stopOthersOnFailure) stop();
        }
        options.onExit?.(result);
        resolve(result);
      };
      if (stopping) {
        finish(null, null);
        return;
      }
      const child = spawnJob(job, options, line, (d) => (stdout += d), finish);
      if (child) children.set(job.rank, child);
    });

  const done = Promise.all(jobs.map(runOne)).finally(() => {
    if (timer) clearInterval(timer);
  });
  return { done, stop };
}

/**
 * Starts one job's process in its own process group: its stderr (and stdout, unless captured)
 * line by line through `line`, then `finish` with how it ended (127 when it could not run).
 */
function spawnJob(
  job: NodeJob,
  options: FanOutOptions,
  line: (text: string) => void,
  captured: (data: string) => void,
  finish: (code: number | null, signal: NodeJS.Signals | null) => void,
): ChildProcess | undefined {
  let child: ChildProcess;
  try {
    child = spawn(job.argv[0]!, job.argv.slice(1), {
      env: options.env,
      stdio: [job.stdinFile === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      detached: true,
    });
  } catch (err) {
    line(`cannot run ${job.argv[0]}: ${(err as Error).message}`);
    finish(127, null);
    return undefined;
  }
  if (job.stdinFile !== undefined) feedStdin(child, job.stdinFile, line);
  const errSplit = new LineSplitter(line);
  const outSplit = new LineSplitter(line);
  child.stderr!.setEncoding('utf8').on('data', (d: string) => errSplit.push(d));
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (options.captureStdout ? captured(d) : outSplit.push(d)));
  let spawnError: Error | undefined;
  child.on('error', (err) => (spawnError = err));
  child.on('close', (code, signal) => {
    errSplit.end();
    outSplit.end();
    if (spawnError) {
      line(`cannot run ${job.argv[0]}: ${spawnError.message}`);
      finish(127, null);
    } else {
      finish(code, signal);
    }
  });
  return child;
}

/** Streams `file` into the child's stdin; a command that ends before reading it all closes the pipe, and its exit says why. */
function feedStdin(child: ChildProcess, file: string, line: (text: string) => void): void {
  child.stdin!.on('error', () => {});
  const input = createReadStream(file);
  input.on('error', (err) => {
    line(`cannot read ${file}: ${err.message}`);
    child.stdin!.destroy();
  });
  input.pipe(child.stdin!);
}

/** Runs every job to the end (see startFanOut). */
export function fanOut(jobs: readonly NodeJob[], options: FanOutOptions): Promise<NodeJobResult[]> {
  return startFanOut(jobs, options).done;
}

/** How a job ended, in words: `exit 125`, `killed by SIGKILL`, `stopped`. */
export function describeEnd(r: NodeJobResult): string {
  if (r.stopped && !r.ok) return 'stopped';
  if (r.signal) return `killed by ${r.signal}`;
  if (r.code === 137) return 'exit 137 (killed)';
  return `exit ${r.code}`;
}
