// `spark logs --cluster C`: the launch's containers' logs from every node (logs.sh over ssh),
// merged in time order by docker's timestamps, each line with the `[rank host]` prefix launch
// uses. Without --follow every node's log is read to its end and the whole is sorted; with it,
// lines are held for a short window and let out in time order, so nodes whose lines arrive a
// little apart still interleave by time.
import { spawn, type ChildProcess } from 'node:child_process';
import { SparkError, usageError } from '../errors/errors.js';
import type { Io } from '../terminal/io.js';
import { openCluster } from '../recipes/index.js';
import { killGroup, nodeArgv, toolsFromEnv } from '../remote/ssh.js';
import { shTemplate } from '../remote/sh-template.js';
import { nodePrefix } from '../remote/node-jobs.js';
import { checkedNamePrefix, containerName, containerPrefix } from '../launch/plan.js';

export interface LogsRequest {
  cluster: string;
  rank?: number;
  since?: string;
  follow?: boolean;
  grep?: string;
  namePrefix?: string;
  timestamps?: boolean;
  /** How long a followed line is held for lines of other nodes to overtake it. */
  holdMs?: number;
}

export interface LogLine {
  rank: number;
  host: string;
  /** Sortable: `YYYY-MM-DDTHH:MM:SS.nnnnnnnnn`, or '' when the line had none. */
  key: string;
  stamp: string;
  text: string;
  seq: number;
}

const STAMP = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d) (.*)$/;

/** Splits docker's `--timestamps` prefix off a line: a sortable key (UTC, nanoseconds padded). */
export function splitStamp(line: string): { key: string; stamp: string; text: string } {
  const m = STAMP.exec(line);
  if (!m) return { key: '', stamp: '', text: line };
  let key = `${m[1]}.${(m[2] ?? '').padEnd(9, '0')}`;
  if (m[3] !== 'Z') {
    const ms = Date.parse(`${m[1]}${m[3]}`);
    if (Number.isFinite(ms)) key = `${new Date(ms).toISOString().slice(0, 19)}.${(m[2] ?? '').padEnd(9, '0')}`;
  }
  return { key, stamp: line.slice(0, line.indexOf(' ')), text: m[4]! };
}

export function compareLines(a: LogLine, b: LogLine): number {
  if (a.key !== b.key) return a.key < b.key ? -1 : 1;
  if (a.rank !== b.rank) return a.rank - b.rank;
  return a.seq - b.seq;
}

/**
 * Lines of several nodes in, time order out. A line is let out once it has been held `holdMs`
 * (flush(now)) or at the end (flush()); each node's own lines keep their order.
 */
export class LogMerger {
  private held: (LogLine & { at: number })[] = [];
  private seq = 0;
  private readonly lastKey = new Map<number, string>();
  constructor(
    private readonly emit: (line: LogLine) => void,
    private readonly holdMs: number,
  ) {}

  push(rank: number, host: string, raw: string, now: number): void {
    const { key, stamp, text } = splitStamp(raw);
    // A line without a timestamp (a continuation docker split) sorts with the line before it.
    this.held.push({ rank, host, key: key || (this.lastKey.get(rank) ?? ''), stamp, text, seq: this.seq++, at: now });
    if (key) this.lastKey.set(rank, key);
  }

  /** Lets out what has been held long enough (every line without `now`), in time order. */
  flush(now?: number): void {
    this.held.sort(compareLines);
    const due = now === undefined ? this.held.length : this.held.findIndex((l) => now - l.at < this.holdMs);
    const n = due < 0 ? this.held.length : due;
    // Only a prefix: a line held less long may sort before a later due one.
    for (const l of this.held.splice(0, n)) this.emit(l);
  }
}

export function logsArgs(req: Pick<LogsRequest, 'since' | 'follow'>): string[] {
  const args: string[] = [];
  if (req.since !== undefined) {
    if (!/^[0-9A-Za-z:.+-]+$/.test(req.since))
      throw usageError(`--since ${req.since}: a duration (10m, 1h30m) or a time (2026-12-06T14:00:00)`);
    args.push('--since', req.since);
  }
  if (req.follow) args.push('--follow');
  return args;
}

export interface LogsOutcome {
  nodes: { rank: number; host: string; code: number | null; error?: string }[];
  lines: number;
  interrupted: boolean;
}

export interface LogsRun {
  done: Promise<LogsOutcome>;
  /** Ends every node's reader (closing its stdin ends docker logs on the node). */
  stop(): void;
}

