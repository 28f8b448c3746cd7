// `spark status --cluster C [recipe]`: every node at once, one ssh round trip each (status.sh):
// spark's version, the launch's container (docker inspect), the newest stats line of the engine
// library in its log, the pack directory's free space and the GPUs' memory; and the head's
// /health from this machine. A node is healthy when it answered, runs this machine's spark (and
// the version most nodes run), its container runs, and, on the head, /health answers 200.
import { SparkError } from '../errors/errors.js';
import type { Io } from '../terminal/io.js';
import { openCluster, readRecipe, type Cluster } from '../recipes/index.js';
import { servingPort } from '../recipes/topology.js';
import { capture, lastLine, nodeArgv, toolsFromEnv, type Tools } from '../remote/ssh.js';
import { shTemplate } from '../remote/sh-template.js';
import { probe } from '../launch/health.js';
import { checkedNamePrefix, containerName, containerPrefix, urlHost } from '../launch/plan.js';
import { versionString } from '../bundle/manifest.js';
import { sameSparkAs } from '../preflight/rules/spark-version.js';

export const DEFAULT_PACK_DIR = '/var/lib/spark/engram';

export interface EngineStats {
  lib: 'libengram_rows' | 'librow_store';
  /** Percent. */
  hitRate?: number;
  p50Us?: number;
  p99Us?: number;
  readsPerS?: number;
  cacheBytes?: number;
  line: string;
}

export interface ContainerState {
  name: string;
  state: string;
  startedAt: string;
  restarts: number;
  exitCode: number;
  finishedAt: string;
  /** Its last lines, when it is not running. */
  tail?: string[];
}

export interface NodeStatus {
  rank: number;
  host: string;
  reachable: boolean;
  /** Why the node did not answer. */
  error?: string;
  spark?: string;
  container?: ContainerState;
  /** Why docker gave no container (no such container, docker down). */
  containerError?: string;
  stats?: EngineStats;
  /** The pack directory's free and total bytes. */
  disk?: { free: number; size: number };
  gpus: { usedMiB: number; totalMiB: number }[];
  head: boolean;
  /** The head's /health: `200`, `HTTP 503`, `ECONNREFUSED`… */
  health?: string;
  healthy: boolean;
  problems: string[];
}

export interface StatusReport {
  cluster: string;
  local: string;
  healthUrl?: string;
  packDir: string;
  healthy: boolean;
  nodes: NodeStatus[];
}

const NUMBER = /^\d+(\.\d+)?$/;

/** One stats line of either engine library (docs/engine-libs.md), or undefined. */
export function parseStatsLine(line: string): EngineStats | undefined {
  const m = /(libengram_rows|librow_store): ((?:[a-z_0-9]+=\S+ ?)+)\s*$/.exec(line);
  if (!m) return undefined;
  const kv = new Map<string, string>();
  for (const part of m[2]!.trim().split(/\s+/)) {
    const eq = part.indexOf('=');
    kv.set(part.slice(0, eq), part.slice(eq + 1));
  }
  const num = (key: string, suffix = '') => {
    const v = kv.get(key);
    if (v === undefined || !v.endsWith(suffix)) return undefined;
    const n = v.slice(0, v.length - suffix.length);
    return NUMBER.test(n) ? Number(n) : undefined;
  };
  const s: EngineStats = { lib: m[1] as EngineStats['lib'], line: `${m[1]}: ${m[2]!.trim()}` };
  const fields: [keyof EngineStats, number | undefined][] = [
    ['hitRate', num('hit_rate', '%')],
    ['p50Us', num('p50_us')],
    ['p99Us', num('p99_us')],
    ['readsPerS', num('reads_per_s')],
    ['cacheBytes', num('cache_bytes')],
  ];
  for (const [k, v] of fields) if (v !== undefined) (s as unknown as Record<string, number>)[k] = v;
  return s;
}

/** The `inspect` line of status.sh: `status|startedAt|restarts|exitCode|finishedAt`. */
export function parseInspect(name: string, text: string): ContainerState | undefined {
  const parts = text.trim().split('|');
  if (parts.length !== 5) return undefined;
  const [state, startedAt, restarts, exitCode, finishedAt] = parts as [string, string, string, string, string];
  if (!/^[a-z]+$/.test(state) || !/^\d+$/.test(restarts) || !/^-?\d+$/.test(exitCode)) return undefined;
  return { name, state, startedAt, restarts: Number(restarts), exitCode: Number(exitCode), finishedAt };
}

/** A node's answer (status.sh's stdout) as facts; health and verdict come later. */
export function parseNodeAnswer(rank: number, host: string, container: string, stdout: string): NodeStatus {
  const node: NodeStatus = { rank, host, reachable: true, gpus: [], head: false, healthy: false, problems: [] };
  const tail: string[] = [];
  for (const line of stdout.split('\n')) {
    const sp = line.indexOf(' ');
    const tag = sp < 0 ? line : line.slice(0, sp);
    const rest = sp < 0 ? '' : line.slice(sp + 1);
    if (tag === 'spark') {
      if (rest.trim() !== '') node.spark = rest.trim();
    } else if (tag === 'inspect') {
      const c = parseInspect(container, rest);
      if (c) node.container = c;
      else node.containerError = `docker inspect said: ${rest.trim()}`;
    } else if (tag === 'inspect-error') {
      node.containerError = /no such (object|container)/i.test(rest) ? 'no such container' : rest.trim();
    } else if (tag === 'stats') {
      const s = parseStatsLine(rest);
      if (s) node.stats = s;
    } else if (tag === 'tail') {
      tail.push(rest);
    } else if (tag === 'df') {
      const [free, size] = rest.trim().split(/\s+/).map(Number);
      if (Number.isFinite(free) && Number.isFinite(size)) node.disk = { free: free! * 1024, size: size! * 1024 };
    } else if (tag === 'gpu') {
      const [used, total] = rest.split(',').map((v) => Number(v.trim()));
      if (Number.isFinite(used) && Number.isFinite(total)) node.gpus.push({ usedMiB: used!, totalMiB: total! });
    }
  }
  if (node.container && tail.length > 0) node.container.tail = tail;
  return node;
}

