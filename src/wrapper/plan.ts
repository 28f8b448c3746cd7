// What the container entrypoint decides before it becomes the engine: this rank's Engram rows
// (SPARK_ENGRAM_ROWS) and the RoCE GID index of its HCAs (B12X_ROCE_GID_INDEX). A wrong value
// found here costs a second; found by the engine it costs a ten-minute boot.
import { SparkError, usageError } from '../errors/errors.js';
import { formatEngramRows, parseEngramRows, parseSplit, rankRanges, type RankLayerRange } from '../engram/ranges.js';
import { sourceRankRanges, type LayerSource } from '../engram/layer-source.js';
import { describeIdentity } from '../engram/copy-ranges.js';
import { gidPolicy, scanGids } from '../net/gid.js';
import { SPLIT_RULES, type SplitRule } from '../domain/split-rule.js';
import { decideRank, decideWorld } from './engine-argv.js';
import { copyNoun } from '../stacks/registry.js';

export interface WrapperOptions {
  split?: string;
  sysfs?: string;
  skipGid?: boolean;
}

/** Opens the Engram row source at `dir` (a snapshot, a sparse copy or a pack). */
export type LayerLoader = (dir: string, split: SplitRule) => Promise<LayerSource>;

export interface WrapperPlan {
  argv: string[];
  /** The engine's whole environment. */
  env: NodeJS.ProcessEnv;
  /** The variables the wrapper set (or confirmed). */
  exported: Record<string, string>;
  rank?: number;
  world?: number;
  split: SplitRule;
  gidIndex?: number;
  /** The one line logged before the engine starts. */
  log: string;
}

const nonEmpty = (v: string | undefined): string | undefined => (v !== undefined && v !== '' ? v : undefined);

interface RowsDecision {
  value?: string;
  rank?: number;
  world?: number;
  note: string;
}

async function decideRows(
  argv: string[],
  env: NodeJS.ProcessEnv,
  split: SplitRule,
  splitGiven: boolean,
  load: LayerLoader,
): Promise<RowsDecision> {
  const dir = nonEmpty(env.SPARK_ENGRAM_DIR);
  const preset = nonEmpty(env.SPARK_ENGRAM_ROWS);
  if (!dir) {
    if (!preset) return { note: 'no SPARK_ENGRAM_DIR: SPARK_ENGRAM_ROWS not set' };
    // Kept, but in the overlay's grammar: a value in the old L:lo-hi form would stop it at install.
    const value = formatEngramRows(parseEngramRows(preset));
    const how = value === preset ? 'kept as given' : `rewritten from '${preset}' in the overlay's grammar`;
    return { value, note: `SPARK_ENGRAM_ROWS=${value} ${how} (no SPARK_ENGRAM_DIR to check it against)` };
  }
  const rank = decideRank(env, argv);
  const world = decideWorld(env, argv);
  if (!rank)
    throw usageError(
      'NODE_RANK is not set and the engine has no --node-rank: the wrapper cannot tell which rows this rank owns',
    );
  if (!world)
    throw usageError('the world size is unknown: set SPARK_WORLD_SIZE or pass --nnodes (or --tp) to the engine');
  if (rank.value >= world.value) {
    throw usageError(`rank ${rank.value} (${rank.from}) is outside the world of ${world.value} ranks (${world.from})`);
  }
  const source = await load(dir, split);
  const mine = sourceRankRanges(source, rank.value, world.value, split, splitGiven);
  const value = formatEngramRows(mine);
  const where = `rank ${rank.value} of ${world.value} (${rank.from}, ${world.from})`;
  if (preset && formatEngramRows(parseEngramRows(preset)) !== value) {
    if (source.copy) refuseAgainstCopy(preset, value, source);
    refusePreset(preset, value, mine, source, rank.value, world.value, split);
  }
  const verb = preset ? (preset === value ? 'checked' : "checked and rewritten in the overlay's grammar") : 'set';
  return {
    value,
    rank: rank.value,
    world: world.value,
    note: `${where}: SPARK_ENGRAM_ROWS=${value} ${verb} (${origin(source, split)})`,
  };
}

/** Where the value came from, for the log line. */
function origin(source: LayerSource, split: SplitRule): string {
  const c = source.copy;
  if (!c) return `${split} split of ${source.path}`;
  const what = copyNoun(c.kind);
  return `from the manifest of the ${what} ${source.path}, ${describeIdentity(c)}`;
}

/**
 * A node-local copy's manifest is what the overlay serves (only its rows exist), and the overlay
 * reads SPARK_ENGRAM_ROWS too: hostnode mode warns when they differ, staged mode raises. So a
 * preset value must be the manifest's.
 */
function refuseAgainstCopy(preset: string, expected: string, source: LayerSource): never {
  throw new SparkError(
    'E_CHECK_FAILED',
    `SPARK_ENGRAM_ROWS='${preset}' disagrees with ${source.copy!.manifestPath}, which gives ${expected} (only those rows exist in the copy); ` +
      'unset it to let the wrapper set it',
  );
}

