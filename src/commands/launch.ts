// `spark launch <recipe.toml> --cluster FILE`: one container per node from a recipe (docs/launch.md).
import { Command, Option } from 'commander';
import type { CliContext } from './context.js';
import { usageError } from '../errors/errors.js';
import type { CommandResult, Io } from '../terminal/io.js';
import {
  checkedNamePrefix,
  formatDuration,
  formatPlan,
  planDryRun,
  planJson,
  runLaunch,
  shJoin,
  stopArgv,
  stopCommand,
  stopContainers,
  stopFailure,
  stopTargets,
  toolsFromEnv,
  type LaunchRequest,
} from '../launch/index.js';
import { clusterSpec, openCluster } from '../recipes/index.js';
import { table } from '../terminal/format.js';
import { parseSeconds } from './options.js';

export interface LaunchFlags {
  cluster?: string;
  dryRun?: boolean;
  json?: boolean;
  stop?: boolean;
  env?: string;
  revision?: string;
  healthUrl?: string;
  timeout?: string;
  interval?: string;
  progress?: string;
  force?: boolean;
  keepOnFailure?: boolean;
  cpuOnly?: boolean;
  follow?: boolean;
  name?: string;
  sparkBin?: string;
  detectGid?: boolean;
  nodeTimeout?: string;
}

/** Seconds of the /health wait when a flag is left out: shown by --help and applied by launchRequest. */
const HEALTH_WAIT_DEFAULT = { timeout: '1200', interval: '5', progress: '30' } as const;

export function launchRequest(recipe: string, f: LaunchFlags, signal?: AbortSignal): LaunchRequest {
  if (f.cluster === undefined)
    throw usageError('spark launch needs --cluster FILE or a sparkrun cluster name (the nodes to run on)');
  const req: LaunchRequest = {
    recipe,
    cluster: f.cluster,
    timeoutMs: parseSeconds(f.timeout ?? HEALTH_WAIT_DEFAULT.timeout, '--timeout', 0.001) * 1000,
    intervalMs: parseSeconds(f.interval ?? HEALTH_WAIT_DEFAULT.interval, '--interval', 0.001) * 1000,
    progressEveryMs: parseSeconds(f.progress ?? HEALTH_WAIT_DEFAULT.progress, '--progress') * 1000,
    detectGid: f.detectGid !== false,
  };
  if (f.env !== undefined) req.env = f.env;
  if (f.revision !== undefined) req.revision = f.revision;
  if (f.healthUrl !== undefined) req.healthUrl = f.healthUrl;
  if (f.name !== undefined) req.namePrefix = checkedNamePrefix(f.name);
  if (f.sparkBin !== undefined) req.sparkBin = f.sparkBin;
  if (f.nodeTimeout !== undefined) req.nodeTimeoutMs = parseSeconds(f.nodeTimeout, '--node-timeout', 0.001) * 1000;
  if (f.force) req.force = true;
  if (f.keepOnFailure) req.keepOnFailure = true;
  if (f.cpuOnly) req.cpuOnly = true;
  if (f.follow) req.follow = true;
  if (signal) req.signal = signal;
  return req;
}

async function runStop(f: LaunchFlags, io: Io): Promise<CommandResult> {
  if (f.cluster === undefined) throw usageError('spark launch --stop needs --cluster FILE or a sparkrun cluster name');
  const { cluster } = await openCluster(f.cluster, { env: io.env, cwd: io.cwd });
  const targets = stopTargets(cluster, f.name);
  const tools = toolsFromEnv(io.env);
  if (f.dryRun) {
    // A dry run runs nothing anywhere: it says what --stop would run on each node.
    const nodes = targets.map((t) => ({ ...t, argv: stopArgv(t, tools) }));
    const rows = nodes.map((n) => [n.rank, n.host, n.container, shJoin(n.argv)]);
    return {
      json: { cluster: cluster.file, dryRun: true, nodes },
      text: table(['rank', 'host', 'container', 'would run'], rows),
      exitCode: 0,
    };
  }
  const outcomes = await stopContainers(targets, tools, io.env, io.stderr);
  const failure = stopFailure(outcomes);
  if (failure) throw failure;
  const rows = outcomes.map((o) => [o.rank, o.host, o.container, o.status]);
  return {
    json: { cluster: cluster.file, nodes: outcomes },
    text: table(['rank', 'host', 'container', 'status'], rows),
    exitCode: 0,
  };
}

