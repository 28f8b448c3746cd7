// `spark launch`: plan, preflight, start every node's container at once, follow their logs,
// wait for the head's /health; on any node's failure stop the others and say which and why.
import { SparkError } from '../errors/errors.js';
import type { Io } from '../terminal/io.js';
import { describeEnd, fanOut, startFanOut, type NodeJobResult } from '../remote/node-jobs.js';
import { formatDuration, waitForHealth } from './health.js';
import type { LaunchPlan, NodePlan } from './plan.js';
import { askNodesFacts, interrupted, thisMachineFacts, type AskRequest } from './facts.js';
import { prepareLaunch, type PlanRequest } from './prepare.js';
import { shJoin } from '../remote/shell.js';
import { capture, lastLine, lastLines, nodeArgv, nodeCommand, toolsFromEnv, type Tools } from '../remote/ssh.js';
import { describeStops, stopCommand, stopContainers } from './stop.js';

export interface LaunchRequest extends AskRequest {
  timeoutMs: number;
  intervalMs: number;
  /** Progress lines while waiting (only on a terminal); 0 = none. */
  progressEveryMs: number;
  /** Leave the containers running when the launch fails. */
  keepOnFailure?: boolean;
  /** Keep streaming the logs after the server is healthy, until the containers end or the signal. */
  follow?: boolean;
}

