// `spark fanout install FILE --cluster C`: one bundle on every node of a cluster at once
// (docs/cluster-ops.md).
import { Command } from 'commander';
import type { CliContext } from './context.js';
import { SparkError } from '../errors/errors.js';
import type { CommandResult, Io } from '../terminal/io.js';
import { formatDuration } from '../launch/health.js';
import { table } from '../terminal/format.js';
import {
  DEFAULT_LIB_DIR,
  describePlan,
  runInstall,
  type InstallReport,
  type InstallRequest,
} from '../bundle/install.js';

interface InstallFlags {
  cluster: string;
  libDir: string;
  prefix?: string;
  binDir?: string;
  dryRun?: boolean;
  json?: boolean;
}

export function installSummary(report: InstallReport): string {
  const rows = report.nodes.map((o) => [
    o.rank,
    o.host,
    o.status,
    o.version ?? '',
    o.previous === undefined ? '' : o.previous || '(none)',
    formatDuration(o.seconds * 1000),
    o.error ?? '',
  ]);
  const ok = report.nodes.filter((o) => o.status === 'installed').length;
  return `${table(['rank', 'host', 'install', 'version', 'previous', 'time', 'error'], rows)}\n${ok} of ${report.nodes.length} node(s) run spark ${report.bundle.version}`;
}

export async function runFanoutInstall(req: InstallRequest, io: Io): Promise<CommandResult> {
  const report = await runInstall(req, io);
  if (report.dryRun) return { json: report, text: describePlan(report, req), exitCode: 0 };
  const failed = report.nodes.filter((o) => o.status === 'failed');
  if (failed.length > 0) {
    io.stderr(installSummary(report) + '\n');
    const list = failed.map((o) => `node ${o.rank} (${o.host}): ${o.error}`).join('; ');
    throw new SparkError(
      'E_NODE_FAILED',
      `install failed on ${failed.length} of ${report.nodes.length} node(s): ${list}`,
      {
        nodes: report.nodes,
      },
    );
  }
  return { json: report, text: installSummary(report), exitCode: 0 };
}

export function installCommand(ctx: CliContext): Command {
  return new Command('install')
    .description('install a bundle (spark bundle) on every node at once: checked, switched atomically, on PATH')
    .argument('<bundle>', 'the file spark bundle wrote')
    .requiredOption('--cluster <file>', 'cluster file: the nodes, in rank order')
    .option(
      '--lib-dir <dir>',
      'where the engine libraries go on each node (the host path recipes mount)',
      DEFAULT_LIB_DIR,
    )
    .option('--prefix <dir>', 'the install root on each node (versions/, current)', '~/.local/share/spark')
    .option('--bin-dir <dir>', 'where the spark link goes on each node', '~/.local/bin')
    .option('--dry-run', 'print the plan; contact no node')
    .option(
      '--json',
      'one JSON document: {bundle: {path, bytes, sha256, version, commit, arch}, cluster, dir, libDir, dryRun, nodes: [{rank, host, status, version?, previous?, addon?, seconds, error?}]}',
    )
    .addHelpText(
      'after',
      `
Each node receives the bundle through ssh (stdin of sh -c on the node), checks its size and
sha256, unpacks it into <prefix>/versions/<version>-<commit>-<arch>, checks every file against
the manifest, runs the new spark --version and loads its addon, copies libengram_rows.so and
librow_store.so to --lib-dir (checked by sha256), then points <prefix>/current at the new
version (a new link renamed over the old) and links <bin-dir>/spark to it. A node where any
step fails keeps its previous version and says why. Needs Node >= 20 on the nodes, nothing else
(no compiler, no network). Exit 3 naming the nodes that failed.

Examples:
  spark fanout install spark-arm64.tgz --cluster recipes/clusters/4node-switch.toml --dry-run
  spark fanout install spark-arm64.tgz --cluster recipes/clusters/4node-switch.toml`,
    )
    .action(async (bundle: string, f: InstallFlags) => {
      const home = (v: string | undefined, d: string) => (v === undefined || v === d ? undefined : v);
      const req: InstallRequest = { bundle, cluster: f.cluster, libDir: f.libDir };
      const prefix = home(f.prefix, '~/.local/share/spark');
      const binDir = home(f.binDir, '~/.local/bin');
      if (prefix !== undefined) req.prefix = prefix;
      if (binDir !== undefined) req.binDir = binDir;
      if (f.dryRun) req.dryRun = true;
      ctx.emit(await runFanoutInstall(req, ctx.io), Boolean(f.json));
    });
}
