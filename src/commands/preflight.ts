// `spark preflight <recipe.toml>`: the checks that catch, in under a second, what would
// otherwise fail minutes into a boot (rules: docs/preflight.md).
import { Command } from 'commander';
import type { CliContext } from '../cli.js';
import type { CommandResult, Io } from '../io.js';
import { formatReport, runPreflight, type PreflightOptions } from '../preflight/index.js';
import { fromEnv, parseCount } from './options.js';

interface PreflightFlags {
  cluster?: string;
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
  return text === undefined ? undefined : text.split(',').map((s) => s.trim()).filter((s) => s !== '');
}

export function parsePreflightFlags(recipe: string, f: PreflightFlags, io: Io): PreflightOptions {
  const options: PreflightOptions = { recipe };
  if (f.cluster !== undefined) options.cluster = f.cluster;
  if (f.env !== undefined) options.env = f.env;
  if (f.snapshot !== undefined) options.snapshot = f.snapshot;
  if (f.sysfs !== undefined) options.sysfs = f.sysfs;
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

export async function runPreflightCommand(options: PreflightOptions, io: Io): Promise<CommandResult> {
  const report = await runPreflight(options, io);
  return { json: report, text: formatReport(report, io.color), exitCode: report.counts.error > 0 ? 1 : 0 };
}

export function preflightCommand(ctx: CliContext): Command {
  return new Command('preflight')
    .description('check a recipe, its cluster and env files, the snapshot and this node before a boot')
    .argument('<recipe.toml>', 'the recipe to check')
    .option('--cluster <file>', 'cluster file: nodes, head, hf_cache, dist_port, [nccl]')
    .option('--env <file>', 'an env file for the containers (wins over the recipe [env])')
    .option('--snapshot <dir>', 'the model snapshot to check (default: from SPARK_ENGRAM_DIR or hf_cache)')
    .option('--node-rank <r>', "this node's rank in the cluster file (default: NODE_RANK, else matched by hostname)")
    .option('--sysfs <root>', 'sysfs root for HCA and interface checks', '/sys')
    .option('--pack-dir <dir>', "host directory of this node's packed Engram shard (default: SPARK_ENGRAM_DIR's mount)")
    .option('--only <rules>', 'run only these rules (comma-separated ids or families, e.g. fabric,engram.ranges-tile)')
    .option('--skip <rules>', 'skip these rules (comma-separated ids or families)')
    .option('--json', 'print the report as JSON: {findings: [{rule, severity, message, where, fix, node?}], ...}')
    .addHelpText(
      'after',
      `
Exit 1 when any finding is an error; warnings and notes alone exit 0. Rules that need a snapshot
or this node's devices say so under NOT CHECKED when they cannot run.

Examples:
  spark preflight recipes/dsv41-flash-4x-sglang-packed/recipe.toml --cluster recipes/clusters/4node-switch.toml
  spark preflight recipes/deepseek-v4-flash-eugr-agent/recipe.toml --json
  spark preflight recipe.toml --env .env --snapshot /mnt/nas/ai/huggingface/hub/models--deepseek-ai--DeepSeek-V4.1-Flash/snapshots/dba1be0a40aa45a94ad051997016db3960a90277`,
    )
    .action(async (recipe: string, flags: PreflightFlags) => {
      ctx.emit(await runPreflightCommand(parsePreflightFlags(recipe, flags, ctx.io), ctx.io), Boolean(flags.json));
    });
}
