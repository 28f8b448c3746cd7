// The bed's own processes: every long-lived one is started here and recorded by pid, and the
// teardown ends them by pid. Teardown is synchronous on purpose: it must also run from
// process 'exit' (a failed assertion, an uncaught exception) and from signal handlers, where
// the event loop no longer turns.
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, openSync, readFileSync, readdirSync, readlinkSync } from 'node:fs';

/** Sleeps without the event loop (teardown runs where it no longer turns). */
export function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Gone, or a zombie waiting to be reaped (the event loop reaps it later; it runs nothing). */
export function ended(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

/** SIGTERM, then SIGKILL after graceMs for those still running; true when all ended. */
export function endPids(pids: readonly number[], graceMs: number): boolean {
  const signal = (pid: number, sig: NodeJS.Signals) => {
    try {
      process.kill(pid, sig);
    } catch {
      // already gone
    }
  };
  for (const pid of pids) if (!ended(pid)) signal(pid, 'SIGTERM');
  const until = Date.now() + graceMs;
  while (pids.some((p) => !ended(p)) && Date.now() < until) sleepSync(50);
  for (const pid of pids) if (!ended(pid)) signal(pid, 'SIGKILL');
  const hard = Date.now() + 5000;
  while (pids.some((p) => !ended(p)) && Date.now() < hard) sleepSync(20);
  return pids.every(ended);
}

/** The network namespace of a process, as the kernel names it (`net:[4026532...]`). */
export function netnsOf(pid: number | 'self'): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/ns/net`);
  } catch {
    return undefined;
  }
}

/** Every live process in one of these network namespaces (the bed's nodes). */
export function pidsInNetns(namespaces: ReadonlySet<string>): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    const ns = netnsOf(pid);
    if (ns !== undefined && namespaces.has(ns) && !ended(pid)) found.push(pid);
  }
  return found;
}

/** A short command that must succeed (ip, mount, ssh-keygen): its stdout, or an error naming it. */
export function run(
  argv: readonly string[],
  options: { env?: NodeJS.ProcessEnv; timeoutMs?: number; input?: string } = {},
): string {
  const r = spawnSync(argv[0]!, argv.slice(1), {
    encoding: 'utf8',
    env: options.env ?? process.env,
    timeout: options.timeoutMs ?? 30_000,
    input: options.input ?? '',
  });
  if (r.status !== 0) {
    throw new Error(
      `bed: ${argv.join(' ')} failed (${r.error?.message ?? `exit ${r.status ?? r.signal}`}): ${(r.stderr ?? '').trim()}`,
    );
  }
  return r.stdout;
}

/**
 * Starts a long-lived process with its output in `log`. `setpriv --pdeathsig` makes the kernel
 * signal it should this test process die without running its teardown (SIGKILL).
 */
export function startDaemon(argv: readonly string[], log: string, env: NodeJS.ProcessEnv = process.env): number {
  const fd = openSync(log, 'a');
  try {
    const child = spawn('setpriv', ['--pdeathsig', 'TERM', '--', ...argv], { stdio: ['ignore', fd, fd], env });
    if (child.pid === undefined) throw new Error(`bed: cannot start ${argv[0]}`);
    // The child is ended by pid at teardown; it must not keep the test process alive.
    child.unref();
    return child.pid;
  } finally {
    closeSync(fd);
  }
}

/** Polls `ready` every 100 ms for at most `ms`; throws with `what` and the log tail otherwise. */
export async function waitUntil(
  what: string,
  ready: () => boolean | Promise<boolean>,
  ms: number,
  log?: string,
): Promise<void> {
  const until = Date.now() + ms;
  let failure: unknown;
  while (Date.now() < until) {
    try {
      if (await ready()) return;
    } catch (err) {
      failure = err;
      break;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  let tail = '';
  try {
    if (log) tail = readFileSync(log, 'utf8').trim().split('\n').slice(-5).join(' | ');
  } catch {
    // no log yet
  }
  const how = failure instanceof Error ? failure.message : `${what} not ready after ${ms / 1000} s`;
  throw new Error(`${how}${tail ? `: ${tail}` : ''}`);
}
