// spark engram-ranges: the rows each rank owns per Engram layer (SPARK_ENGRAM_ROWS), every
// rank's (--all), or a check that given values tile every table exactly (--check).
import { Command } from 'commander';
import { resolve } from 'node:path';
import type { CliContext } from './context.js';
import { reportCheckFailure, type CommandResult, type Io } from '../terminal/io.js';
import { usageError } from '../errors/errors.js';
import type { LayerSource } from '../engram/layer-source.js';
import type { RankLayerRange, TilingReport } from '../engram/ranges.js';
import type { SplitRule } from '../domain/split-rule.js';
import { fromEnv, parseCount, rankShareFlags } from './options.js';
import { compilePattern } from './snapshot-args.js';

export interface EngramRangesOptions {
  snapshot?: string;
  rank?: string;
  world?: string;
  split?: string;
  format?: string;
  all?: boolean;
  check?: string[];
  rows?: string;
  config?: string;
  weightPattern?: string;
  scalePattern?: string;
  json?: boolean;
}

type Format = 'env' | 'shell' | 'json';

function parseFormat(text: string | undefined, json: boolean): Format {
  if (json) return 'json';
  const f = text ?? 'env';
  if (f !== 'env' && f !== 'shell' && f !== 'json') throw usageError(`--format must be env, shell or json, got '${f}'`);
  return f;
}

function parsePattern(text: string | undefined, flag: string): RegExp | undefined {
  return text === undefined ? undefined : compilePattern(flag, text);
}

const shq = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/** Where the row counts come from: --rows, else the snapshot or node-local copy (flag or SPARK_ENGRAM_DIR). */
async function source(
  o: EngramRangesOptions,
  io: Io,
  split: SplitRule,
  required: boolean,
): Promise<LayerSource | undefined> {
  const { parseLayerRows, subTablesFromDir } = await import('../engram/layer-source.js');
  const { loadLayerSource } = await import('../stacks/local-copy.js');
  if (o.rows !== undefined) {
    const layers = parseLayerRows(o.rows);
    if (split !== 'heads') return { kind: 'explicit', path: '--rows', layers };
    if (o.config === undefined)
      throw usageError('--split heads with --rows needs --config (the directory holding config.json)');
    return { kind: 'explicit', path: '--rows', layers: await subTablesFromDir(layers, resolve(io.cwd, o.config)) };
  }
  const path = fromEnv(o.snapshot, io.env, 'SPARK_ENGRAM_DIR');
  if (path === undefined) {
    if (!required) return undefined;
    throw usageError(
      'name the snapshot (or node-local copy): spark engram-ranges DIR, or set SPARK_ENGRAM_DIR, or give --rows',
    );
  }
  const weightPattern = parsePattern(o.weightPattern, '--weight-pattern');
  const scalePattern = parsePattern(o.scalePattern, '--scale-pattern');
  return loadLayerSource(resolve(io.cwd, path), split, {
    ...(weightPattern ? { weightPattern } : {}),
    ...(scalePattern ? { scalePattern } : {}),
  });
}

/** Every layer's verdict, one line each: a failing check names each layer that fails, not only the first. */
function checkText(report: TilingReport, src: LayerSource | undefined): string {
  if (!report.ok)
    return report.layers.map((l) => l.problem?.message ?? `layer ${l.layer}: ok (${l.rows} rows)`).join('\n');
  const layers = report.layers.map((l) => `layer ${l.layer} (${l.rows} rows)`).join(', ');
  const note = src ? '' : ' (no snapshot given: each table taken to end at the largest end named)';
  return `ok: the ${report.world} ranks tile ${layers} exactly${note}`;
}

