// `spark logs --cluster C`: the launch's containers' logs from every node, merged in time order
// (docs/cluster-ops.md).
import { Command } from 'commander';
import type { CliContext } from './context.js';
import { SparkError } from '../errors/errors.js';
import type { Io } from '../terminal/io.js';
import { startLogs, type LogsOutcome, type LogsRequest } from '../status/logs.js';
import { parseCount } from './options.js';

interface LogsFlags {
  cluster: string;
  rank?: string;
  since?: string;
  follow?: boolean;
  grep?: string;
  name?: string;
  timestamps?: boolean;
  json?: boolean;
}

export async function runLogs(req: LogsRequest, io: Io): Promise<LogsOutcome> {
  const run = await startLogs(req, io, io.stdout);
  // Ctrl-C ends the readers on the nodes (their stdin closes), then the command ends as usual.
  const onSignal = () => run.stop();
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const out = await run.done;
    const failed = out.nodes.filter((n) => n.error !== undefined);
    if (failed.length > 0 && !out.interrupted) {
      const list = failed.map((n) => `node ${n.rank} (${n.host}): ${n.error}`).join('; ');
      throw new SparkError('E_NODE_FAILED', `no logs from ${failed.length} of ${out.nodes.length} node(s): ${list}`, {
        nodes: out.nodes,
      });
    }
    return out;
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
}

export function logsCommand(ctx: CliContext): Command {
  return new Command('logs')
    .description("the launch's containers' logs from every node, merged in time order with [rank host] prefixes")
    .requiredOption('--cluster <file>', 'cluster file: the nodes, in rank order')
    .option('--rank <r>', 'only this node')
    .option('--since <time>', 'only lines since a time or duration (docker logs --since: 10m, 2026-12-06T14:00:00)')
    .option('--follow', 'keep printing new lines until Ctrl-C')
    .option('--grep <regex>', 'only lines matching this JavaScript regular expression')
    .option('--name <prefix>', "the launch's container name prefix (as given to spark launch --name)")
    .option('--timestamps', "keep docker's timestamp after the prefix")
    .addHelpText(
      'after',
      `
Each node runs docker logs --timestamps over ssh; the lines are merged by those timestamps and
printed as "[rank host] line" (stdout and stderr of the container together). Ctrl-C ends the
readers on every node as well: none keeps running there. Exit 3 naming the nodes whose log
could not be read (no such container, ssh failed).

Examples:
  spark logs --cluster recipes/clusters/4node-switch.toml --since 10m
  spark logs --cluster recipes/clusters/4node-switch.toml --follow --grep 'libengram_rows|ERROR'`,
    )
    .action(async (f: LogsFlags) => {
      const req: LogsRequest = { cluster: f.cluster };
      if (f.rank !== undefined) req.rank = parseCount(f.rank, '--rank');
      if (f.since !== undefined) req.since = f.since;
      if (f.follow) req.follow = true;
      if (f.grep !== undefined) req.grep = f.grep;
      if (f.name !== undefined) req.namePrefix = f.name;
      if (f.timestamps) req.timestamps = true;
      // The lines went to stdout as they came: nothing more to print (errors are thrown).
      await runLogs(req, ctx.io);
    });
}
