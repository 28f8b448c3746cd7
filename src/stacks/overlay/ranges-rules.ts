// Engram row ranges: every rank must own a slice of each table such that the slices tile
// [0, N) exactly per layer (docs/engram-tables.md).
import { basename } from 'node:path';
import { checkTiling, dashEntries, formatEngramRows, parseEngramRows, type LayerRange } from '../../engram/ranges.js';
import type { EnvValue } from '../../recipes/index.js';
import { defineRule, envSourceName, finding, whereEnv, whereNode } from '../../preflight-api/rule.js';
import { dirKind, underHfCache, wrapperOnNode } from '../../preflight-api/node-paths.js';
import type { PreflightContext } from '../../preflight-api/types.js';
import { scriptSetsEngramRows } from './wrapper-script.js';
import { expectedEngramRows } from '../../preflight-api/rows.js';
import { shJoin } from '../../remote/shell.js';

/**
 * Why one SPARK_ENGRAM_ROWS value given to all `world` ranks does not tile. Every rank reads the
 * same environment from a recipe, cluster or env file, so all ranks get the same ranges: with
 * more than one rank they overlap (a full range on every rank double-counts every row in the
 * all-reduce), and with one rank anything short of the full table leaves rows no rank owns.
 * `tables` gives N per layer (from config.json); without it only the grammar and overlaps show.
 */
export function sharedRowsProblem(
  spec: string,
  world: number,
  tables?: { layer: number; rows: number }[],
): string | undefined {
  let ranges: LayerRange[];
  try {
    ranges = parseEngramRows(spec);
  } catch (err) {
    return (err as Error).message;
  }
  const report = checkTiling(
    Array.from({ length: world }, () => ranges),
    tables,
  );
  if (report.ok) return undefined;
  const same =
    world > 1 ? `gives all ${world} ranks the same rows, so they cannot tile [0, N): ` : 'does not tile [0, N): ';
  return `SPARK_ENGRAM_ROWS='${spec}' ${same}${report.problem!.message}`;
}

/** Each Engram table's row count from config.json, when the node's snapshot gives it. */
export async function engramTables(ctx: PreflightContext): Promise<{ layer: number; rows: number }[] | undefined> {
  const config = await ctx.modelConfig().catch(() => undefined);
  const rows = config ? expectedEngramRows(config) : undefined;
  return rows ? [...rows].map(([layer, n]) => ({ layer, rows: n })) : undefined;
}

/**
 * The right value for a SPARK_ENGRAM_ROWS that every rank shares: with one rank, every row of
 * each table (when the tables are known); with more, none at all (each rank needs its own).
 */
export function sharedRowsFix(world: number, tables: { layer: number; rows: number }[] | undefined): string {
  if (world > 1) return PER_RANK_FIX;
  if (!tables)
    return 'with one rank, write every row of each table (layer:0:N per layer, N from config.json), or drop SPARK_ENGRAM_ROWS';
  const full = formatEngramRows(tables.map(({ layer, rows }) => ({ layer, start: 0, end: rows })));
  return `write SPARK_ENGRAM_ROWS = "${full}" (one rank owns every row of each table), or drop it`;
}

const PER_RANK_FIX =
  'remove SPARK_ENGRAM_ROWS from the shared environment; set it per rank (a wrapper computing it from NODE_RANK, ' +
  "`spark engram-ranges --rank R --world W`) or serve from node-local copies whose manifest holds each rank's range";

export const rangesTile = defineRule({
  id: 'engram.ranges-tile',
  title: "the ranks' Engram row ranges tile each table exactly",
  families: ['dsv41'],
  severity: 'error',
  scope: 'files',
  evidence:
    "The 4x overlay refuses to start unless the ranks' ranges tile [0, N) per layer; a full range on every rank " +
    'double-counts rows in the reduce (recipes/dsv41-flash-4x-sglang-aiden16).',
  fix: `${PER_RANK_FIX}; with one rank, every row of each table`,
  async check(ctx) {
    const v = ctx.env.get('SPARK_ENGRAM_ROWS');
    if (!v) return [];
    const tables = await engramTables(ctx);
    const problem = sharedRowsProblem(v.value, ctx.world, tables);
    if (!problem) return [];
    return [
      finding(this, {
        message: `${problem} (set in ${envSourceName(v)})`,
        where: whereEnv(v),
        fix: sharedRowsFix(ctx.world, tables),
      }),
    ];
  },
});