/** The plan without touching any node: what --dry-run prints, and what the launch would run. */
export function planDryRun(req: PlanRequest, io: Io): Promise<LaunchPlan> {
  return prepareLaunch(req, io, thisMachineFacts(io, toolsFromEnv(io.env)));
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

/**
 * Preflight, then the plan (prepareLaunch, with the nodes' own answers), then exactly that plan:
 * refuse if a container of its names still runs, start every node's container at once, follow
 * the logs until the head's /health answers; on any failure stop the others and say why.
 */
export async function runLaunch(req: LaunchRequest, io: Io): Promise<LaunchResult> {
  const began = performance.now();
  const tools = toolsFromEnv(io.env, req.sparkBin);
  const preflight = { errors: 0, warnings: 0 };
  const plan = await prepareLaunch(req, io, askNodesFacts(req, io, tools, preflight));
  for (const note of plan.notes) io.stderr(`note: ${note}\n`);
  const cleanup = async (): Promise<string> => {
    if (req.keepOnFailure) return 'the containers were left running (--keep-on-failure)';
    io.stderr(`stopping the containers on ${plan.nodes.length} node(s)\n`);
    return describeStops(await stopContainers(plan.nodes, tools, io.env, io.stderr));
  };
  // An earlier launch still running would make every start fail on a name conflict, and the
  // cleanup after it would stop that launch's containers: refuse before touching any.
  await refuseIfRunning(plan, req, tools, io.env);
  await startAll(plan, req, io, tools, cleanup);
  const outcome = await followUntilHealthy(plan, req, io, tools);
  if (outcome.kind === 'healthy') return { plan, seconds: (performance.now() - began) / 1000, preflight };
  throw failedBoot(plan, req, outcome, await cleanup());
}

/** `docker rm` + `docker run -d` on every node at once; the first failure stops the rest and throws. */
async function startAll(
  plan: LaunchPlan,
  req: LaunchRequest,
  io: Io,
  tools: Tools,
  cleanup: () => Promise<string>,
): Promise<void> {
  io.stderr(
    `starting ${plan.nodes.length} container(s): ${plan.nodes.map((n) => `${n.container} on ${n.host}`).join(', ')}\n`,
  );
  const starts = startFanOut(
    plan.nodes.map((n) => ({ rank: n.rank, host: n.host, argv: nodeCommand(n.host, startCommandLine(n), tools) })),
    { env: io.env, write: io.stderr, stopOthersOnFailure: true },
  );
  const onAbort = () => starts.stop();
  req.signal?.addEventListener('abort', onAbort, { once: true });
  const results = await starts.done;
  req.signal?.removeEventListener('abort', onAbort);
  const failed = results.find((r) => !r.ok && !r.stopped);
  if (!failed && !req.signal?.aborted) return;
  const cleaned = await cleanup();
  if (!failed) throw interrupted(cleaned);
  const why = dockerError(failed.tail);
  throw new SparkError(
    'E_NODE_FAILED',
    `node ${failed.rank} (${failed.host}) failed to start: docker run ${describeEnd(failed)}${why ? `: ${why}` : ''}; ${cleaned}`,
    { rank: failed.rank, host: failed.host, exitCode: failed.code },
  );
}

/** The error for a boot that did not become healthy, once the containers were cleaned up. */
function failedBoot(
  plan: LaunchPlan,
  req: LaunchRequest,
  outcome: Exclude<FollowOutcome, { kind: 'healthy' }>,
  cleaned: string,
): SparkError {
  if (outcome.kind === 'aborted') return interrupted(cleaned);
  if (outcome.kind === 'exited') {
    return new SparkError('E_NODE_FAILED', `${outcome.message}; ${cleaned}`, {
      rank: outcome.rank,
      host: plan.nodes[outcome.rank]!.host,
    });
  }
  const headPlan = plan.nodes[plan.head]!;
  return new SparkError(
    'E_HEALTH_TIMEOUT',
    `${plan.healthUrl} did not answer 200 within ${formatDuration(req.timeoutMs)} (last: ${outcome.last}); ${cleaned}; ` +
      `see the logs with: ${shJoin(['ssh', headPlan.host, 'docker', 'logs', headPlan.container])}`,
    { url: plan.healthUrl },
  );
}

async function refuseIfRunning(
  plan: LaunchPlan,
  req: LaunchRequest,
  tools: Tools,
  env: NodeJS.ProcessEnv,
): Promise<void> {
  const jobs = plan.nodes.map((n) => ({
    rank: n.rank,
    host: n.host,
    argv: nodeArgv(n.host, [n.argv[0]!, 'container', 'inspect', '--format', '{{.State.Running}}', n.container], tools),
  }));
  const results = await fanOut(jobs, { env, write: () => {}, captureStdout: true });
  const unreachable = results.filter((r) => r.code === 255 || r.code === 127);
  if (unreachable.length > 0) {
    const list = unreachable
      .map((r) => `node ${r.rank} (${r.host}): ${lastLine(r.tail.join('\n')) || describeEnd(r)}`)
      .join('; ');
    throw new SparkError(
      'E_NODE_FAILED',
      `cannot run docker on ${unreachable.length} node(s), nothing was started: ${list}`,
    );
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
async function containerState(
  node: NodePlan,
  tools: Tools,
  env: NodeJS.ProcessEnv,
): Promise<{ status: string; exit: string; oom: boolean } | undefined> {
  const format = '{{.State.Status}} {{.State.ExitCode}} {{.State.OOMKilled}}';
  const r = await capture(
    nodeArgv(node.host, [node.argv[0]!, 'inspect', '--format', format, node.container], tools),
    env,
    30_000,
  );
  const m = /^(\S+) (-?\d+) (true|false)/.exec(r.stdout.trim());
  return r.code === 0 && m ? { status: m[1]!, exit: m[2]!, oom: m[3] === 'true' } : undefined;
}

/** Why a node's log stream ended, asked of docker (and its last output); undefined while its container still runs. */
async function whyEnded(
  node: NodePlan,
  r: NodeJobResult,
  tools: Tools,
  env: NodeJS.ProcessEnv,
): Promise<{ how: string; last: string } | undefined> {
  const state = await containerState(node, tools, env);
  if (state?.status === 'running') return undefined;
  const how = state
    ? `the container exited with status ${state.exit}${state.oom ? ' (out of memory)' : ''}`
    : `the node stopped answering (${describeEnd(r)}: ${lastLine(r.tail.join('\n'))})`;
  // An engine's last line is often its exit notice; the lines before it say why.
  const last = state ? lastLines(r.tail.join('\n'), EXIT_LINES) : '';
  return { how, last: last ? `; last output: ${last}` : '' };
}

/** Polls the plan's health URL until 200, the timeout, or `signal`. */
function pollHealth(plan: LaunchPlan, req: LaunchRequest, io: Io, signal: AbortSignal): Promise<FollowOutcome> {
  io.stderr(`waiting for ${plan.healthUrl} (timeout ${formatDuration(req.timeoutMs)})\n`);
  return waitForHealth({
    url: plan.healthUrl,
    timeoutMs: req.timeoutMs,
    intervalMs: req.intervalMs,
    signal,
    ...(io.stderrIsTTY && req.progressEveryMs > 0
      ? {
          progressEveryMs: req.progressEveryMs,
          onProgress: (ms: number, last: string) =>
            io.stderr(
              `waiting for ${plan.healthUrl}: ${formatDuration(ms)} of ${formatDuration(req.timeoutMs)} (${last})\n`,
            ),
        }
      : {}),
  }).then((h): FollowOutcome =>
    h.ok
      ? { kind: 'healthy', ms: h.ms }
      : h.reason === 'timeout'
        ? { kind: 'timeout', last: h.last }
        : { kind: 'aborted' },
  );
}

async function followUntilHealthy(plan: LaunchPlan, req: LaunchRequest, io: Io, tools: Tools): Promise<FollowOutcome> {
  const stopHealth = new AbortController();
  let healthy = false;
  let reportExit: (o: FollowOutcome) => void = () => {};
  const exited = new Promise<FollowOutcome>((resolve) => (reportExit = resolve));
  const onStreamEnd = async (r: NodeJobResult) => {
    if (r.stopped) return;
    const node = plan.nodes[r.rank]!;
    const why = await whyEnded(node, r, tools, io.env);
    const who = `node ${node.rank} (${node.host})`;
    if (why === undefined) io.stderr(`note: lost the log stream of ${who}; its container is still running\n`);
    else if (healthy) io.stderr(`note: ${who}: ${why.how}${why.last}\n`);
    else
      reportExit({
        kind: 'exited',
        rank: node.rank,
        message: `${who}: ${why.how} before the server was healthy${why.last}`,
      });
  };
  const follow = startFanOut(
    plan.nodes.map((n) => ({
      rank: n.rank,
      host: n.host,
      argv: nodeArgv(n.host, [n.argv[0]!, 'logs', '--follow', n.container], tools),
    })),
    { env: io.env, write: io.stderr, failed: () => false, onExit: (r) => void onStreamEnd(r) },
  );
  const onAbort = () => stopHealth.abort();
  req.signal?.addEventListener('abort', onAbort, { once: true });
  const health = pollHealth(plan, req, io, stopHealth.signal);
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