/** The version most nodes run (ties: the head's). */
function usualVersion(nodes: readonly NodeStatus[]): string | undefined {
  const count = new Map<string, number>();
  for (const n of nodes) if (n.spark) count.set(n.spark, (count.get(n.spark) ?? 0) + 1);
  const head = nodes.find((n) => n.head)?.spark;
  let best: string | undefined;
  for (const [v, c] of count) {
    const b = best === undefined ? -1 : count.get(best)!;
    if (c > b || (c === b && v === head)) best = v;
  }
  return best;
}

/** Each node's problems and verdict, from the facts of every node (in place). */
export function judge(nodes: NodeStatus[], local: string): void {
  const usual = usualVersion(nodes);
  for (const n of nodes) {
    const p: string[] = [];
    if (!n.reachable) p.push(`not reachable${n.error ? `: ${n.error}` : ''}`);
    else {
      if (n.spark === undefined) p.push('spark not installed');
      else if (!sameSparkAs(local, n.spark)) p.push(`spark ${n.spark}, this machine ${local}`);
      else if (usual !== undefined && n.spark !== usual) p.push(`spark ${n.spark}, the other nodes ${usual}`);
      if (!n.container) p.push(n.containerError ?? 'no container');
      else if (n.container.state !== 'running')
        p.push(
          `container ${n.container.state}${n.container.state === 'exited' ? ` (exit ${n.container.exitCode})` : ''}`,
        );
      if (n.head && n.health !== undefined && n.health !== '200') p.push(`/health: ${n.health}`);
    }
    n.problems = p;
    n.healthy = p.length === 0;
  }
}

export interface StatusRequest {
  cluster: string;
  recipe?: string;
  namePrefix?: string;
  healthUrl?: string;
  packDir?: string;
  sparkBin?: string;
  timeoutMs?: number;
}

/** What the command needs to ask the nodes, computed once (a --watch redraw asks again). */
export interface StatusTarget {
  cluster: Cluster;
  tools: Tools;
  prefix: string;
  healthUrl?: string;
  packDir: string;
}

export async function statusTarget(req: StatusRequest, io: Io): Promise<StatusTarget> {
  const { cluster } = await openCluster(req.cluster, { env: io.env, cwd: io.cwd });
  const tools = toolsFromEnv(io.env, req.sparkBin);
  let healthUrl = req.healthUrl;
  if (healthUrl === undefined && req.recipe !== undefined) {
    const { recipe } = await readRecipe(req.recipe, {
      env: io.env,
      ...(cluster.hfCache ? { hfCache: cluster.hfCache } : {}),
    });
    const head = cluster.nodes[cluster.head];
    if (head === undefined) throw new SparkError('E_CLUSTER', `${cluster.file}: head ${cluster.head} is not a node`);
    healthUrl = `http://${urlHost(head.host)}:${servingPort(recipe)}/health`;
  }
  return {
    cluster,
    tools,
    prefix: req.namePrefix === undefined ? containerPrefix(cluster.name) : checkedNamePrefix(req.namePrefix),
    ...(healthUrl !== undefined ? { healthUrl } : {}),
    packDir: req.packDir ?? DEFAULT_PACK_DIR,
  };
}

export async function collectStatus(t: StatusTarget, io: Io, timeoutMs = 30_000): Promise<StatusReport> {
  const template = shTemplate(import.meta.url, 'status.sh');
  const asks = t.cluster.nodes.map(async (n): Promise<NodeStatus> => {
    const container = containerName(t.prefix, n.rank);
    const script = template.fill({
      SPARK: t.tools.spark,
      DOCKER: t.tools.docker,
      CONTAINER: container,
      PACK_DIR: t.packDir,
    });
    const r = await capture(nodeArgv(n.host, ['sh', '-c', script], t.tools), io.env, timeoutMs);
    if (r.code !== 0 || r.signal) {
      const why = r.signal ? `no answer within ${timeoutMs / 1000} s` : lastLine(r.stderr) || `exit ${r.code}`;
      return {
        rank: n.rank,
        host: n.host,
        reachable: false,
        error: why,
        gpus: [],
        head: false,
        healthy: false,
        problems: [],
      };
    }
    return parseNodeAnswer(n.rank, n.host, container, r.stdout);
  });
  const health = t.healthUrl === undefined ? undefined : probe(t.healthUrl, 5_000);
  const nodes = await Promise.all(asks);
  const head = nodes.find((n) => n.rank === t.cluster.head);
  if (head) head.head = true;
  if (head && health) {
    const h = await health;
    head.health = h.status !== undefined ? (h.status === 200 ? '200' : `HTTP ${h.status}`) : (h.error ?? 'no answer');
  }
  const local = versionString();
  judge(nodes, local);
  return {
    cluster: t.cluster.file,
    local,
    ...(t.healthUrl !== undefined ? { healthUrl: t.healthUrl } : {}),
    packDir: t.packDir,
    healthy: nodes.every((n) => n.healthy),
    nodes,
  };
}