/** A preset SPARK_ENGRAM_ROWS that is not this rank's range: say what it is instead, then refuse. */
function refusePreset(
  preset: string,
  expected: string,
  mine: RankLayerRange[],
  source: LayerSource,
  rank: number,
  world: number,
  split: SplitRule,
): never {
  const given = parseEngramRows(preset);
  let why = '';
  const tables = mine.map(({ layer, rows }) => ({ layer, rows }));
  const full =
    given.length === tables.length &&
    given.every((g, i) => g.layer === tables[i]!.layer && g.start === 0 && g.end === tables[i]!.rows);
  if (full && world > 1) {
    why = '; it is the full table, and a full range on every rank double-counts rows in the all-reduce';
  } else {
    for (const other of SPLIT_RULES) {
      if (other === split) continue;
      try {
        if (formatEngramRows(rankRanges(source.layers, rank, world, other)) === formatEngramRows(given)) {
          why = `; it is the ${other} split (pass --split ${other} or set SPARK_ENGRAM_SPLIT=${other} if every rank uses it)`;
        }
      } catch {
        // the heads split may be unavailable (no config.json): nothing to compare against
      }
    }
    if (!why) {
      const diff = mine.find((m) => {
        const g = given.find((x) => x.layer === m.layer);
        return !g || g.start !== m.start || g.end !== m.end;
      });
      const g = diff && given.find((x) => x.layer === diff.layer);
      const extra = given.find((x) => !mine.some((m) => m.layer === x.layer));
      if (diff)
        why = `; layer ${diff.layer}: ${g ? `given [${g.start}, ${g.end})` : 'missing'}, expected [${diff.start}, ${diff.end})`;
      else if (extra) why = `; layer ${extra.layer} is not an Engram layer of ${source.path}`;
    }
  }
  throw new SparkError(
    'E_CHECK_FAILED',
    `SPARK_ENGRAM_ROWS='${preset}' is not rank ${rank} of ${world}'s ${split} range ${expected}${why}; unset it to let the wrapper set it`,
  );
}

interface GidDecision {
  index?: number;
  note: string;
}

function decideGid(env: NodeJS.ProcessEnv, sysfs: string, skip: boolean): GidDecision {
  if (skip) return { note: 'GID detection skipped (--skip-gid)' };
  const fromB12x = nonEmpty(env.B12X_ROCE_HCA);
  const hcas = fromB12x ?? nonEmpty(env.NCCL_IB_HCA);
  if (hcas === undefined) return { note: 'no B12X_ROCE_HCA or NCCL_IB_HCA: B12X_ROCE_GID_INDEX not set' };
  const variable = fromB12x ? 'B12X_ROCE_HCA' : 'NCCL_IB_HCA';
  const presetText = env.B12X_ROCE_GID_INDEX;
  let checkIndex: number | undefined;
  if (presetText !== undefined && presetText !== '') {
    if (!/^\d+$/.test(presetText.trim()))
      throw usageError(`B12X_ROCE_GID_INDEX must be a whole number, got '${presetText}'`);
    checkIndex = Number(presetText.trim());
  }
  const report = scanGids({ sysfs, hcas, policy: gidPolicy(env), ...(checkIndex !== undefined ? { checkIndex } : {}) });
  if (!report.ok) {
    const what =
      checkIndex !== undefined ? `B12X_ROCE_GID_INDEX=${checkIndex} is not usable` : 'no single RoCE GID index';
    throw new SparkError('E_CHECK_FAILED', `${what} for ${variable}=${hcas}: ${report.problems.join('; ')}`);
  }
  const ports = report.hcas.map((h) => `${h.hca}:${h.port}`).join(', ');
  const emptyNote = presetText === '' ? '; it was set but empty, which parses as 0' : '';
  const verb = checkIndex !== undefined ? 'checked' : 'set';
  return { index: report.index!, note: `B12X_ROCE_GID_INDEX=${report.index} ${verb} (${ports}${emptyNote})` };
}

/** Decides everything without side effects other than reading the row source and sysfs. */
export async function planWrapper(
  engineArgv: string[],
  env: NodeJS.ProcessEnv,
  options: WrapperOptions,
  load: LayerLoader,
): Promise<WrapperPlan> {
  if (engineArgv.length === 0 || engineArgv[0] === '') {
    throw usageError('no engine command: spark wrapper -- python3 -m sglang.launch_server ...');
  }
  const split = parseSplit(
    options.split ?? nonEmpty(env.SPARK_ENGRAM_SPLIT),
    options.split ? '--split' : 'SPARK_ENGRAM_SPLIT',
  );
  const splitGiven = options.split !== undefined || nonEmpty(env.SPARK_ENGRAM_SPLIT) !== undefined;
  const rows = await decideRows(engineArgv, env, split, splitGiven, load);
  const gid = decideGid(env, options.sysfs ?? nonEmpty(env.SPARK_SYSFS) ?? '/sys', Boolean(options.skipGid));
  const exported: Record<string, string> = {};
  if (rows.value !== undefined) exported.SPARK_ENGRAM_ROWS = rows.value;
  if (gid.index !== undefined) exported.B12X_ROCE_GID_INDEX = String(gid.index);
  const command =
    engineArgv.slice(0, 3).join(' ') + (engineArgv.length > 3 ? ` ... (${engineArgv.length - 3} more args)` : '');
  const plan: WrapperPlan = {
    argv: engineArgv,
    env: { ...env, ...exported },
    exported,
    split,
    log: `spark wrapper: ${rows.note}; ${gid.note}; exec ${command}`,
  };
  if (rows.rank !== undefined) plan.rank = rows.rank;
  if (rows.world !== undefined) plan.world = rows.world;
  if (gid.index !== undefined) plan.gidIndex = gid.index;
  return plan;
}
