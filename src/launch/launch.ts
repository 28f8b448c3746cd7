// `spark launch`: plan, preflight, start every node's container at once, follow their logs,
// wait for the head's /health; on any node's failure stop the others and say which and why.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { SparkError } from '../errors.js';
import type { Io } from '../io.js';
import { formatReport, runPreflight } from '../preflight/index.js';
import { effectiveEnv, envValues, openCluster, readEnvFile, readRecipe, type Cluster, type EnvFile, type FileDiagnostic, type Recipe } from '../recipes/index.js';
import { recipeModelArg } from '../engine/args.js';
import { describeEnd, fanOut, startFanOut, type NodeJobResult } from './fanout.js';
import { formatDuration, waitForHealth } from './health.js';
import { buildPlan, type LaunchPlan, type NodePlan } from './plan.js';
import { gidQuery, probeGids, probeHomes, readTextViaHead } from './probe.js';
import { shJoin } from '../remote/shell.js';
import { resolveSnapshot, type ReadText } from './snapshot.js';
import { capture, lastLine, lastLines, nodeArgv, nodeCommand, toolsFromEnv, type Tools } from '../remote/ssh.js';
import { describeStops, stopCommand, stopContainers, type StopOutcome } from './stop.js';

export interface LaunchRequest {
  recipe: string;
  cluster: string;
  /** An env file whose values win over the recipe's [env]. */
  env?: string;
  /** Pin the model revision (commit, or a ref name under refs/). */
  revision?: string;
  healthUrl?: string;
  /** Container name prefix; names are `<prefix>-r<rank>`. */
  namePrefix?: string;
  /** spark on the nodes (for the preflight and `spark gid`). */
  sparkBin?: string;
  /** The most one node may take to answer the preflight (ms). */
  nodeTimeoutMs?: number;
  /** Ask each node for B12X_ROCE_GID_INDEX when the env names B12X_ROCE_HCA (default true). */
  detectGid?: boolean;
  timeoutMs: number;
  intervalMs: number;
  /** Progress lines while waiting (only on a terminal); 0 = none. */
  progressEveryMs: number;
  /** Launch even when preflight reports errors. */
  force?: boolean;
  /** Containers without the GPU and RDMA flags: a smoke run on hosts without them. */
  cpuOnly?: boolean;
  /** Leave the containers running when the launch fails. */
  keepOnFailure?: boolean;
  /** Keep streaming the logs after the server is healthy, until the containers end or the signal. */
  follow?: boolean;
  /** Aborting stops a launch in progress (and its containers) or ends --follow. */
  signal?: AbortSignal;
}

export interface LaunchInputs {
  recipe: Recipe;
  cluster: Cluster;
  envFile?: EnvFile;
  diagnostics: FileDiagnostic[];
}

export async function loadInputs(req: Pick<LaunchRequest, 'recipe' | 'cluster' | 'env'>, io: Io): Promise<LaunchInputs> {
  const loaded = await openCluster(req.cluster, { env: io.env, cwd: io.cwd });
  const hfCache = loaded.cluster.hfCache;
  const { recipe, diagnostics } = await readRecipe(req.recipe, { env: io.env, ...(hfCache !== undefined ? { hfCache } : {}) });
  const inputs: LaunchInputs = { recipe, cluster: loaded.cluster, diagnostics: [...diagnostics, ...loaded.diagnostics] };
  if (req.env !== undefined) {
    inputs.envFile = await readEnvFile(req.env, io.env);
    inputs.diagnostics.push(...inputs.envFile.diagnostics);
  }
  return inputs;
}

function usesHome(inputs: LaunchInputs): boolean {
  return [inputs.cluster.hfCache ?? '', ...inputs.recipe.extraMounts.map((m) => m.host)].some((p) => p === '~' || p.startsWith('~/'));
}

