// `spark status --cluster C [recipe]`: every node of a cluster at a glance (docs/cluster-ops.md).
import { Command } from 'commander';
import type { CliContext } from './context.js';
import type { CommandResult, Io } from '../terminal/io.js';
import { formatBytes, table } from '../terminal/format.js';
import { formatDuration } from '../launch/health.js';
import {
  collectStatus,
  statusTarget,
  DEFAULT_PACK_DIR,
  type NodeStatus,
  type StatusReport,
  type StatusRequest,
} from '../status/status.js';
import { parseSeconds } from './options.js';

interface StatusFlags {
  cluster: string;
  name?: string;
  healthUrl?: string;
  packDir?: string;
  sparkBin?: string;
  watch?: string;
  json?: boolean;
}

/** `2026-12-06T14:00:00.123456789Z` → how long ago, from `now`. */
export function since(iso: string, now: number): string {
  const t = Date.parse(iso);
  if (!Number.isFinite(t) || t <= 0) return '';
  return `${formatDuration(Math.max(0, now - t))} ago`;
}

function stateOf(n: NodeStatus): string {
  if (!n.reachable) return 'unreachable';
  if (!n.container) return n.containerError === 'no such container' ? 'none' : 'docker?';
  const c = n.container;
  return c.state === 'exited' ? `exited ${c.exitCode}` : c.state;
}

export function formatStatus(r: StatusReport, now = Date.now()): string {
  const rows = r.nodes.map((n) => {
    const s = n.stats;
    const c = n.container;
    return [
      `${n.rank}${n.head ? '*' : ''}`,
      n.host,
      n.spark ?? '',
      stateOf(n),
      c ? since(c.state === 'running' ? c.startedAt : c.finishedAt, now) : '',
      c ? c.restarts : '',
      n.head ? (n.health ?? '') : '',
      s?.hitRate !== undefined ? `${s.hitRate}%` : '',
      s?.p50Us !== undefined ? `${s.p50Us}/${s.p99Us ?? '?'}` : '',
      s?.readsPerS ?? '',
      s?.cacheBytes !== undefined ? formatBytes(s.cacheBytes) : '',
      n.disk ? formatBytes(n.disk.free) : '',
      n.gpus.map((g) => `${(g.usedMiB / 1024).toFixed(1)}/${(g.totalMiB / 1024).toFixed(0)}G`).join(' '),
      n.healthy ? 'ok' : n.problems.join('; '),
    ];
  });
  const out = [
    table(
      [
        'rank',
        'host',
        'spark',
        'container',
        'since',
        'restarts',
        'health',
        'hit',
        'p50/p99 µs',
        'reads/s',
        'cache',
        'free',
        'gpu mem',
        'status',
      ],
      rows,
    ),
  ];
  for (const n of r.nodes)
    if (n.container?.tail?.length)
      out.push(
        `[${n.rank} ${n.host}] ${n.container.name} ${stateOf(n)}, its last lines:`,
        ...n.container.tail.map((l) => `  ${l}`),
      );
  const bad = r.nodes.filter((n) => !n.healthy).length;
  out.push(
    `${r.nodes.length - bad} of ${r.nodes.length} node(s) healthy; * head${r.healthUrl ? ` (${r.healthUrl})` : ''}; free space of ${r.packDir}; this machine runs spark ${r.local}`,
  );
  return out.join('\n');
}

function request(recipe: string | undefined, f: StatusFlags): StatusRequest {
  const req: StatusRequest = { cluster: f.cluster };
  if (recipe !== undefined) req.recipe = recipe;
  if (f.name !== undefined) req.namePrefix = f.name;
  if (f.healthUrl !== undefined) req.healthUrl = f.healthUrl;
  if (f.packDir !== undefined) req.packDir = f.packDir;
  if (f.sparkBin !== undefined) req.sparkBin = f.sparkBin;
  return req;
}

export async function runStatus(req: StatusRequest, io: Io): Promise<CommandResult> {
  const report = await collectStatus(await statusTarget(req, io), io);
  return { json: report, text: formatStatus(report), exitCode: report.healthy ? 0 : 1 };
}

/** Redraws every `seconds` until interrupted; never returns normally. */
async function watch(req: StatusRequest, seconds: number, io: Io): Promise<never> {
  const target = await statusTarget(req, io);
  for (;;) {
    const report = await collectStatus(target, io);
    io.stdout(`\x1b[H\x1b[2J${new Date().toISOString()}  every ${seconds}s (Ctrl-C ends)\n${formatStatus(report)}\n`);
    await new Promise((r) => setTimeout(r, seconds * 1000));
  }
}

export function statusCommand(ctx: CliContext): Command {
  return new Command('status')
    .description(
      "every node of a cluster at once: spark, the launch's container, the head's /health, engine-library stats, disk, GPU memory",
    )
    .argument('[recipe]', "the launch's recipe: the head's /health at its port")
    .requiredOption('--cluster <file>', 'cluster file: the nodes, in rank order')
    .option('--name <prefix>', "the launch's container name prefix (as given to spark launch --name)")
    .option('--health-url <url>', "the URL to probe instead of the recipe's http://<head>:<port>/health")
    .option('--pack-dir <dir>', 'the directory whose free space is shown', DEFAULT_PACK_DIR)
    .option('--spark-bin <path>', 'spark on the nodes (default SPARK_REMOTE_BIN, else spark)')
    .option('--watch <seconds>', 'redraw every so many seconds until Ctrl-C')
    .option(
      '--json',
      'one JSON document: {cluster, local, healthUrl?, packDir, healthy, nodes: [{rank, host, reachable, error?, spark?, container?: {name, state, startedAt, restarts, exitCode, finishedAt, tail?}, containerError?, stats?: {lib, hitRate, p50Us, p99Us, readsPerS, cacheBytes, line}, disk?: {free, size}, gpus: [{usedMiB, totalMiB}], head, health?, healthy, problems}]}',
    )
    .addHelpText(
      'after',
      `
One ssh round trip per node, all at once. A node is healthy when it answers, runs the spark of
this machine (and of most nodes), its container runs, and (the head) /health answers 200.
The stats columns are the newest stats line of libengram_rows or librow_store in the
container's log (docs/engine-libs.md). Exit 1 when any node is not healthy.

Examples:
  spark status --cluster recipes/clusters/4node-switch.toml recipes/dsv41-overlay.toml
  spark status --cluster recipes/clusters/4node-switch.toml --watch 5`,
    )
    .action(async (recipe: string | undefined, f: StatusFlags) => {
      const req = request(recipe, f);
      if (f.watch !== undefined) await watch(req, Math.max(1, parseSeconds(f.watch, '--watch')), ctx.io);
      ctx.emit(await runStatus(req, ctx.io), Boolean(f.json));
    });
}
