// Node-local Engram copies on each node: room on the local disk to write this rank's copy, and
// a copy (a sparse copy the overlay reads, or a dense/page pack) that belongs to this rank,
// world, engine and snapshot. The copy is read on the node (facts/collect.ts, or rebuilt here
// from the sh probe's answer) by the readers the row store, verify and the wrapper use.
import { type Engine } from '../../recipes/index.js';
import { formatBytes } from '../../terminal/format.js';
import { defineRule, envSourceName, finding, whereEnv, whereNode } from '../../preflight-api/rule.js';
import { formatEngramRows, parseEngramRows } from '../../engram/ranges.js';
import type { LocalCopy } from '../../engram/layer-source.js';
import { revisionOfSnapshotDir } from '../../engram/hf-cache.js';
import { dirKind, hasCopy, packTarget } from '../../preflight-api/node-paths.js';
import type { PreflightContext } from '../../preflight-api/types.js';
import { expectedEngramRows, snapshotRows } from '../../preflight-api/rows.js';

/** Header block in front of each packed data file (contract: packed directory format 1). */
const PACK_HEADER_BYTES = 4096;

/** The copy target, unless it is a full snapshot (then the rows come from SPARK_ENGRAM_ROWS, not a manifest). */
function usablePackTarget(ctx: PreflightContext): { host: string; from: string } | undefined {
  const target = packTarget(ctx);
  if (!target) return undefined;
  return !target.given && dirKind(ctx, target.host) === 'snapshot' ? undefined : target;
}

/** Bytes of one rank's dense pack: the largest floor share of each table, rows of D + D/32 bytes. */
export function packBytesPerRank(rowsPerLayer: Iterable<number>, dim: number, world: number): number {
  let total = 0;
  for (const rows of rowsPerLayer) total += Math.ceil(rows / world) * (dim + dim / 32) + PACK_HEADER_BYTES;
  return total;
}

export const freeSpace = defineRule({
  id: 'pack.free-space',
  title: "the node-local disk has room for this rank's packed Engram shard",
  families: ['dsv41'],
  severity: 'error',
  scope: 'local-node',
  evidence:
    "One rank's share of both tables is 47.2 GiB with 4 ranks and ~63-68 GiB with 3 (docs/engram-tables.md; recipes/docker-images/mia-tp4/.env.example, " +
    '"~68 GiB/node"); a pack that runs out of space wastes the time it took.',
  fix: 'free space on that disk, or pack to another local disk and mount that instead',
  async check(ctx) {
    const target = usablePackTarget(ctx);
    if (!target) return [];
    if (hasCopy(ctx, target.host)) return []; // already made: pack.manifest checks it
    const config = await ctx.modelConfig();
    const rows = config ? expectedEngramRows(config) : undefined;
    if (!config?.engram || !rows) return { skip: 'no config.json with Engram keys: pass --snapshot DIR' };
    const need = packBytesPerRank(rows.values(), config.engram.headDim, ctx.world);
    const free = ctx.view!.free(target.host);
    if (free === undefined) return { skip: `the free space at ${target.host} is unknown on ${whereNode(ctx)}` };
    if (free >= need) return [];
    return [
      finding(this, {
        message: `${target.host} has ${formatBytes(free)} free; one rank's pack of ${ctx.world} needs ${formatBytes(need)}`,
        where: `${target.from} (${whereNode(ctx)})`,
      }),
    ];
  },
});

/** The split rule an engine's overlay uses: SGLang floor, vLLM whole heads. */
export const ENGINE_SPLIT: Record<Engine, string> = { sglang: 'floor', vllm: 'heads' };

/** How the copy's rank and world are known, for messages. */
const known = (c: LocalCopy): string => (c.identity?.from === 'inferred' ? ' (inferred from its ranges)' : '');