/** The plan without touching any node: what --dry-run prints. */
export async function planDryRun(req: LaunchRequest, io: Io): Promise<LaunchPlan> {
  const inputs = await loadInputs(req, io);
  const home = io.env.HOME ?? homedir();
  const env = envValues(effectiveEnv(inputs.recipe, inputs.cluster, inputs.envFile));
  let unresolved: string | undefined;
  const snapshot =
    recipeModelArg(inputs.recipe) === undefined
      ? await resolveSnapshot(inputs.recipe, inputs.cluster, { ...pin(req, env), home }).catch((err: unknown) => {
          // This machine may not mount the cache (a workstation): the launch reads the ref on
          // the head, which a dry run does not contact. Say so instead of failing.
          const path = err instanceof SparkError && err.code === 'E_SNAPSHOT' ? err.details.path : undefined;
          if (typeof path !== 'string' || !/\/refs\/[^/]+$/.test(path) || existsSync(path)) throw err;
          unresolved = path;
          return undefined;
        })
      : undefined;
  const plan = buildPlan(
    { ...inputs, ...(snapshot ? { snapshot } : {}), ...(unresolved !== undefined ? { unresolvedModel: inputs.recipe.model } : {}) },
    {
      home: () => home,
      ...(req.namePrefix ? { namePrefix: req.namePrefix } : {}),
      ...(req.healthUrl ? { healthUrl: req.healthUrl } : {}),
      ...(req.cpuOnly ? { cpuOnly: true } : {}),
    },
  );
  for (const d of inputs.diagnostics) plan.notes.unshift(`${d.severity}: ${d.message}`);
  if (unresolved !== undefined) {
    plan.notes.push(
      `${unresolved} is not readable on this machine, so the plan passes the model id ${inputs.recipe.model} where the ` +
        'launch passes the snapshot: the launch reads the ref on the head and pins that revision (or pass --revision)',
    );
  }
  if (usesHome(inputs)) plan.notes.push(`~ in host paths is shown as this machine's home (${home}); the launch asks each node for its own`);
  if (req.detectGid !== false && gidQuery(env)) {
    plan.notes.push('B12X_ROCE_GID_INDEX is detected on each node at launch (spark gid --index-only); a dry run cannot show it');
  }
  return plan;
}

function pin(req: Pick<LaunchRequest, 'revision'>, env: Record<string, string>): { revision?: string; engramDir?: string } {
  return {
    ...(req.revision !== undefined ? { revision: req.revision } : {}),
    ...(env.SPARK_ENGRAM_DIR !== undefined ? { engramDir: env.SPARK_ENGRAM_DIR } : {}),
  };
}

/** The command line run on a node to start its container: a stale stopped one is removed first. */
export function startCommandLine(node: NodePlan): string {
  const docker = node.argv[0]!;
  return `${shJoin([docker, 'rm', node.container])} >/dev/null 2>&1; ${shJoin(node.argv)}`;
}

/**
 * The line that says why a docker command failed: its last, except the hint docker's CLI
 * prints after the daemon's error (`Run 'docker run --help' for more information`).
 */
