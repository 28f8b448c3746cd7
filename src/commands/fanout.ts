// `spark fanout pack|verify`: node-local work on every node of a cluster at once over ssh, each
// node with its own rank (docs/launch.md).
import { Command } from 'commander';
import type { CliContext } from './context.js';
import { SparkError } from '../errors/errors.js';
import type { CommandResult, Io } from '../terminal/io.js';
import { formatDuration, runNodeTasks, type NodeTaskReport, type NodeTaskRequest } from '../launch/index.js';
import { formatBytes, table } from '../terminal/format.js';
import { parseCount, parseRate, parseSeconds } from './options.js';
import { installCommand } from './fanout-install.js';

interface FanoutFlags {
  cluster?: string;
  out?: string;
  split?: string;
  threads?: string;
  layout?: string;
  rateLimit?: string;
  dropCache?: boolean;
  source?: string;
  full?: boolean;
  sample?: string;
  sparkBin?: string;
  progress?: string;
  json?: boolean;
  env?: string;
}

export function summary(report: NodeTaskReport): string {
  const rows = report.nodes.map((o) => {
    const res = o.result as { bytes?: unknown } | null;
    const bytes = typeof res?.bytes === 'number' ? formatBytes(res.bytes) : '';
    return [o.rank, o.host, o.status, bytes, formatDuration(o.seconds * 1000), o.error ?? ''];
  });
  const ok = report.nodes.filter((o) => o.status === 'ok').length;
  return `${table(['rank', 'host', report.kind, 'bytes', 'time', 'error'], rows)}\n${ok} of ${report.nodes.length} node(s) ok`;
}

export async function runFanout(req: NodeTaskRequest, io: Io): Promise<CommandResult> {
  const report = await runNodeTasks(req, io);
  const failed = report.nodes.filter((o) => o.status === 'failed');
  if (failed.length > 0) {
    io.stderr(summary(report) + '\n');
    const list = failed.map((o) => `node ${o.rank} (${o.host}): ${o.error}`).join('; ');
    throw new SparkError(
      'E_NODE_FAILED',
      `${req.kind} failed on ${failed.length} of ${report.nodes.length} node(s): ${list}`,
      {
        nodes: report.nodes,
      },
    );
  }
  return { json: report, text: summary(report), exitCode: report.nodes.some((o) => o.status === 'mismatch') ? 1 : 0 };
}

function request(kind: NodeTaskRequest['kind'], path: string | undefined, f: FanoutFlags): NodeTaskRequest {
  if (f.cluster === undefined) throw new SparkError('E_USAGE', `spark fanout ${kind} needs --cluster FILE`);
  const req: NodeTaskRequest = {
    kind,
    cluster: f.cluster,
    progressEveryMs: parseSeconds(f.progress ?? '30', '--progress') * 1000,
  };
  if (path !== undefined) req.path = path;
  if (f.env !== undefined) req.envFile = f.env;
  if (f.out !== undefined) req.out = f.out;
  if (f.split !== undefined) req.split = f.split;
  if (f.threads !== undefined) req.threads = parseCount(f.threads, '--threads', 1, 4096);
  if (f.layout !== undefined) req.layout = f.layout;
  if (f.rateLimit !== undefined) req.rateLimit = parseRate(f.rateLimit);
  if (f.dropCache === false) req.keepCache = true;
  if (f.source !== undefined) req.source = f.source;
  if (f.full) req.full = true;
  if (f.sample !== undefined) req.sample = parseCount(f.sample, '--sample', 1);
  if (f.sparkBin !== undefined) req.sparkBin = f.sparkBin;
  return req;
}