export async function runLaunchCommand(
  recipe: string | undefined,
  given: LaunchFlags,
  io: Io,
  signal?: AbortSignal,
): Promise<CommandResult> {
  // No --cluster: sparkrun's default cluster, when it names one.
  const cluster = await clusterSpec(given.cluster, io.env);
  const f: LaunchFlags = cluster === undefined ? given : { ...given, cluster };
  if (f.stop) return runStop(f, io);
  if (recipe === undefined) throw usageError('spark launch needs a recipe: spark launch <recipe.toml> --cluster FILE');
  const req = launchRequest(recipe, f, signal);
  if (f.dryRun) {
    const plan = await planDryRun(req, io);
    return { json: planJson(plan), text: formatPlan(plan), exitCode: 0 };
  }
  const result = await runLaunch(req, io);
  const head = result.plan.nodes[result.plan.head]!;
  const text = [
    `healthy: ${result.plan.healthUrl} after ${formatDuration(result.seconds * 1000)}`,
    ...result.plan.nodes.map((n) => `  node ${n.rank}: ${n.container} on ${n.host}`),
    `logs: ${shJoin(['ssh', head.host, 'docker', 'logs', '-f', head.container])}`,
    `stop: ${stopCommand(result.plan.cluster, f.name)}`,
  ].join('\n');
  const json = { ...planJson(result.plan), healthy: true, seconds: result.seconds, preflight: result.preflight };
  return { json, text, exitCode: 0 };
}

/** How a launch waits for the head's /health: where it asks, for how long, how often, how chatty. */
function healthWaitOptions(): Option[] {
  return [
    new Option('--health-url <url>', 'URL to poll (default http://<head host>:<port>/health)'),
    new Option('--timeout <seconds>', 'give up waiting for /health after this long').default(
      HEALTH_WAIT_DEFAULT.timeout,
    ),
    new Option('--interval <seconds>', 'time between /health polls').default(HEALTH_WAIT_DEFAULT.interval),
    new Option('--progress <seconds>', 'a progress line this often while waiting (terminal only; 0 = none)').default(
      HEALTH_WAIT_DEFAULT.progress,
    ),
  ];
}

export function launchCommand(ctx: CliContext): Command {
  const launch = new Command('launch')
    .description('run a recipe on a cluster: one container per node over ssh, then wait for the head to be healthy')
    .argument('[recipe.toml]', 'the recipe to launch (not needed with --stop)')
    .option(
      '--cluster <file|name>',
      'cluster file ([[nodes]] host, fabric_addr, dist_addr and [nodes.env] in rank order, head, hf_cache, dist_port, [nccl]), or a sparkrun cluster: its file, or its name under ~/.config/sparkrun/clusters (default: its .default)',
    )
    .option('--dry-run', "print each node's container command and run nothing")
    .option('--json', 'one JSON document on stdout: {"nodes": [{"rank", "host", "argv", "env", ...}], ...}')
    .option('--stop', "stop the launch's containers on every node of the cluster")
    .option('--env <file>', 'an env file whose values win over the recipe [env]')
    .option(
      '--revision <rev>',
      "model revision to serve (commit, or a ref under refs/); default the recipe's --revision, else refs/main",
    );
  for (const option of healthWaitOptions()) launch.addOption(option);
  return launch
    .option('--force', 'launch even when preflight reports errors')
    .option('--keep-on-failure', 'leave the containers running when the launch fails')
    .option(
      '--cpu-only',
      'no --gpus all, --device /dev/infiniband, IPC_LOCK, memlock=-1: a smoke run of mounts and entrypoint on hosts without GPUs or RDMA',
    )
    .option('--follow', 'keep streaming the logs once healthy, until Ctrl-C')
    .option('--name <prefix>', 'container name prefix (default spark-<cluster name>); containers are <prefix>-r<rank>')
    .option(
      '--spark-bin <path>',
      'spark on the nodes, for the preflight and the GID detection (default SPARK_REMOTE_BIN, else spark)',
    )
    .option('--node-timeout <seconds>', 'the most one node may take to answer the preflight', '30')
    .option(
      '--no-detect-gid',
      'do not ask each node for B12X_ROCE_GID_INDEX (spark gid) when the env sets B12X_ROCE_HCA',
    )
    .addHelpText(
      'after',
      `
Without --dry-run: preflight runs first, on every node over ssh (errors stop the launch unless
--force); then every node's container starts at once over ssh (docker run -d; a stopped
container of the same name is removed first, a running one refuses the launch), the logs stream
with a [rank host] prefix, and the launch waits for the head's /health. A node that fails to
start, or whose container exits before the server is healthy, stops the others (docker stop
keeps them, so docker logs still works); exit 3.
ssh and docker are looked up on PATH; SPARK_SSH and SPARK_DOCKER override them.

Examples:
  spark launch recipes/dsv41-flash-4x-sglang-aiden16/recipe.toml --cluster recipes/clusters/4node-switch.toml --dry-run
  spark launch recipes/deepseek-v4-flash-eugr-agent/recipe.toml --cluster recipes/clusters/2node-pair.toml --dry-run --json
  spark launch recipes/dsv41-flash-4x-sglang-packed/recipe.toml --cluster recipes/clusters/4node-switch.toml
  spark launch --stop --cluster recipes/clusters/4node-switch.toml`,
    )
    .action(async (recipe: string | undefined, flags: LaunchFlags) => {
      // Ctrl-C during a launch stops the containers it started (or ends --follow).
      const abort = new AbortController();
      const onSignal = () => abort.abort();
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      try {
        ctx.emit(await runLaunchCommand(recipe, flags, ctx.io, abort.signal), Boolean(flags.json));
      } finally {
        process.removeListener('SIGINT', onSignal);
        process.removeListener('SIGTERM', onSignal);
      }
    });
}