export function dockerError(tail: readonly string[]): string {
  return lastLine(tail.filter((l) => !/^\s*Run '[^']*--help' for more information\s*$/.test(l)).join('\n'));
}

export interface LaunchResult {
  plan: LaunchPlan;
  seconds: number;
  preflight: { errors: number; warnings: number };
}

function interrupted(cleaned?: string): SparkError {
  return new SparkError('E_NODE_FAILED', `launch interrupted${cleaned ? `; ${cleaned}` : ', nothing was started'}`);
}

export async function runLaunch(req: LaunchRequest, io: Io): Promise<LaunchResult> {
  const began = performance.now();
  const log = (text: string) => io.stderr(text.endsWith('\n') ? text : text + '\n');
  const tools = toolsFromEnv(io.env, req.sparkBin);
  const inputs = await loadInputs(req, io);
  const { recipe, cluster } = inputs;
  const head = cluster.nodes[cluster.head]!;
  const readText: ReadText = readTextViaHead(head, tools, io.env);
  const env = envValues(effectiveEnv(recipe, cluster, inputs.envFile));
  // Resolved once: preflight checks the very snapshot the containers are given. When it cannot
  // be resolved (the head's cache unreadable), preflight still runs on every node first: its
  // report says why (a NAS not mounted, a node down) better than the ref that was not found.
  let unresolved: SparkError | undefined;
  const snapshot =
    recipeModelArg(recipe) === undefined
      ? await resolveSnapshot(recipe, cluster, { ...pin(req, env), readText, home: io.env.HOME ?? homedir() }).catch((err: unknown) => {
          if (!(err instanceof SparkError) || err.code !== 'E_SNAPSHOT') throw err;
          unresolved = err;
          return undefined;
        })
      : undefined;

  // The same preflight `spark preflight --cluster` runs: every node, over ssh.
  const report = await runPreflight(
    {
      recipe: req.recipe,
      cluster: req.cluster,
      ...(req.env ? { env: req.env } : {}),
      ...(req.sparkBin !== undefined ? { sparkBin: req.sparkBin } : {}),
      ...(req.nodeTimeoutMs !== undefined ? { nodeTimeoutMs: req.nodeTimeoutMs } : {}),
      ...(snapshot ? { servedSnapshot: snapshot.hostPath } : {}),
    },
    io,
  );
  if (report.counts.error > 0 || report.counts.warn > 0) log(formatReport(report, io.color));
  if (report.counts.error > 0 && !req.force) {
    throw new SparkError('E_CHECK_FAILED', `preflight found ${report.counts.error} error(s), nothing was started; fix them, or pass --force to launch anyway`);
  }
  if (unresolved) throw unresolved;
  if (req.signal?.aborted) throw interrupted();

  const homes = usesHome(inputs) ? await probeHomes(cluster.nodes, tools, io.env) : undefined;
  const query = req.detectGid === false ? undefined : gidQuery(env);
  const gids = query ? await probeGids(cluster.nodes, query, tools, io.env) : undefined;
  const plan = buildPlan(
    { ...inputs, ...(snapshot ? { snapshot } : {}) },
    {
      docker: tools.docker,
      home: (rank) => homes?.get(rank) ?? io.env.HOME ?? homedir(),
      ...(gids ? { nodeEnv: (rank: number) => ({ B12X_ROCE_GID_INDEX: gids.get(rank)! }) } : {}),
      ...(req.namePrefix ? { namePrefix: req.namePrefix } : {}),
      ...(req.healthUrl ? { healthUrl: req.healthUrl } : {}),
      ...(req.cpuOnly ? { cpuOnly: true } : {}),
    },
  );
  for (const note of plan.notes) log(`note: ${note}`);

  const cleanup = async (): Promise<string> => {
    if (req.keepOnFailure) return 'the containers were left running (--keep-on-failure)';
    log(`stopping the containers on ${plan.nodes.length} node(s)`);
    const outcomes: StopOutcome[] = await stopContainers(plan.nodes, tools, io.env, io.stderr);
    return describeStops(outcomes);
  };

  // 0. An earlier launch still running would make every start fail on a name conflict, and
  //    the cleanup after it would stop that launch's containers: refuse before touching any.
  await refuseIfRunning(plan, req, tools, io.env);

  // 1. Start: `docker run -d` on every node at once; the first failure stops the rest.
  log(`starting ${plan.nodes.length} container(s): ${plan.nodes.map((n) => `${n.container} on ${n.host}`).join(', ')}`);
  const starts = startFanOut(
    plan.nodes.map((n) => ({ rank: n.rank, host: n.host, argv: nodeCommand(n.host, startCommandLine(n), tools) })),
    { env: io.env, write: io.stderr, stopOthersOnFailure: true },
  );
  const onAbort = () => starts.stop();
  req.signal?.addEventListener('abort', onAbort, { once: true });
  const startResults = await starts.done;
  req.signal?.removeEventListener('abort', onAbort);
  const failedStart = startResults.find((r) => !r.ok && !r.stopped);
  if (failedStart || req.signal?.aborted) {
    const cleaned = await cleanup();
    if (!failedStart) throw interrupted(cleaned);
    const why = dockerError(failedStart.tail);
    throw new SparkError(
      'E_NODE_FAILED',
      `node ${failedStart.rank} (${failedStart.host}) failed to start: docker run ${describeEnd(failedStart)}` +
        `${why ? `: ${why}` : ''}; ${cleaned}`,
      { rank: failedStart.rank, host: failedStart.host, exitCode: failedStart.code },
    );
  }

  // 2. Follow every node's logs and poll the head's /health until it answers 200.
  const outcome = await followUntilHealthy(plan, req, io, tools);
  if (outcome.kind === 'healthy') {
    return { plan, seconds: (performance.now() - began) / 1000, preflight: { errors: report.counts.error, warnings: report.counts.warn } };
  }
  const cleaned = await cleanup();
  if (outcome.kind === 'aborted') throw interrupted(cleaned);
  if (outcome.kind === 'exited') {
    throw new SparkError('E_NODE_FAILED', `${outcome.message}; ${cleaned}`, { rank: outcome.rank, host: plan.nodes[outcome.rank]!.host });
  }
  const headPlan = plan.nodes[plan.head]!;
  throw new SparkError(
    'E_HEALTH_TIMEOUT',
    `${plan.healthUrl} did not answer 200 within ${formatDuration(req.timeoutMs)} (last: ${outcome.last}); ${cleaned}; ` +
      `see the logs with: ${shJoin(['ssh', headPlan.host, 'docker', 'logs', headPlan.container])}`,
    { url: plan.healthUrl },
  );
}

async function refuseIfRunning(plan: LaunchPlan, req: LaunchRequest, tools: Tools, env: NodeJS.ProcessEnv): Promise<void> {
  const jobs = plan.nodes.map((n) => ({
    rank: n.rank,
    host: n.host,
    argv: nodeArgv(n.host, [n.argv[0]!, 'container', 'inspect', '--format', '{{.State.Running}}', n.container], tools),
  }));
  const results = await fanOut(jobs, { env, write: () => {}, captureStdout: true });
  const unreachable = results.filter((r) => r.code === 255 || r.code === 127);
  if (unreachable.length > 0) {
    const list = unreachable.map((r) => `node ${r.rank} (${r.host}): ${lastLine(r.tail.join('\n')) || describeEnd(r)}`).join('; ');
    throw new SparkError('E_NODE_FAILED', `cannot run docker on ${unreachable.length} node(s), nothing was started: ${list}`);
  }
  const busy = results.filter((r) => r.code === 0 && r.stdout.trim() === 'true');
  if (busy.length > 0) {
    const list = busy.map((r) => `${plan.nodes[r.rank]!.container} on node ${r.rank} (${r.host})`).join(', ');
    throw new SparkError(
      'E_NODE_FAILED',
      `already running: ${list}; nothing was started; stop them first (${stopCommand(req.cluster, req.namePrefix)}) or pick other names with --name`,
    );
  }
}

/** Lines of a container's output quoted when it exits before the server is healthy. */
const EXIT_LINES = 3;

type FollowOutcome =
  | { kind: 'healthy'; ms: number }
  | { kind: 'timeout'; last: string }
  | { kind: 'aborted' }
  | { kind: 'exited'; rank: number; message: string };

/** What `docker inspect` says about a container whose log stream ended. */
async function containerState(node: NodePlan, tools: Tools, env: NodeJS.ProcessEnv): Promise<{ status: string; exit: string; oom: boolean } | undefined> {
  const format = '{{.State.Status}} {{.State.ExitCode}} {{.State.OOMKilled}}';
  const r = await capture(nodeArgv(node.host, [node.argv[0]!, 'inspect', '--format', format, node.container], tools), env, 30_000);
  const m = /^(\S+) (-?\d+) (true|false)/.exec(r.stdout.trim());
  return r.code === 0 && m ? { status: m[1]!, exit: m[2]!, oom: m[3] === 'true' } : undefined;
}

async function followUntilHealthy(plan: LaunchPlan, req: LaunchRequest, io: Io, tools: Tools): Promise<FollowOutcome> {
  const stopHealth = new AbortController();
  let healthy = false;
  let reportExit: (o: FollowOutcome) => void = () => {};
  const exited = new Promise<FollowOutcome>((resolve) => (reportExit = resolve));
  const onStreamEnd = async (r: NodeJobResult) => {
    if (r.stopped) return;
    const node = plan.nodes[r.rank]!;
    const state = await containerState(node, tools, io.env);
    if (state?.status === 'running') {
      io.stderr(`note: lost the log stream of node ${node.rank} (${node.host}); its container is still running\n`);
      return;
    }
    const how = state
      ? `the container exited with status ${state.exit}${state.oom ? ' (out of memory)' : ''}`
      : `the node stopped answering (${describeEnd(r)}: ${lastLine(r.tail.join('\n'))})`;
    // An engine's last line is often its exit notice; the lines before it say why.
    const last = state ? lastLines(r.tail.join('\n'), EXIT_LINES) : '';
    if (healthy) {
      io.stderr(`note: node ${node.rank} (${node.host}): ${how}${last ? `; last output: ${last}` : ''}\n`);
      return;
    }
    reportExit({
      kind: 'exited',
      rank: node.rank,
      message: `node ${node.rank} (${node.host}): ${how} before the server was healthy${last ? `; last output: ${last}` : ''}`,
    });
  };
  const follow = startFanOut(
    plan.nodes.map((n) => ({ rank: n.rank, host: n.host, argv: nodeArgv(n.host, [n.argv[0]!, 'logs', '--follow', n.container], tools) })),
    { env: io.env, write: io.stderr, failed: () => false, onExit: (r) => void onStreamEnd(r) },
  );
  const onAbort = () => stopHealth.abort();
  req.signal?.addEventListener('abort', onAbort, { once: true });
  io.stderr(`waiting for ${plan.healthUrl} (timeout ${formatDuration(req.timeoutMs)})\n`);
  const health = waitForHealth({
    url: plan.healthUrl,
    timeoutMs: req.timeoutMs,
    intervalMs: req.intervalMs,
    signal: stopHealth.signal,
    ...(io.stderrIsTTY && req.progressEveryMs > 0
      ? {
          progressEveryMs: req.progressEveryMs,
          onProgress: (ms: number, last: string) =>
            io.stderr(`waiting for ${plan.healthUrl}: ${formatDuration(ms)} of ${formatDuration(req.timeoutMs)} (${last})\n`),
        }
      : {}),
  }).then((h): FollowOutcome => (h.ok ? { kind: 'healthy', ms: h.ms } : h.reason === 'timeout' ? { kind: 'timeout', last: h.last } : { kind: 'aborted' }));
  const outcome = await Promise.race([health, exited]);
  stopHealth.abort();
  await health;
  if (outcome.kind === 'healthy') {
    healthy = true;
    io.stderr(`healthy: ${plan.healthUrl} answered 200 after ${formatDuration(outcome.ms)}\n`);
  }
  if (outcome.kind === 'healthy' && req.follow && !req.signal?.aborted) {
    // Keep streaming until every container ends or the caller aborts (Ctrl-C).
    const end = () => follow.stop();
    req.signal?.addEventListener('abort', end, { once: true });
    await follow.done;
    req.signal?.removeEventListener('abort', end);
  }
  req.signal?.removeEventListener('abort', onAbort);
  follow.stop();
  await follow.done;
  return outcome;
}
