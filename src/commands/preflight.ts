// `spark preflight <recipe.toml>`: the checks that catch, in under a second, what would
// otherwise fail minutes into a boot (rules: docs/preflight.md).
import { Command, Option } from 'commander';
import type { CliContext } from './context.js';
import type { CommandResult, Io } from '../terminal/io.js';
import { formatReport, runPreflight, type PreflightOptions } from '../preflight/index.js';
import { usageError } from '../errors/errors.js';
import { clusterSpec } from '../recipes/index.js';
import { fromEnv, parseCount, parseSeconds } from './options.js';

interface PreflightFlags {
  cluster?: string;
  local?: boolean;
  sparkBin?: string;
  nodeTimeout?: string;
  nodeFacts?: string;
  env?: string;
  snapshot?: string;
  nodeRank?: string;
  sysfs?: string;
  packDir?: string;
  only?: string;
  skip?: string;
  json?: boolean;
}

function list(text: string | undefined): string[] | undefined {
  return text === undefined
    ? undefined
    : text
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');
}

export function parsePreflightFlags(recipe: string, f: PreflightFlags, io: Io): PreflightOptions {
  const options: PreflightOptions = { recipe };
  if (f.cluster !== undefined) options.cluster = f.cluster;
  if (f.env !== undefined) options.env = f.env;
  if (f.snapshot !== undefined) options.snapshot = f.snapshot;
  if (f.sysfs !== undefined) options.sysfs = f.sysfs;
  if (f.local) options.local = true;
  if (f.sparkBin !== undefined) options.sparkBin = f.sparkBin;
  if (f.nodeTimeout !== undefined) options.nodeTimeoutMs = parseSeconds(f.nodeTimeout, '--node-timeout', 0.001) * 1000;
  if (f.packDir !== undefined) options.packDir = f.packDir;
  const rank = fromEnv(f.nodeRank, io.env, 'NODE_RANK');
  if (rank !== undefined) {
    options.nodeRankFrom = f.nodeRank !== undefined ? '--node-rank' : 'NODE_RANK';
    options.nodeRank = parseCount(rank, options.nodeRankFrom, 0, 63);
  }
  const only = list(f.only);
  const skip = list(f.skip);
  if (only) options.only = only;
  if (skip) options.skip = skip;
  return options;
}

/** `--node-facts REQUEST`: this machine's answer to a launching machine's request (JSON only). */
export async function runNodeFacts(request: string, io: Io): Promise<CommandResult> {
  const { answerFactsRequest } = await import('../preflight/facts/answer.js');
  const facts = await answerFactsRequest(request, io.env);
  return { json: facts, text: JSON.stringify(facts), exitCode: 0 };
}

export async function runPreflightCommand(given: PreflightOptions, io: Io): Promise<CommandResult> {
  // No --cluster: sparkrun's default cluster, when it names one.
  const cluster = await clusterSpec(given.cluster, io.env);
  const options = cluster === undefined ? given : { ...given, cluster };
  const report = await runPreflight(options, io);
  return { json: report, text: formatReport(report, io.color), exitCode: report.counts.error > 0 ? 1 : 0 };
}

export function preflightCommand(ctx: CliContext): Command {
  return new Command('preflight')
    .description('check a recipe, its cluster and env files, the snapshot and every node before a boot')
    .argument('[recipe.toml]', 'the recipe to check')
    .option(
      '--cluster <file|name>',
      "cluster file (nodes: host, fabric_addr, dist_addr, env; head, hf_cache, dist_port, [nccl]), or a sparkrun cluster file or name (default: sparkrun's .default cluster, if any); every node is checked over ssh",
    )
    .option('--local', 'with --cluster: check this machine only (as one of the nodes), not every node over ssh')
    .option(
      '--spark-bin <path>',
      'spark on the nodes, which answers for its node (default SPARK_REMOTE_BIN, else spark; without it a sh probe does)',
    )
    .option('--node-timeout <seconds>', 'the most one node may take to answer', '30')
    .option('--env <file>', 'an env file for the containers (wins over the recipe [env])')
    .option('--snapshot <dir>', 'the model snapshot to check (default: from SPARK_ENGRAM_DIR or hf_cache)')
    .option(
      '--node-rank <r>',
      "this machine's rank in the cluster file; implies --local (default: NODE_RANK, else matched by hostname)",
    )
    .option('--sysfs <root>', 'sysfs root for HCA and interface checks, on every node', '/sys')
    .option('--pack-dir <dir>', "host directory of this node's packed Engram shard (default: SPARK_ENGRAM_DIR's mount)")
    .option('--only <rules>', 'run only these rules (comma-separated ids or families, e.g. fabric,engram.ranges-tile)')
    .option('--skip <rules>', 'skip these rules (comma-separated ids or families)')
    .option(
      '--json',
      'print the report as JSON: {findings: [{rule, severity, message, where, fix, node?}], nodes, ...}',
    )
    .addOption(
      new Option('--node-facts <request>', "answer a launching machine's facts request (used over ssh)").hideHelp(),
    )
    .addHelpText(
      'after',
      `
With --cluster, every node that runs the recipe is asked over ssh, all at once (spark on the node
answers when installed, else a self-contained sh probe), and the node rules run on each node's
answers; findings name their node. A node that does not answer is one error; the others are
still checked. Exit 1 when any finding is an error; warnings and notes alone exit 0. Rules that
cannot run say so under NOT CHECKED.

Examples:
  spark preflight recipes/deepseek-v4-flash-eugr-agent/recipe.toml --json
  spark preflight recipes/dsv41-flash-4x-sglang-packed/recipe.toml --cluster recipes/clusters/4node-switch.toml
  spark preflight recipes/dsv41-flash-4x-sglang-aiden16/recipe.toml --cluster recipes/clusters/4node-switch.toml --local --only parallel,rendezvous
  spark preflight recipes/dsv41-flash-4x-sglang-aiden16/recipe.toml --env recipes/docker-images/mia-tp4/.env.example --skip mounts`,
    )
    .action(async (recipe: string | undefined, flags: PreflightFlags) => {
      if (flags.nodeFacts !== undefined) {
        ctx.emit(await runNodeFacts(flags.nodeFacts, ctx.io), true);
        return;
      }
      // The argument is optional only for --node-facts; otherwise say what commander would.
      if (recipe === undefined) throw usageError("missing required argument 'recipe.toml'");
      ctx.emit(await runPreflightCommand(parsePreflightFlags(recipe, flags, ctx.io), ctx.io), Boolean(flags.json));
    });
}