export async function startLogs(req: LogsRequest, io: Io, write: (text: string) => void): Promise<LogsRun> {
  const { cluster } = await openCluster(req.cluster, { env: io.env, cwd: io.cwd });
  const tools = toolsFromEnv(io.env);
  const grep = grepPattern(req.grep);
  const nodes = cluster.nodes.filter((n) => req.rank === undefined || n.rank === req.rank);
  if (nodes.length === 0)
    throw new SparkError('E_USAGE', `--rank ${req.rank}: ${cluster.file} has ranks 0-${cluster.nodes.length - 1}`);
  const prefix = req.namePrefix === undefined ? containerPrefix(cluster.name) : checkedNamePrefix(req.namePrefix);
  const args = logsArgs(req);
  const template = shTemplate(import.meta.url, 'logs.sh');
  const width = Math.max(...nodes.map((n) => n.host.length));
  let count = 0;
  const merger = new LogMerger((l) => {
    count++;
    write(`${nodePrefix(l.rank, l.host, width)}${req.timestamps && l.stamp ? `${l.stamp} ` : ''}${l.text}\n`);
  }, req.holdMs ?? 500);
  const children: ChildProcess[] = [];
  let interrupted = false;
  const timer = req.follow ? setInterval(() => merger.flush(performance.now()), 100) : undefined;
  const runs = nodes.map((n) => {
    const script = template.fill({ DOCKER: tools.docker, CONTAINER: containerName(prefix, n.rank), ARGS: args });
    const reader: NodeReader = { argv: nodeArgv(n.host, ['sh', '-c', script], tools), env: io.env, grep, merger };
    return readNode(n, reader, children, () => interrupted);
  });
  const stop = () => {
    if (interrupted) return;
    interrupted = true;
    for (const c of children) c.stdin?.end();
    // ssh that does not end once its session did (a hung connection): its group is ended.
    const grace = setTimeout(() => {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) killGroup(c.pid, 'SIGTERM');
    }, 3000);
    grace.unref();
  };
  const done = Promise.all(runs).then((results) => {
    if (timer) clearInterval(timer);
    merger.flush();
    for (const c of children) c.stdin?.end();
    return { nodes: results, lines: count, interrupted };
  });
  return { done, stop };
}

function grepPattern(grep: string | undefined): RegExp | undefined {
  if (grep === undefined) return undefined;
  try {
    return new RegExp(grep);
  } catch (err) {
    throw usageError(`--grep ${grep}: ${(err as Error).message}`);
  }
}

interface NodeReader {
  /** ssh to the node running logs.sh. */
  argv: string[];
  env: NodeJS.ProcessEnv;
  grep: RegExp | undefined;
  merger: LogMerger;
}

/** One node's log stream into the merger, until its docker logs ends (or spark closes its stdin). */
function readNode(
  n: { rank: number; host: string },
  r: NodeReader,
  children: ChildProcess[],
  interrupted: () => boolean,
): Promise<LogsOutcome['nodes'][number]> {
  return new Promise((resolve) => {
    // stdin stays open (a pipe spark never writes): logs.sh stops docker logs when it closes.
    const child = spawn(r.argv[0]!, r.argv.slice(1), { env: r.env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    children.push(child);
    child.stdin!.on('error', () => {});
    let partial = '';
    let err = '';
    // docker logs --timestamps stamps every line of the container; a line without a stamp
    // is docker's own (no such container, daemon down): kept as the node's error.
    const take = (text: string) => {
      const s = splitStamp(text);
      if (s.key === '') err += text + '\n';
      else if (!r.grep || r.grep.test(s.text)) r.merger.push(n.rank, n.host, text, performance.now());
    };
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      const parts = (partial + d).split('\n');
      partial = parts.pop() ?? '';
      for (const p of parts) take(p.replace(/\r$/, ''));
    });
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.on('error', (e) => resolve({ rank: n.rank, host: n.host, code: 127, error: e.message }));
    child.on('close', (code) => {
      if (partial !== '') take(partial);
      const last = err
        .trim()
        .split('\n')
        .filter((l) => l !== '' && !/^Terminated$/.test(l))
        .at(-1);
      const failed = code !== 0 && !interrupted();
      resolve({ rank: n.rank, host: n.host, code, ...(failed ? { error: last ?? `exit ${code}` } : {}) });
    });
  });
}