async function runCheck(o: EngramRangesOptions, io: Io, texts: string[]): Promise<CommandResult> {
  const { checkTiling, parseRankValues } = await import('../engram/ranges.js');
  const path = texts.flatMap((t) => t.split(/\s+/)).find((s) => s.includes('/'));
  if (path !== undefined)
    throw usageError(`--check value '${path}' looks like a path: put the snapshot before --check`);
  const parsed = parseRankValues(texts);
  if (parsed.length === 0) throw usageError('--check needs one SPARK_ENGRAM_ROWS value per rank, in rank order');
  if (o.world !== undefined && parseCount(o.world, '--world', 1) !== parsed.length) {
    throw usageError(
      `--world ${o.world} but --check has ${parsed.length} values (one SPARK_ENGRAM_ROWS per rank, in rank order)`,
    );
  }
  const src = await source(o, io, 'floor', false);
  const report = checkTiling(parsed, src?.layers);
  if (!report.ok) {
    // The report (stdout) has each layer's problem; the one error line names them all once.
    const failing = report.layers.filter((l) => l.problem);
    const json = Boolean(o.json) || o.format === 'json';
    const message = json
      ? failing.map((l) => l.problem!.message).join('; ')
      : `the ranges do not tile layer${failing.length > 1 ? 's' : ''} ${failing.map((l) => l.layer).join(', ')} (each layer's problem is on stdout)`;
    reportCheckFailure(io, json, 'engram-ranges', message);
  }
  return { json: report, text: checkText(report, src), exitCode: report.ok ? 0 : 1 };
}

function formatAll(
  ranks: RankLayerRange[][],
  format: Format,
  world: number,
  split: SplitRule,
  value: (r: RankLayerRange[]) => string,
): CommandResult {
  const json = { world, split, ranks: ranks.map((layers, rank) => ({ rank, layers })) };
  if (format === 'json') return { json, text: '', exitCode: 0 };
  if (format === 'env') return { json, text: ranks.map(value).join('\n'), exitCode: 0 };
  const lines = [
    'case "$NODE_RANK" in',
    ...ranks.map((r, rank) => `  ${rank}) export SPARK_ENGRAM_ROWS=${shq(value(r))} ;;`),
  ];
  lines.push(`  *) echo "NODE_RANK must be 0-${world - 1}, got '$NODE_RANK'" >&2; exit 2 ;;`, 'esac');
  return { json, text: lines.join('\n'), exitCode: 0 };
}

/** What the JSON output says of a node-local copy: who it is for, and how that is known. */
function copyJson(src: LayerSource): Record<string, unknown> | undefined {
  const c = src.copy;
  if (!c) return undefined;
  const base = { kind: c.kind, manifest: c.manifestPath };
  return c.identity ? { ...base, ...c.identity } : { ...base, unknown: c.unknown };
}

