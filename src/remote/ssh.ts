// Running a command on a node: `ssh <options> -- <host> <command line>`, or `sh -c <command
// line>` when the node is this machine. The host comes after `--`, so ssh never reads it as an
// option (a host `-oProxyCommand=…` would run a command here); the cluster readers refuse such
// a host first (recipes/ssh-target.ts). The command line is built with shJoin, so each argument reaches
// the node's program byte for byte (ssh joins its arguments with spaces and the remote login
// shell, which must be POSIX sh compatible, parses them once).
import { spawn } from 'node:child_process';
import { shJoin } from './shell.js';

export interface Tools {
  /** Local ssh client (SPARK_SSH, default `ssh`, looked up on PATH). */
  ssh: string;
  /** Options before `--` and the host: never prompt, fail fast on a dead node. */
  sshOptions: string[];
  /** docker on the nodes (SPARK_DOCKER, default `docker`). */
  docker: string;
  /** spark on the nodes (SPARK_REMOTE_BIN or --spark-bin, default `spark`). */
  spark: string;
}

export const DEFAULT_SSH_OPTIONS: readonly string[] = ['-o', 'BatchMode=yes', '-o', 'ConnectTimeout=15'];

export function toolsFromEnv(env: NodeJS.ProcessEnv, sparkBin?: string): Tools {
  const pick = (v: string | undefined, d: string) => (v !== undefined && v !== '' ? v : d);
  return {
    ssh: pick(env.SPARK_SSH, 'ssh'),
    sshOptions: [...DEFAULT_SSH_OPTIONS],
    docker: pick(env.SPARK_DOCKER, 'docker'),
    spark: pick(sparkBin, pick(env.SPARK_REMOTE_BIN, 'spark')),
  };
}

/** Hosts that are this machine: run directly instead of over ssh. */
export function isLocalHost(host: string): boolean {
  return host === 'localhost' || host === '127.0.0.1' || host === '::1';
}

/** The local argv that runs `commandLine` (already sh-quoted) on `host`. */
export function nodeCommand(host: string, commandLine: string, tools: Pick<Tools, 'ssh' | 'sshOptions'>): string[] {
  if (isLocalHost(host)) return ['sh', '-c', commandLine];
  return [tools.ssh, ...tools.sshOptions, '--', host, commandLine];
}

/** The local argv that runs `argv` on `host`. */
export function nodeArgv(host: string, argv: readonly string[], tools: Pick<Tools, 'ssh' | 'sshOptions'>): string[] {
  return nodeCommand(host, shJoin(argv), tools);
}

export interface Captured {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs a local argv to completion and captures its output (for short queries on a node). */
export function capture(argv: readonly string[], env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<Captured> {
  return new Promise((resolvePromise) => {
    const child = spawn(argv[0]!, argv.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => killGroup(child.pid, 'SIGKILL'), timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      resolvePromise({ code: 127, signal: null, stdout, stderr: stderr + err.message });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolvePromise({ code, signal, stdout, stderr });
    });
  });
}

/** Signals a child's whole process group (children run in their own group), then the child. */
export function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

/** The last non-empty line of some output, for one-line error messages. */
export function lastLine(text: string): string {
  return lastLines(text, 1);
}

/** The last `n` non-empty lines of some output, joined with ` | ` to keep a message on one line. */
export function lastLines(text: string, n: number): string {
  const lines = text
    .split(/\r?\n|\r/)
    .map((l) => l.trim())
    .filter((l) => l !== '');
  return lines.slice(-n).join(' | ');
}
