// Node-local work on every node of a cluster at once: `spark pack` (each node packs its own
// rank's rows to its own disk) and `spark verify`, over ssh, with prefixed output, per-node
// progress and a summary.
import { SparkError } from '../errors/errors.js';
import type { Io } from '../terminal/io.js';
import { openCluster } from '../recipes/index.js';
import { fanOut, describeEnd, type NodeJobResult } from '../remote/node-jobs.js';
import { formatDuration } from './health.js';
import { nodeArgv, toolsFromEnv } from '../remote/ssh.js';
import { envNodeDirs, noEnvDir } from './fanout-env.js';

export type NodeTaskKind = 'pack' | 'verify';

export interface NodeTaskRequest {
  kind: NodeTaskKind;
  cluster: string;
  /** pack: the snapshot on the nodes; verify: the packed directory on the nodes (undefined: from --env). */
  path?: string;
  /** pack: the output directory on each node. */
  out?: string;
  split?: string;
  threads?: number;
  layout?: string;
  /** pack: bytes per second each node reads at most (--rate-limit, in MB/s on the node's command line). */
  rateLimit?: number;
  /** pack: keep the snapshot's pages in the page cache (--no-drop-cache). */
  keepCache?: boolean;
  /** verify */
  source?: string;
  full?: boolean;
  sample?: number;
  /** spark on the nodes (default SPARK_REMOTE_BIN, else `spark`). */
  sparkBin?: string;
  progressEveryMs: number;
  /** The Mia stack's .env: each node's directory (pack --out, verify's packdir) from its ENGRAM_DIR. */
  envFile?: string;
}

export interface NodeTaskOutcome {
  rank: number;
  host: string;
  status: 'ok' | 'mismatch' | 'failed';
  exitCode: number | null;
  seconds: number;
  /** The node's JSON summary (stdout of `spark … --json`), when it printed one. */
  result: unknown;
  error?: string;
}

/** The `spark` argument vector run on one node. */
export function nodeTaskArgv(req: NodeTaskRequest, spark: string, rank: number, world: number): string[] {
  if (req.kind === 'pack') {
    if (req.out === undefined)
      throw new SparkError(
        'E_USAGE',
        'fanout pack needs --out DIR (the output directory on each node), or --env FILE naming it (ENGRAM_DIR)',
      );
    if (req.path === undefined) throw new SparkError('E_USAGE', 'fanout pack needs the snapshot');
    const argv = [
      spark,
      'pack',
      req.path,
      '--out',
      req.out,
      '--rank',
      String(rank),
      '--world',
      String(world),
      '--json',
    ];
    // ssh gives the remote pack no terminal: ask for plain progress lines, which the fan-out
    // streams with each node's prefix.
    if (req.progressEveryMs > 0) argv.push('--progress', String(Math.max(1, Math.round(req.progressEveryMs / 1000))));
    if (req.split !== undefined) argv.push('--split', req.split);
    if (req.threads !== undefined) argv.push('--threads', String(req.threads));
    if (req.layout !== undefined) argv.push('--layout', req.layout);
    if (req.rateLimit !== undefined) argv.push('--rate-limit', String(req.rateLimit / 1e6));
    if (req.keepCache) argv.push('--no-drop-cache');
    return argv;
  }
  if (req.path === undefined)
    throw new SparkError('E_USAGE', 'fanout verify needs <packdir>, or --env FILE naming it (ENGRAM_DIR)');
  const argv = [spark, 'verify', req.path, '--json'];
  if (req.source !== undefined) argv.push('--source', req.source);
  if (req.full) argv.push('--full');
  if (req.sample !== undefined) argv.push('--sample', String(req.sample));
  return argv;
}

function parseJson(text: string): unknown {
  const t = text.trim();
  if (t === '') return null;
  try {
    return JSON.parse(t) as unknown;
  } catch {
    return null;
  }
}

/** The error line of a failed node: a `{"error": {"message"}}` document, else the last line. */
function errorLine(r: NodeJobResult, spark: string): string {
  for (const line of [...r.tail].reverse()) {
    const doc = parseJson(line) as { error?: { message?: unknown } } | null;
    if (doc && typeof doc.error?.message === 'string') return doc.error.message;
  }
  if (r.code === 127) return `${spark} not found on the node (install it there, or pass --spark-bin PATH)`;
  if (r.code === 255) return `ssh failed: ${r.tail.at(-1) ?? 'no output'}`;
  return r.tail.at(-1) ?? describeEnd(r);
}

function outcome(r: NodeJobResult, kind: NodeTaskKind, spark: string): NodeTaskOutcome {
  const o: NodeTaskOutcome = {
    rank: r.rank,
    host: r.host,
    status: r.code === 0 ? 'ok' : kind === 'verify' && r.code === 1 ? 'mismatch' : 'failed',
    exitCode: r.code,
    seconds: r.seconds,
    result: parseJson(r.stdout),
  };
  if (r.code !== 0) o.error = errorLine(r, spark);
  return o;
}

export interface NodeTaskReport {
  kind: NodeTaskKind;
  cluster: string;
  world: number;
  nodes: NodeTaskOutcome[];
}

/** Runs the task on every node at once and reports each node's outcome (never throws for a node). */
export async function runNodeTasks(req: NodeTaskRequest, io: Io): Promise<NodeTaskReport> {
  const { cluster } = await openCluster(req.cluster, { env: io.env, cwd: io.cwd });
  const tools = toolsFromEnv(io.env, req.sparkBin);
  // One rank per node, as in serving: node r packs rank r of W = the cluster's node count.
  const world = cluster.nodes.length;
  // Given on the command line, the directory is the same on every node; from --env, each node's own.
  const given = req.kind === 'pack' ? req.out : req.path;
  const fromEnv = req.envFile === undefined ? undefined : await envNodeDirs(req.envFile, cluster, io.env, req.layout);
  const forNode = (rank: number): NodeTaskRequest => {
    if (!fromEnv || given !== undefined) return req;
    const dir = fromEnv.dirs[rank];
    if (dir === undefined)
      throw noEnvDir(req.envFile!, cluster.nodes[rank]!, req.kind === 'pack' ? '--out DIR' : '<packdir>');
    return req.kind === 'pack' ? { ...req, out: dir } : { ...req, path: dir };
  };
  const jobs = cluster.nodes.map((n) => ({
    rank: n.rank,
    host: n.host,
    argv: nodeArgv(n.host, nodeTaskArgv(forNode(n.rank), tools.spark, n.rank, world), tools),
  }));
  io.stderr(`${req.kind} on ${jobs.length} node(s) of ${cluster.name}: ${jobs.map((j) => j.host).join(', ')}\n`);
  const results = await fanOut(jobs, {
    env: io.env,
    write: io.stderr,
    captureStdout: true,
    ...(io.stderrIsTTY && req.progressEveryMs > 0
      ? {
          progressEveryMs: req.progressEveryMs,
          onProgress: (ms: number, running) =>
            io.stderr(
              `${req.kind}: ${jobs.length - running.length} of ${jobs.length} done after ${formatDuration(ms)}; running on ${running.map((j) => j.host).join(', ')}\n`,
            ),
        }
      : {}),
  });
  return { kind: req.kind, cluster: cluster.file, world, nodes: results.map((r) => outcome(r, req.kind, tools.spark)) };
}
