// Packed node-local Engram shards: room on the local disk to write this rank's pack, and a
// pack that belongs to this rank, world and engine.
import { existsSync, statfsSync } from 'node:fs';
import { dirname } from 'node:path';
import { ENGINES, type Engine } from '../../recipes/index.js';
import { formatBytes } from '../../format.js';
import { defineRule, finding, whereEnv, whereNode } from '../rule.js';
import { checkManifest } from '../../engram/pack-manifest-check.js';
import { readLocalDir } from '../../engram/local-dir.js';
import { isPackDir, isSnapshotPath, revisionOf } from '../sources.js';
import type { PreflightContext } from '../types.js';
import { expectedEngramRows } from './snapshot.js';

/** Header block in front of each packed data file (contract: packed directory format 1). */
const PACK_HEADER_BYTES = 4096;

/** Where this node's pack lives: --pack-dir, else SPARK_ENGRAM_DIR's host path through an extra_mount. */
export function packTarget(ctx: PreflightContext): { host: string; from: string } | undefined {
  if (ctx.packDir !== undefined) return { host: ctx.packDir, from: '--pack-dir' };
  const v = ctx.env.get('SPARK_ENGRAM_DIR');
  const mapped = v ? ctx.toHost(v.value) : undefined;
  if (!v || !mapped || mapped.via.kind !== 'extra_mount' || isSnapshotPath(mapped.host)) return undefined;
  return { host: mapped.host, from: whereEnv(v) };
}

/** Bytes of one rank's dense pack: the largest floor share of each table, rows of D + D/32 bytes. */
export function packBytesPerRank(rowsPerLayer: Iterable<number>, dim: number, world: number): number {
  let total = 0;
  for (const rows of rowsPerLayer) total += Math.ceil(rows / world) * (dim + dim / 32) + PACK_HEADER_BYTES;
  return total;
}

/** Free bytes for an unprivileged writer at `path`, or at its nearest existing ancestor. */
export function freeBytes(path: string): number {
  let p = path;
  while (!existsSync(p) && dirname(p) !== p) p = dirname(p);
  const s = statfsSync(p);
  return s.bavail * s.bsize;
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
    const target = packTarget(ctx);
    if (!target) return [];
    if (isPackDir(target.host)) return []; // already packed: pack.manifest checks it
    const config = await ctx.modelConfig();
    const rows = config ? expectedEngramRows(config) : undefined;
    if (!config?.engram || !rows) return { skip: 'no config.json with Engram keys: pass --snapshot DIR' };
    const need = packBytesPerRank(rows.values(), config.engram.headDim, ctx.world);
    const free = freeBytes(target.host);
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
    const target = packTarget(ctx);
    if (!target || !isPackDir(target.host)) return [];
    let local: Awaited<ReturnType<typeof readLocalDir>>;
    try {
      // The same strict reader the row store and verify use.
      local = await readLocalDir(target.host);
    } catch (err) {
      return [finding(this, { message: (err as Error).message, where: target.host })];
    }
    if (local.kind !== 'packed') return [];
    const { manifestPath: path, manifest: m } = local;
    const problems = checkManifest(m);
    if (m.world !== ctx.world) problems.push(`world ${JSON.stringify(m.world)}, the recipe runs ${ctx.world} ranks`);
    if (ctx.node && ctx.node.rank !== null && m.rank !== ctx.node.rank) {
      problems.push(`rank ${JSON.stringify(m.rank)}, this is ${whereNode(ctx)}`);
    }
    const split = ENGINE_SPLIT[ctx.recipe.engine];
    if (m.split !== split) problems.push(`split ${JSON.stringify(m.split)}, ${ctx.recipe.engine} splits by ${split}`);
    const src = ctx.snapshotSource();
    const want = src ? revisionOf(src.dir) : undefined;
    if (want && m.source.revision !== undefined && m.source.revision !== want) {
      problems.push(`source revision ${m.source.revision}, the model snapshot is ${want}`);
    }
    return problems.map((p) => finding(this, { message: `${path}: ${p}`, where: path }));
  },
});