/** What is wrong with the copy for this node, recipe and snapshot, one line each. */
async function copyProblems(
  ctx: PreflightContext,
  c: LocalCopy,
  manifestProblems: string[],
): Promise<{ errors: string[]; warnings: string[]; notes: string[] }> {
  const errors: string[] = [...manifestProblems];
  const warnings: string[] = [];
  const notes: string[] = [];
  const id = c.identity;
  if (id) {
    if (id.world !== ctx.world) errors.push(`world ${id.world}${known(c)}, the recipe runs ${ctx.world} ranks`);
    if (ctx.node && ctx.node.rank !== null && id.rank !== ctx.node.rank)
      errors.push(`rank ${id.rank}${known(c)}, this is ${whereNode(ctx)}`);
    const split = ENGINE_SPLIT[ctx.recipe.engine];
    if (id.split !== split && id.from === 'manifest') {
      const what = `split ${JSON.stringify(id.split)}, ${ctx.recipe.engine} splits by ${split}`;
      // The overlay tiles any partition, so a sparse copy of another split only needs every node's to match.
      if (c.kind === 'packed') errors.push(what);
      else warnings.push(`${what}: every node's copy must be made with the same split, or the ranks do not tile`);
    }
  } else {
    notes.push(
      `rank and world unknown: ${c.unknown}; the overlay checks at start-up that the ranks' copies tile every table`,
    );
  }
  const rows = await snapshotRows(ctx);
  const missing = rows ? [...rows.keys()].filter((l) => !c.layers.some((x) => x.layer === l)) : [];
  if (missing.length > 0)
    errors.push(
      `no range for Engram layer ${missing.join(', ')} of the snapshot: the overlay serves only the layers its manifest names`,
    );
  for (const l of c.layers) {
    const want = rows?.get(l.layer);
    if (rows && want === undefined)
      errors.push(`layer ${l.layer} is not an Engram layer of the snapshot the engine loads`);
    else if (want !== undefined && want !== l.rows)
      errors.push(
        `layer ${l.layer}'s table has ${l.rows} rows, the snapshot's has ${want}: it was made from another checkpoint`,
      );
  }
  const snap = ctx.view!.snapshot();
  const src = ctx.snapshotSource();
  const want = snap && 'facts' in snap ? snap.facts.revision : src ? revisionOfSnapshotDir(src.dir) : undefined;
  if (want && c.revision !== undefined && c.revision !== want)
    errors.push(`source revision ${c.revision}, the model snapshot is ${want}`);
  return { errors, warnings, notes };
}

/**
 * A SPARK_ENGRAM_ROWS in the environment that is not the copy's ranges: the overlay reads it
 * even with a manifest (hostnode mode warns, staged mode raises) and serves only the copy's rows.
 */
function presetProblem(ctx: PreflightContext, c: LocalCopy): { message: string; where: string } | undefined {
  const v = ctx.env.get('SPARK_ENGRAM_ROWS');
  if (!v) return undefined;
  const value = formatEngramRows(c.layers);
  let given: string;
  try {
    given = formatEngramRows(parseEngramRows(v.value));
  } catch {
    return undefined; // engram.ranges-tile reports a value that does not parse
  }
  if (given === value) return undefined;
  return {
    message:
      `SPARK_ENGRAM_ROWS='${v.value}' (set in ${envSourceName(v)}) disagrees with ${c.manifestPath}, which gives ${value}: ` +
      "the overlay serves only the copy's rows, warns in hostnode mode and refuses to start in staged mode",
    where: whereEnv(v),
  };
}

export const manifest = defineRule({
  id: 'pack.manifest',
  title:
    "the node-local copy on this node was made for this node's rank, the recipe's world size, the engine's split and the snapshot",
  families: ['dsv41'],
  severity: 'error',
  also: "warn for a sparse copy of another split; info when a copy made by the overlay's own tool matches no single rank's share",
  scope: 'local-node',
  evidence:
    'With a node-local copy the ranges come from its engram-local.json (docs/engram-tables.md); a copy made for another rank or world ' +
    'serves the wrong rows, a copy of another checkpoint the wrong table, and the overlay reads SPARK_ENGRAM_ROWS even ' +
    'when a manifest exists (hostnode mode warns on disagreement, staged mode raises).',
  fix: "make this node's copy: spark pack <snapshot> --out DIR --rank R --world W (or spark fanout pack for every node)",
  async check(ctx) {
    const target = usablePackTarget(ctx);
    if (!target || !hasCopy(ctx, target.host)) return [];
    // Read on the node by the same readers the row store, verify and the wrapper use.
    const read = ctx.view!.copy();
    if (!read) return [];
    if ('error' in read) return [finding(this, { message: read.error.message, where: read.error.path ?? target.host })];
    const c = read.copy;
    const p = await copyProblems(ctx, c, read.manifestProblems);
    const out = [
      ...p.errors.map((m) => finding(this, { message: `${c.manifestPath}: ${m}`, where: c.manifestPath })),
      ...p.warnings.map((m) =>
        finding(this, { message: `${c.manifestPath}: ${m}`, where: c.manifestPath, severity: 'warn' }),
      ),
      ...p.notes.map((m) =>
        finding(this, { message: `${c.manifestPath}: ${m}`, where: c.manifestPath, severity: 'info' }),
      ),
    ];
    const preset = presetProblem(ctx, c);
    if (preset)
      out.push(
        finding(this, { ...preset, fix: `remove SPARK_ENGRAM_ROWS, or set it to ${formatEngramRows(c.layers)}` }),
      );
    return out;
  },
});