export function fanoutCommand(ctx: CliContext): Command {
  const common = (cmd: Command) =>
    cmd
      .requiredOption('--cluster <file>', 'cluster file: the nodes, in rank order')
      .option('--spark-bin <path>', 'spark on the nodes (default SPARK_REMOTE_BIN, else spark)')
      .option('--progress <seconds>', 'a progress line this often (terminal only; 0 = none)', '30')
      .option(
        '--json',
        'one JSON document on stdout: {kind, cluster, world, nodes: [{rank, host, status, exitCode, seconds, result, error?}]}',
      )
      .option(
        '--env <file>',
        "the Mia stack's .env: each node's directory from its ENGRAM_DIR (a node's [nodes.env] may override it); its TP_SIZE must be the node count",
      );
  const pack = common(
    new Command('pack')
      .description('spark pack on every node at once: node r packs rank r of W = the number of nodes')
      .argument('<snapshot>', 'the snapshot directory as the nodes see it (e.g. on the NAS)')
      .option('--out <dir>', 'the output directory on each node (node-local disk; default: ENGRAM_DIR of --env)')
      .option('--split <rule>', 'floor (SGLang), front or heads (vLLM)')
      .option('--threads <n>', 'reader threads on each node')
      .option(
        '--layout <layout>',
        "sparse (default: what the overlay reads), dense (the Mia stack's packed shards) or page",
      )
      .option('--rate-limit <MB/s>', 'each node reads at most this many MB/s from the snapshot (they share one NAS)')
      .option('--no-drop-cache', "keep the snapshot's pages cached on the nodes (dropped behind the copy by default)"),
  )
    .addHelpText(
      'after',
      `
Runs "spark pack <snapshot> --out DIR --rank r --world W --json" on node r over ssh, all nodes at
once; each node's output streams with a [rank host] prefix, then a summary. Exit 3 naming the
nodes that failed; the others finish (a pack resumes where it stopped when re-run).
For the Mia stack: --layout dense writes its packed shards; --env .env puts them in its ENGRAM_DIR
(mounted at /engram, which DSV41_PACKED_DIR names) on every node.

Examples:
  spark fanout pack /mnt/nas/ai/huggingface/hub/models--deepseek-ai--DeepSeek-V4.1-Flash/snapshots/dba1be0a40aa45a94ad051997016db3960a90277 \\
    --out /var/lib/spark/engram --cluster recipes/clusters/4node-switch.toml
  spark fanout pack /mnt/nas/ai/huggingface/hub/models--deepseek-ai--DeepSeek-V4.1-Flash/snapshots/dba1be0a40aa45a94ad051997016db3960a90277 \\
    --layout dense --env .env --cluster recipes/clusters/4node-switch.toml`,
    )
    .action(async (snapshot: string, f: FanoutFlags) => {
      ctx.emit(await runFanout(request('pack', snapshot, f), ctx.io), Boolean(f.json));
    });
  const verify = common(
    new Command('verify')
      .description('spark verify on every node at once (exit 1 when a node reports a mismatch)')
      .argument('[packdir]', 'the packed directory on each node (default: ENGRAM_DIR of --env)')
      .option('--source <snapshot>', 'also compare rows against the source snapshot (as the nodes see it)')
      .option('--full', 'check every row against the source')
      .option('--sample <n>', 'check n random rows per layer against the source'),
  )
    .addHelpText(
      'after',
      `
Example:
  spark fanout verify /var/lib/spark/engram --cluster recipes/clusters/4node-switch.toml --json`,
    )
    .action(async (packdir: string | undefined, f: FanoutFlags) => {
      ctx.emit(await runFanout(request('verify', packdir, f), ctx.io), Boolean(f.json));
    });
  return new Command('fanout')
    .description('run node-local work (install, pack, verify) on every node of a cluster at once over ssh')
    .addHelpText(
      'after',
      `
Examples:
  spark fanout install spark-arm64.tgz --cluster recipes/clusters/4node-switch.toml
  spark fanout pack <snapshot> --out /var/lib/spark/engram --cluster recipes/clusters/4node-switch.toml
  spark fanout verify /var/lib/spark/engram --cluster recipes/clusters/4node-switch.toml`,
    )
    .addCommand(installCommand(ctx))
    .addCommand(pack)
    .addCommand(verify);
}