export async function runEngramRanges(o: EngramRangesOptions, io: Io): Promise<CommandResult> {
  const format = parseFormat(o.format, Boolean(o.json));
  if (o.check !== undefined) return runCheck(o, io, o.check);
  const { formatEngramRows, parseSplit } = await import('../engram/ranges.js');
  const { sourceAllRanges, sourceRankRanges } = await import('../engram/layer-source.js');
  const splitText = o.split ?? fromEnv(undefined, io.env, 'SPARK_ENGRAM_SPLIT');
  let split = parseSplit(splitText, o.split !== undefined ? '--split' : 'SPARK_ENGRAM_SPLIT');
  const src = (await source(o, io, split, true))!;
  // A node-local copy knows its own rank, world and split (or they are inferred, or unknown);
  // flags and variables must agree with what is known.
  const id = src.copy?.identity;
  const copy = copyJson(src);
  // The Mia stack's shards say their rank and world by name even when their split is unknown.
  const named = id ?? src.copy?.named;
  const worldText = fromEnv(o.world, io.env, 'SPARK_WORLD_SIZE') ?? named?.world.toString();
  const rankText = fromEnv(o.rank, io.env, 'NODE_RANK') ?? named?.rank.toString();
  if (src.copy && !named && !o.all) {
    // Rank and world unknown: the manifest's ranges are still what the overlay serves.
    const world =
      worldText === undefined
        ? null
        : parseCount(worldText, o.world !== undefined ? '--world' : 'SPARK_WORLD_SIZE', 1, 1 << 20);
    const rank = rankText === undefined ? null : parseCount(rankText, o.rank !== undefined ? '--rank' : 'NODE_RANK', 0);
    const value = formatEngramRows(src.copy.layers);
    const json = { rank, world, split: null, layers: src.copy.layers, copy };
    return { json, text: format === 'shell' ? `export SPARK_ENGRAM_ROWS=${shq(value)}` : value, exitCode: 0 };
  }
  if (o.all && src.copy && !id) sourceAllRanges(src, 1, split, false); // says why it cannot
  if (worldText === undefined) throw usageError('--world is required (or set SPARK_WORLD_SIZE)');
  const world = parseCount(worldText, o.world !== undefined ? '--world' : 'SPARK_WORLD_SIZE', 1, 1 << 20);
  if (o.all) {
    const ranks = sourceAllRanges(src, world, split, splitText !== undefined);
    return formatAll(ranks, format, world, id?.split ?? split, formatEngramRows);
  }
  if (rankText === undefined) throw usageError('--rank is required (or set NODE_RANK), or pass --all');
  const rank = parseCount(rankText, o.rank !== undefined ? '--rank' : 'NODE_RANK', 0);
  if (rank >= world) throw usageError(`rank ${rank} is outside the world of ${world} ranks (ranks are 0-${world - 1})`);
  const layers = sourceRankRanges(src, rank, world, split, splitText !== undefined);
  split = id?.split ?? split;
  const value = formatEngramRows(layers);
  const json = { rank, world, split: src.copy && !id ? null : split, layers, ...(copy ? { copy } : {}) };
  const text = format === 'shell' ? `export SPARK_ENGRAM_ROWS=${shq(value)}` : value;
  return { json, text, exitCode: 0 };
}

export function engramRangesCommand(ctx: CliContext): Command {
  const head = new Command('engram-ranges')
    .description('the Engram rows each rank owns (SPARK_ENGRAM_ROWS), or check that given ranges tile every table')
    .argument('[snapshot]', 'snapshot, sparse copy or packed directory (default SPARK_ENGRAM_DIR)');
  return rankShareFlags(head)
    .option('--format <f>', 'env (the value, default), shell (an export line) or json')
    .option('--all', 'every rank: one value per line (env), a case block (shell), or JSON')
    .option(
      '--check <spec...>',
      "one SPARK_ENGRAM_ROWS value per rank, in rank order (or engram_partition.py's lines): exit 1 unless they tile every table",
    )
    .option('--rows <layer:n,...>', 'explicit row counts per layer instead of a snapshot')
    .option('--config <dir>', 'with --rows and --split heads: the directory holding config.json')
    .option('--weight-pattern <regex>', 'weight tensor names (one capture group: the layer)')
    .option('--scale-pattern <regex>', 'scale tensor names (one capture group: the layer)')
    .option('--json', 'same as --format json')
    .addHelpText(
      'after',
      `
Reads only the index and the headers of the shards that hold Engram tensors. Values are
written as the overlay reads them, layer:lo:hi (1:0:96001542,14:0:96004170); --check also
reads the older layer:lo-hi and the output of the overlay's engram_partition.py.
A sparse copy or pack prints its manifest's ranges.
Splits: floor [N*r/W, N*(r+1)/W); front: the first N mod W ranks get one row more;
heads: ceil(24/W) whole (order, head) sub-tables per rank, sizes from config.json.

Examples:
  spark engram-ranges /models/dsv41 --rank 1 --world 4
  spark engram-ranges /models/dsv41 --world 4 --all --format shell
  spark engram-ranges /models/dsv41 --check "$(spark engram-ranges /models/dsv41 --world 4 --all)"`,
    )
    .action(async (snapshot: string | undefined, opts: EngramRangesOptions) => {
      ctx.emit(
        await runEngramRanges({ ...opts, ...(snapshot !== undefined ? { snapshot } : {}) }, ctx.io),
        Boolean(opts.json || opts.format === 'json'),
      );
    });
}