function rowsSource(
  ctx: PreflightContext,
  dir: EnvValue,
): { skip: string } | { problem: string; fix?: string } | undefined {
  const mapped = ctx.toHost(dir.value);
  if (!mapped) {
    if (underHfCache(dir.value) && !ctx.cluster?.hfCache) {
      return { skip: 'SPARK_ENGRAM_DIR is under the Hugging Face cache mount: pass --cluster (hf_cache) to check it' };
    }
    return undefined; // snapshot.engram-dir reports an unmounted directory
  }
  const view = ctx.view!;
  const kind = dirKind(ctx, mapped.host);
  if (kind === 'copy') return undefined; // a node-local copy: its manifest holds this rank's ranges
  if (kind !== 'snapshot') return undefined; // nothing there yet: snapshot.engram-dir reports it
  const wrapper = wrapperOnNode(ctx);
  if (wrapper) {
    const text = wrapper.host === undefined ? undefined : view.text(wrapper.host);
    if (text === undefined) {
      return {
        skip: `the ranges come from the entrypoint ${wrapper.script}, which is not readable on ${whereNode(ctx)}`,
      };
    }
    if (scriptSetsEngramRows(text)) return undefined;
    return {
      problem: `SPARK_ENGRAM_DIR is a full snapshot and the entrypoint ${basename(wrapper.script)} (${wrapper.host}) never sets SPARK_ENGRAM_ROWS`,
      fix: 'export SPARK_ENGRAM_ROWS from NODE_RANK in the wrapper (spark engram-ranges --rank "$NODE_RANK" --world W)',
    };
  }
  return {
    problem:
      `SPARK_ENGRAM_DIR is a full snapshot and nothing gives this rank its Engram rows: no SPARK_ENGRAM_ROWS, ` +
      `no packed manifest, no wrapper entrypoint; the overlay refuses to start`,
  };
}

function parses(value: string): boolean {
  try {
    parseEngramRows(value);
    return true;
  } catch {
    return false;
  }
}

/**
 * A SPARK_ENGRAM_ROWS value in the old layer:lo-hi form baked into the entrypoint script, as an
 * older `spark wrapper --emit-sh` wrote it: the overlay rejects it at install, on every rank.
 */
function staleScript(ctx: PreflightContext): { script: string; host: string; value: string } | undefined {
  const wrapper = wrapperOnNode(ctx);
  // A script missing on the node is mounts.host-path's finding.
  const text = wrapper?.host === undefined ? undefined : ctx.view!.text(wrapper.host);
  if (text === undefined) return undefined;
  // Any quoted value that parses as SPARK_ENGRAM_ROWS and has an entry in the old form.
  for (const m of text.matchAll(/'([\d:,-]+)'/g)) {
    if (dashEntries(m[1]!).length > 0 && parses(m[1]!))
      return { script: wrapper!.script, host: wrapper!.host!, value: m[1]! };
  }
  return undefined;
}

export const rangesSource = defineRule({
  id: 'engram.ranges-source',
  title: 'with more than one rank, each rank gets its Engram rows from somewhere',
  families: ['dsv41'],
  severity: 'error',
  scope: 'local-node',
  evidence:
    'A full snapshot has no engram-local.json, so per-rank ranges must come from SPARK_ENGRAM_ROWS, which the ' +
    'aiden16 wrapper computes from NODE_RANK (recipes/dsv41-flash-4x-sglang-aiden16); a node-local copy carries them in its manifest. ' +
    'An entrypoint generated by an older spark wrapper --emit-sh exports layer:lo-hi, which the overlay rejects.',
  fix: 'serve from node-local copies (spark pack), or run a wrapper that exports SPARK_ENGRAM_ROWS per rank (spark wrapper --emit-sh)',
  check(ctx) {
    const dir = ctx.env.get('SPARK_ENGRAM_DIR');
    const stale = dir ? staleScript(ctx) : undefined;
    if (stale) {
      return [
        finding(this, {
          message:
            `the entrypoint ${basename(stale.script)} (${stale.host}) exports SPARK_ENGRAM_ROWS values in the old layer:lo-hi form ` +
            `('${stale.value}'), which the overlay rejects at install on every rank`,
          where: stale.host,
          fix: `regenerate it: spark wrapper --emit-sh --snapshot <snapshot> ${shJoin(['--world', String(ctx.world), '--out', stale.host])}`,
        }),
      ];
    }
    if (!dir || ctx.world <= 1 || ctx.env.has('SPARK_ENGRAM_ROWS')) return [];
    const r = rowsSource(ctx, dir);
    if (!r) return [];
    if ('skip' in r) return r;
    const fx = r.fix === undefined ? {} : { fix: r.fix };
    return [finding(this, { message: r.problem, where: whereEnv(dir), ...fx })];
  },
});
