// spark wrapper -- <engine argv...>: the container entrypoint. Sets SPARK_ENGRAM_ROWS and
// B12X_ROCE_GID_INDEX for this rank, logs one line, then becomes the engine (execve), so the
// engine gets docker's signals and its exit status is the container's.
// spark wrapper --emit-sh --snapshot DIR --world W: the same as a POSIX sh script.
import { writeNewFile } from '../files/new-file.js';
import { Command } from 'commander';
import type { CliContext } from './context.js';
import type { CommandResult, Io } from '../terminal/io.js';
import { usageError } from '../errors/errors.js';
import { sourceAllRanges } from '../engram/layer-source.js';
import { loadLayerSource } from '../stacks/local-copy.js';
import { parseSplit } from '../engram/ranges.js';
import { planWrapper, type LayerLoader, type WrapperPlan } from '../wrapper/plan.js';
import { fromEnv, parseCount } from './options.js';

export interface WrapperFlags {
  split?: string;
  sysfs?: string;
  skipGid?: boolean;
  dryRun?: boolean;
  emitSh?: boolean;
  snapshot?: string;
  world?: string;
  out?: string;
}

/** Replaces the process; returns only by throwing. Tests pass a stand-in. */
export type Exec = (argv: string[], env: NodeJS.ProcessEnv) => never;

function planJson(plan: WrapperPlan): unknown {
  return {
    rank: plan.rank ?? null,
    world: plan.world ?? null,
    split: plan.split,
    exported: plan.exported,
    argv: plan.argv,
    log: plan.log,
  };
}

export async function runWrapper(
  engineArgv: string[],
  flags: WrapperFlags,
  io: Io,
  exec: Exec,
  load: LayerLoader = loadLayerSource,
): Promise<CommandResult> {
  const plan = await planWrapper(
    engineArgv,
    io.env,
    {
      ...(flags.split !== undefined ? { split: flags.split } : {}),
      ...(flags.sysfs !== undefined ? { sysfs: flags.sysfs } : {}),
      skipGid: Boolean(flags.skipGid) || io.env.SPARK_SKIP_GID === '1',
    },
    load,
  );
  if (flags.dryRun) {
    const text = [
      ...Object.entries(plan.exported).map(([k, v]) => `export ${k}='${v}'`),
      `exec ${plan.argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ')}`,
    ].join('\n');
    return { json: planJson(plan), text, exitCode: 0 };
  }
  io.stderr(plan.log + '\n');
  return exec(plan.argv, plan.env);
}

export async function runEmitSh(
  flags: WrapperFlags,
  io: Io,
  load: LayerLoader = loadLayerSource,
): Promise<CommandResult> {
  const snapshot = fromEnv(flags.snapshot, io.env, 'SPARK_ENGRAM_DIR');
  if (snapshot === undefined) throw usageError('--emit-sh needs --snapshot DIR (or SPARK_ENGRAM_DIR)');
  const worldText = fromEnv(flags.world, io.env, 'SPARK_WORLD_SIZE');
  if (worldText === undefined) throw usageError('--emit-sh needs --world W (or SPARK_WORLD_SIZE)');
  const world = parseCount(worldText, '--world', 1, 1 << 20);
  const splitText = flags.split ?? fromEnv(undefined, io.env, 'SPARK_ENGRAM_SPLIT');
  const source = await load(snapshot, parseSplit(splitText, '--split'));
  // A node-local copy brings its own split (and must agree with --world).
  const split = source.copy?.identity?.split ?? parseSplit(splitText, '--split');
  const ranks = sourceAllRanges(source, world, split, splitText !== undefined);
  const { emitWrapperSh } = await import('../wrapper/emit-sh.js');
  const script = emitWrapperSh({ world, split, source: source.path, ranks });
  if (flags.out === undefined) return { json: { script }, text: script.replace(/\n$/, ''), exitCode: 0 };
  writeNewFile(flags.out, script, 0o755);
  return {
    json: { out: flags.out, world, split, bytes: Buffer.byteLength(script) },
    text: `wrote ${flags.out} (${world} ranks, ${split} split)`,
    exitCode: 0,
  };
}

async function nativeExec(): Promise<Exec> {
  const { execEngine } = await import('../addon/exec.js');
  return execEngine;
}

export function wrapperCommand(ctx: CliContext): Command {
  return new Command('wrapper')
    .description(
      'container entrypoint: set SPARK_ENGRAM_ROWS and B12X_ROCE_GID_INDEX for this rank, then exec the engine',
    )
    .argument('[engine...]', 'the engine command and its arguments (after --)')
    .option('--split <rule>', 'floor (SGLang), front or heads (vLLM); default SPARK_ENGRAM_SPLIT, else floor')
    .option('--sysfs <root>', 'sysfs mount for the GID scan (default SPARK_SYSFS, else /sys)')
    .option('--skip-gid', 'do not detect or check B12X_ROCE_GID_INDEX (also SPARK_SKIP_GID=1)')
    .option('--dry-run', 'print what would be exported and run, without running it')
    .option('--emit-sh', 'print a self-contained POSIX sh entrypoint instead (needs --snapshot and --world)')
    .option(
      '--snapshot <dir>',
      "with --emit-sh: the snapshot (or one rank's copy) to compute every rank's ranges from (default SPARK_ENGRAM_DIR)",
    )
    .option('--world <w>', 'with --emit-sh: the number of ranks (default SPARK_WORLD_SIZE)')
    .option('--out <file>', 'with --emit-sh: write the script here (mode 755) instead of stdout')
    .option('--json', 'with --dry-run or --emit-sh: one JSON document on stdout')
    .passThroughOptions()
    .addHelpText(
      'after',
      `
Reads NODE_RANK (else the engine's --node-rank), the world size (SPARK_WORLD_SIZE, else the
engine's --nnodes or --tp) and SPARK_ENGRAM_DIR. SPARK_ENGRAM_ROWS is written as the overlay
reads it (layer:lo:hi). When SPARK_ENGRAM_DIR holds a sparse copy (or a pack), its manifest's
ranges are exported, and a copy made for another rank or world is refused (exit 2). A
SPARK_ENGRAM_ROWS already set (either grammar) is checked and refused when wrong. HCAs come from B12X_ROCE_HCA, else NCCL_IB_HCA; a
B12X_ROCE_GID_INDEX already set is checked on every HCA. The engine replaces this process
(execve): as PID 1 it receives docker stop's SIGTERM itself and its exit status is the
container's.

Examples:
  entrypoint = ["spark", "wrapper", "--", "python3", "-m", "sglang.launch_server"]
  spark wrapper --emit-sh --snapshot /models/dsv41 --world 4 --out /srv/spark-wrapper.sh`,
    )
    .action(async (engine: string[], opts: WrapperFlags & { json?: boolean }) => {
      if (opts.emitSh) {
        if (engine.length > 0)
          throw usageError('--emit-sh takes no engine command (the script execs its own arguments)');
        ctx.emit(await runEmitSh(opts, ctx.io), Boolean(opts.json));
        return;
      }
      const exec = opts.dryRun
        ? ((() => {
            throw new Error('unreachable');
          }) as Exec)
        : await nativeExec();
      ctx.emit(await runWrapper(engine, opts, ctx.io, exec), Boolean(opts.json));
    });
}
