// Packed node-local Engram shards: room on the local disk to write this rank's pack, and a
// pack that belongs to this rank, world and engine.
import { join } from 'node:path';
import { ENGINES, type Engine } from '../../recipes/index.js';
import { formatBytes } from '../../format.js';
import { defineRule, finding, whereNode } from '../rule.js';
import { checkManifest } from '../../engram/pack-manifest-check.js';
import { MANIFEST_NAME, parsePackedManifest, type PackedManifest } from '../../engram/packed-manifest.js';
import { revisionOf, type SnapshotFacts } from '../sources.js';
import { dirKind, packTarget } from '../node-paths.js';
import type { ModelConfig } from '../../engram/config.js';
import type { PreflightContext } from '../types.js';
import { expectedEngramRows } from './snapshot.js';

/** Header block in front of each packed data file (contract: packed directory format 1). */
const PACK_HEADER_BYTES = 4096;

/** Bytes of one rank's dense pack: the largest floor share of each table, rows of D + D/32 bytes. */
export function packBytesPerRank(rowsPerLayer: Iterable<number>, dim: number, world: number): number {
  let total = 0;
  for (const rows of rowsPerLayer) total += Math.ceil(rows / world) * (dim + dim / 32) + PACK_HEADER_BYTES;
  return total;
}

export const freeSpace = defineRule({
  id: 'pack.free-space',
  title: "the node-local disk has room for this rank's packed Engram shard",
  engines: ENGINES,
  families: ['dsv41'],
  severity: 'error',
  scope: 'local-node',
  evidence:
    "One rank's share of both tables is 47.2 GiB with 4 ranks and ~63-68 GiB with 3 (domain.md; seed: mia-tp4 env, " +
    '"~68 GiB/node"); a pack that runs out of space wastes the time it took.',
  fix: 'free space on that disk, or pack to another local disk and mount that instead',
  async check(ctx) {
    const target = usablePackTarget(ctx);
    if (!target) return [];
    if (ctx.view!.path(join(target.host, MANIFEST_NAME)).kind === 'file') return []; // already packed: pack.manifest checks it
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

/** The pack target, unless it is a snapshot (then the rows come from SPARK_ENGRAM_ROWS, not a manifest). */
function usablePackTarget(ctx: PreflightContext): { host: string; from: string } | undefined {
  const target = packTarget(ctx);
  if (!target) return undefined;
  return !target.given && dirKind(ctx.view!, target.host) === 'snapshot' ? undefined : target;
}

/**
 * A copy's tables against the checkpoint it claims to be a part of: every layer config.json
 * names, with the row count config.json promises and the snapshot's table holds.
 */
export function rowProblems(m: PackedManifest, config: ModelConfig | undefined, snapshot: SnapshotFacts | undefined): string[] {
  const problems: string[] = [];
  const expected = config ? expectedEngramRows(config) : undefined;
  for (const [layer, rows] of expected ?? []) {
    const l = m.layers.find((x) => x.layer === layer);
    if (!l) problems.push(`no layer ${layer}, which config.json lists in engram_layer_ids`);
    else if (l.rows !== rows) problems.push(`layer ${layer} has ${l.rows} rows, config.json (${config!.path}) says ${rows}`);
  }
  for (const t of snapshot?.engram ?? []) {
    const l = m.layers.find((x) => x.layer === t.layer);
    if (l && l.rows !== t.rows && l.rows === expected?.get(t.layer)) continue; // config and snapshot disagree: snapshot.engram-tables
    if (l && l.rows !== t.rows) problems.push(`layer ${t.layer} has ${l.rows} rows, the snapshot's table has ${t.rows}`);
  }
  return [...new Set(problems)];
}

/** The split rule an engine's overlay uses: SGLang floor, vLLM whole heads. */
export const ENGINE_SPLIT: Record<Engine, string> = { sglang: 'floor', vllm: 'heads' };

export const manifest = defineRule({
  id: 'pack.manifest',
  title: "the pack on this node was made for this node's rank, the recipe's world size and the engine's split",
  engines: ENGINES,
  families: ['dsv41'],
  severity: 'error',
  scope: 'local-node',
  evidence:
    "With packed shards the ranges come from engram-local.json (domain.md); a pack made for another rank or world " +
    "serves the wrong rows, and SGLang splits by floor while vLLM splits by whole heads.",
  fix: 'repack: spark pack <snapshot> --out DIR --rank R --world W --split floor|heads',
  async check(ctx) {
    const target = usablePackTarget(ctx);
    if (!target) return [];
    const path = join(target.host, MANIFEST_NAME);
    const text = ctx.view!.text(path);
    if (text === undefined) return [];
    let m: PackedManifest;
    try {
      // The same strict reader the row store and verify use.
      m = parsePackedManifest(text, path);
    } catch (err) {
      return [finding(this, { message: (err as Error).message, where: path })];
    }
    const problems = checkManifest(m);
    if (m.world !== ctx.world) problems.push(`world ${JSON.stringify(m.world)}, the recipe runs ${ctx.world} ranks`);
    if (ctx.node && ctx.node.rank !== null && m.rank !== ctx.node.rank) {
      problems.push(`rank ${JSON.stringify(m.rank)}, this is ${whereNode(ctx)}`);
    }
    const split = ENGINE_SPLIT[ctx.recipe.engine];
    if (m.split !== split) problems.push(`split ${JSON.stringify(m.split)}, ${ctx.recipe.engine} splits by ${split}`);
    const snap = ctx.view!.snapshot();
    const src = ctx.snapshotSource();
    const want = snap && 'facts' in snap ? snap.facts.revision : src ? revisionOf(src.dir) : undefined;
    if (want && m.source.revision !== undefined && m.source.revision !== want) {
      problems.push(`source revision ${m.source.revision}, the model snapshot is ${want}`);
    }
    problems.push(...rowProblems(m, await ctx.modelConfig().catch(() => undefined), snap && 'facts' in snap ? snap.facts : undefined));
    return problems.map((p) => finding(this, { message: `${path}: ${p}`, where: path }));
  },
});
