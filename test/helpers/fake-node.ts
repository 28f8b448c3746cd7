// Fake `ssh`, `docker` and `spark` executables for launch tests. They go first on PATH, record
// every call (argv, the host it ran "on", pid) as one JSON line, and behave as the test says.
// The fake ssh does what real ssh does with its command: joins the arguments after the host
// with spaces and has `sh -c` parse the result, so quoting is exercised for real.
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './tmp.js';

/** What one fake program does: print, then exit with a code, or sleep until killed. */
export interface Act {
  exit?: number;
  stdout?: string;
  stderr?: string;
  sleep?: boolean;
}

/**
 * Keyed `"<host> <prog> <subcommand>"`, `"* <prog> <subcommand>"` or `"<host> ssh"`; the host
 * of a local (non-ssh) run is `local`.
 */
export type Behavior = Record<string, Act>;

export interface FakeCall {
  prog: 'ssh' | 'docker' | 'spark';
  argv: string[];
  host: string;
  pid: number;
}

export interface FakeNodes {
  bin: string;
  log: string;
  env(behavior?: Behavior, extra?: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
  calls(): FakeCall[];
}

const COMMON = `
const fs = require('fs');
const args = process.argv.slice(2);
function record(prog, host) {
  fs.appendFileSync(process.env.FAKE_LOG, JSON.stringify({ prog, argv: args, host, pid: process.pid }) + '\\n');
}
function behavior(keys) {
  const b = JSON.parse(process.env.FAKE_BEHAVIOR || '{}');
  for (const k of keys) if (b[k]) return b[k];
  return undefined;
}
function act(a) {
  if (a.stdout) fs.writeSync(1, a.stdout);
  if (a.stderr) fs.writeSync(2, a.stderr);
  if (a.sleep) { setInterval(() => {}, 1 << 30); return; }
  process.exit(a.exit || 0);
}
`;

const SSH = `
const cp = require('child_process');
const os = require('os');
let i = 0;
while (i < args.length && args[i].startsWith('-') && args[i] !== '--') i += args[i] === '-o' ? 2 : 1;
const host = args[i];
let rest = args.slice(i + 1);
if (rest[0] === '--') rest = rest.slice(1);
record('ssh', host);
const own = behavior([host + ' ssh']);
if (own) { act(own); } else {
  const r = cp.spawnSync('/bin/sh', ['-c', rest.join(' ')], { stdio: 'inherit', env: { ...process.env, FAKE_HOST: host } });
  process.exit(r.status !== null ? r.status : 128 + (os.constants.signals[r.signal] || 0));
}
`;

const DOCKER = `
const host = process.env.FAKE_HOST || 'local';
const sub = args[0];
record('docker', host);
const defaults = {
  run: { stdout: '4f0c1e' + '0'.repeat(58) + '\\n' },
  logs: { stdout: 'server booting\\n', sleep: true },
  inspect: { stdout: 'exited 1 false\\n' },
  stop: { stdout: args[1] + '\\n' },
  rm: { exit: 1, stderr: 'Error response from daemon: No such container: ' + args[1] + '\\n' },
};
act(behavior([host + ' docker ' + sub, '* docker ' + sub]) || defaults[sub] || {});
`;

const SPARK = `
const host = process.env.FAKE_HOST || 'local';
const sub = args[0];
record('spark', host);
const rank = Number(args[args.indexOf('--rank') + 1]);
const defaults = {
  gid: { stdout: '3\\n' },
  pack: { stdout: JSON.stringify({ bytes: 1000 + rank, seconds: 1, layers: [1, 14], rank }) + '\\n', stderr: 'packing layer 1\\n' },
  verify: { stdout: JSON.stringify({ ok: true }) + '\\n' },
};
act(behavior([host + ' spark ' + sub, '* spark ' + sub]) || defaults[sub] || {});
`;

export function fakeNodes(): FakeNodes {
  const bin = tempDir('spark-fake-bin-');
  const log = join(bin, 'calls.jsonl');
  const write = (name: string, body: string) => {
    const file = join(bin, name);
    writeFileSync(file, `#!${process.execPath}\n${COMMON}\n${body}`);
    chmodSync(file, 0o755);
  };
  write('ssh', SSH);
  write('docker', DOCKER);
  write('spark', SPARK);
  return {
    bin,
    log,
    env: (behavior = {}, extra = {}) => ({
      ...process.env,
      PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}`,
      FAKE_LOG: log,
      FAKE_BEHAVIOR: JSON.stringify(behavior),
      SPARK_SSH: '',
      SPARK_DOCKER: '',
      SPARK_REMOTE_BIN: '',
      ...extra,
    }),
    calls: () =>
      existsSync(log)
        ? readFileSync(log, 'utf8')
            .split('\n')
            .filter((l) => l !== '')
            .map((l) => JSON.parse(l) as FakeCall)
        : [],
  };
}

/** Whether a process is still running (a zombie waiting to be reaped counts as ended). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Polls until `check` returns a value (or throws after `ms`). */
export async function waitFor<T>(check: () => T | undefined, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const v = check();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`condition not met within ${ms} ms`);
}
